//! Request bodies and apply configurations in YAML, as the REST handlers
//! decode them (aliases included): any bytes yield a JSON tree or an
//! error, never a panic, a stack overflow or an alias expansion that
//! exhausts memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let _ = serde_yaml::from_slice::<Value>(data);
});
