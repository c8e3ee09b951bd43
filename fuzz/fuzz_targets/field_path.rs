//! Field paths and managed fields (`structured_merge::fieldpath` and
//! `managed`, upstream's structured-merge-diff `fieldpath` and
//! `metav1.ManagedFieldsEntry`): a `fieldsV1` key parses to an element or
//! an error and a parsed element serializes back to a key that parses to
//! the same element; a `fieldsV1` document or a `managedFields` list reads
//! to a set or an error, never a panic, and a set read from `fieldsV1`
//! writes back to a document that reads to the same set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use structured_merge::fieldpath::{PathElement, Set};
use structured_merge::managed::Managed;

fuzz_target!(|data: &[u8]| {
    if let Ok(key) = std::str::from_utf8(data) {
        if let Ok(Some(element)) = PathElement::deserialize(key) {
            let printed = element.serialize();
            let again = PathElement::deserialize(&printed);
            assert_eq!(again, Ok(Some(element)), "{key:?} printed as {printed:?}");
        }
    }
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(set) = Set::from_fields_v1(&doc) {
        let written = set.to_fields_v1();
        let again = Set::from_fields_v1(&written);
        assert_eq!(again.as_ref(), Ok(&set), "fieldsV1 round trip");
    }
    if let Ok(managed) = Managed::decode(&doc) {
        let _ = managed.encode();
    }
});
