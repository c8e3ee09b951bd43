//! Any bytes given to the protobuf decoders yield a value or an error,
//! never a panic; whatever decodes encodes again without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = protobuf_codec::decode(data) {
        let _ = protobuf_codec::encode(&value);
    }
    let _ = protobuf_codec::decode_watch_event(data);
});
