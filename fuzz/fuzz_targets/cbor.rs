//! Kubernetes CBOR (`crates/cbor`, upstream's
//! `runtime/serializer/cbor`): any bytes decode to a value or an error,
//! never a panic; a decoded value encodes and decodes back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kube_cbor::decode_first(data);
    if let Ok(value) = kube_cbor::decode(data) {
        let bytes = kube_cbor::encode(&value);
        let again = kube_cbor::decode(&bytes).expect("re-encoded CBOR decodes");
        assert_eq!(again, value, "CBOR round trip changed the value");
    }
});
