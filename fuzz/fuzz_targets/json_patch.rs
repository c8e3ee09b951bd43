//! JSON patch (RFC 6902) and JSON merge patch (RFC 7386) as the PATCH
//! handler decodes and applies them (`apiserver::endpoints::patch`, which
//! uses the `json-patch` crate): a patch (the first part of the input) is
//! decoded by `apimachinery::serializer::json` and applied to a document
//! (the second part); never a panic. The handler itself lives in the big
//! `apiserver` crate, so this target repeats its library calls rather
//! than linking it.
#![no_main]

use apimachinery::serializer::json;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // Where the server decodes: a thread with its stack.
    kube_fuzz::on_server_stack(|| {
        let (patch, doc) = kube_fuzz::halves(data);
        let doc: Value = serde_json::from_slice(doc).unwrap_or(Value::Null);
        if let Ok(ops) = json::decode_as::<json_patch::Patch>(patch) {
            let mut target = doc.clone();
            let _ = json_patch::patch(&mut target, &ops);
        }
        if let Ok(merge @ Value::Object(_)) = json::decode(patch) {
            let mut target = doc;
            json_patch::merge(&mut target, &merge);
        }
    });
});
