//! Continue tokens (`storage::continue_token`, upstream's
//! `storage.DecodeContinue`): any `continue` query value decodes to a
//! start key and revision or an error, never a panic; a decoded start key
//! stays under the list's prefix, and encoding it again decodes to the
//! same place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storage::continue_token::{decode, encode};

const PREFIX: &str = "/registry/pods/";

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(decoded) = decode(token, PREFIX) else {
        return;
    };
    let rest = decoded
        .start_key
        .strip_prefix(PREFIX)
        .expect("a decoded start key stays under the prefix");
    assert!(
        !rest.split('/').any(|s| s == ".."),
        "{token:?} escapes the prefix: {:?}",
        decoded.start_key
    );
    let again = encode(&decoded.start_key, PREFIX, decoded.resource_version)
        .expect("a decoded key encodes");
    assert_eq!(decode(&again, PREFIX).ok(), Some(decoded));
});
