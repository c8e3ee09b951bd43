//! Kubernetes protobuf (`k8s\0` envelope, `runtime.Unknown`, every built-in
//! kind, watch events): any bytes yield a value or an error, never a panic;
//! whatever decodes encodes again, and that encoding is a fixed point:
//! decoded and encoded once more it gives the same bytes. (The decoded
//! values may differ: protobuf writes every non-pointer struct, as gogo
//! does, so a second decoding holds the empty `spec: {}` that Go's JSON
//! writes and the first input may have left out.) An encoding the encoder
//! finds exact (`encode_checked`) decodes to the very value encoded.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = protobuf_codec::decode(data) {
        if let Ok((bytes, exact)) = protobuf_codec::encode_checked(&value) {
            let again = protobuf_codec::decode(&bytes).expect("re-encoded protobuf decodes");
            if exact {
                assert_eq!(again, value, "an encoding found exact decodes to another value");
            }
            let bytes_again = protobuf_codec::encode(&again).expect("a decoded value encodes");
            assert_eq!(bytes_again, bytes, "protobuf round trip changed the bytes");
        }
    }
    let _ = protobuf_codec::decode_watch_event(data);
});
