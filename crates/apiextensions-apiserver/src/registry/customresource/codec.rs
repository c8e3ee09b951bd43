//! How custom resources are stored (upstream's CRD handler builds their
//! storage codec from the unstructured JSON serializer, and from CBOR while
//! the `CBORServingAndStorage` gate is on). Reads never depend on the gate:
//! CBOR's self-described tag says what the stored bytes are, so the
//! encoding can change on a live store.

use apimachinery::serializer::json;
use bytes::Bytes;
use serde_json::Value;
use storage::{Codec, StorageError};

/// The codec of custom resources' stores: CBOR while the
/// `CBORServingAndStorage` gate is on, JSON otherwise.
#[derive(Debug, Clone, Copy, Default)]
pub struct CustomResourceCodec {
    pub cbor: bool,
}

impl CustomResourceCodec {
    /// The codec the gate asks for (read once, when a CRD's store is built).
    pub fn from_gate() -> Self {
        CustomResourceCodec {
            cbor: apiserver::endpoints::negotiation::cbor_enabled(),
        }
    }
}

impl Codec for CustomResourceCodec {
    fn encode(&self, obj: &Value) -> storage::error::Result<Bytes> {
        if self.cbor {
            return Ok(Bytes::from(kube_cbor::encode(obj)));
        }
        serde_json::to_vec(obj)
            .map(Bytes::from)
            .map_err(StorageError::internal)
    }

    fn decode(&self, key: &str, data: &[u8]) -> storage::error::Result<Value> {
        let corrupt = |message: String| StorageError::Corrupt {
            key: key.to_owned(),
            message,
        };
        if kube_cbor::is_cbor(data) {
            return kube_cbor::decode(data).map_err(|e| corrupt(e.to_string()));
        }
        json::decode_stored(data).map_err(|e| corrupt(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn custom_resources_are_cbor_with_the_gate_and_read_either_way() {
        let custom = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 3, "ratio": 0.5, "on": true},
        });
        let cbor = CustomResourceCodec { cbor: true }.encode(&custom).unwrap();
        assert!(cbor.starts_with(&kube_cbor::SELF_DESCRIBED));
        let json = CustomResourceCodec { cbor: false }.encode(&custom).unwrap();
        assert_eq!(json.first(), Some(&b'{'));
        for reader in [
            CustomResourceCodec { cbor: false },
            CustomResourceCodec { cbor: true },
        ] {
            assert_eq!(reader.decode("/k", &cbor).unwrap(), custom);
            assert_eq!(reader.decode("/k", &json).unwrap(), custom);
        }
        let mut damaged = cbor.to_vec();
        damaged.truncate(damaged.len() - 2);
        let err = CustomResourceCodec::default().decode("/k", &damaged);
        assert!(matches!(err, Err(StorageError::Corrupt { .. })), "{err:?}");
    }
}
