//! Label selectors (`apimachinery::labels`, upstream's
//! `apimachinery/pkg/labels`): the `labelSelector` query syntax parses to
//! a selector or an error, never a panic, and a parsed selector printed
//! and parsed again is the same selector. The same bytes as a
//! `metav1.LabelSelector` object convert and validate without panicking.
#![no_main]

use apimachinery::field_errors::Path;
use apimachinery::labels::Selector;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(selector) = Selector::parse(text) {
            let printed = selector.to_string();
            let again = Selector::parse(&printed)
                .unwrap_or_else(|e| panic!("printed selector {printed:?} does not parse: {e:?}"));
            assert_eq!(again, selector, "{text:?} printed as {printed:?}");
        }
    }
    if let Ok(object) = serde_json::from_slice::<Value>(data) {
        let _ = Selector::from_label_selector(Some(&object));
        let _ = apimachinery::validation::selectors::validate_label_selector(
            Some(&object),
            Default::default(),
            &Path::new("selector"),
        );
    }
});
