//! Request bodies in JSON, as the REST handlers decode them: any bytes
//! yield a JSON tree or an error, never a panic (nor a stack overflow on
//! deep nesting), and a decoded tree prints and parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let printed = serde_json::to_vec(&value).expect("a tree prints");
        let again: Value = serde_json::from_slice(&printed).expect("a printed tree parses");
        assert_eq!(again, value);
    }
});
