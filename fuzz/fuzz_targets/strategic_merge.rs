//! Strategic merge patch (`structured_merge::strategic`, upstream's
//! `strategicpatch`): a patch (the first JSON document of the input) is
//! applied to an object (the second) of a few built-in kinds, with all
//! the directives (`$patch`, `$retainKeys`, `$setElementOrder/…`,
//! `$deleteFromPrimitiveList/…`); it yields an object or an error, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    // Where the server decodes: a thread with its stack.
    kube_fuzz::on_server_stack(|| {
        let ((group, version, kind), data) = kube_fuzz::kind(data);
        let (patch, original) = kube_fuzz::halves(data);
        let Ok(patch) = apimachinery::serializer::json::decode_as::<Map<String, Value>>(patch) else {
            return;
        };
        let original = serde_json::from_slice::<Map<String, Value>>(original).unwrap_or_default();
        let schema = structured_merge::builtin::schema();
        let root = structured_merge::builtin::root(group, version, kind).unwrap_or("untyped");
        let _ = structured_merge::strategic::apply(original, &patch, schema, root);
    });
});
