//! Request bodies in JSON (`apimachinery::serializer::json`, upstream's
//! json serializer with its nesting limit): any bytes yield a JSON tree or
//! an error, never a panic (nor a stack overflow on deep nesting), and a
//! decoded tree prints and decodes back to itself.
#![no_main]

use apimachinery::serializer::json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Where the server decodes: a thread with its stack.
    kube_fuzz::on_server_stack(|| {
        if let Ok(value) = json::decode(data) {
            let printed = serde_json::to_vec(&value).expect("a tree prints");
            let again = json::decode(&printed).expect("a printed tree decodes");
            assert_eq!(again, value);
        }
    });
});
