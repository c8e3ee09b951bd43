//! Field selectors (`apimachinery::fields`, upstream's
//! `apimachinery/pkg/fields`): the `fieldSelector` query syntax parses to
//! a selector or an error, never a panic; a parsed selector printed and
//! parsed again has the same requirements (their order may change, as
//! upstream's: terms are sorted by their text, and `==` prints as `=`),
//! and escaping a value then unescaping it gives the value back.
#![no_main]

use apimachinery::fields::{escape_value, unescape_value, FieldSelector};
use libfuzzer_sys::fuzz_target;

/// The requirements as text, in a fixed order.
fn terms(selector: &FieldSelector) -> Vec<String> {
    let mut terms: Vec<String> = selector
        .requirements()
        .iter()
        .map(ToString::to_string)
        .collect();
    terms.sort();
    terms
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(selector) = FieldSelector::parse(text) {
        let printed = selector.to_string();
        let again = FieldSelector::parse(&printed)
            .unwrap_or_else(|e| panic!("printed selector {printed:?} does not parse: {e:?}"));
        assert_eq!(
            terms(&again),
            terms(&selector),
            "{text:?} printed as {printed:?}"
        );
    }
    let _ = unescape_value(text);
    assert_eq!(
        unescape_value(&escape_value(text)).ok().as_deref(),
        Some(text)
    );
});
