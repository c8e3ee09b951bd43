//! Kubernetes protobuf (`k8s\0` envelope, `runtime.Unknown`, every built-in
//! kind, watch events): any bytes yield a value or an error, never a panic;
//! whatever decodes encodes again and decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = protobuf_codec::decode(data) {
        if let Ok(bytes) = protobuf_codec::encode(&value) {
            let again = protobuf_codec::decode(&bytes).expect("re-encoded protobuf decodes");
            assert_eq!(again, value, "protobuf round trip changed the value");
        }
    }
    let _ = protobuf_codec::decode_watch_event(data);
});
