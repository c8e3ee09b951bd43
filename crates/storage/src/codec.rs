//! How objects become stored bytes and back. The JSON codec is the default;
//! protobuf storage encoding and encryption-at-rest transformers wrap or
//! replace it later without touching the store.

use bytes::Bytes;
use serde_json::Value;

use crate::error::{Result, StorageError};

pub trait Codec: Send + Sync + 'static {
    fn encode(&self, obj: &Value) -> Result<Bytes>;
    fn decode(&self, key: &str, data: &[u8]) -> Result<Value>;

    /// Whether decoding what [`Codec::encode`] wrote always gives back the
    /// tree that was encoded, field order included; then a watch of this
    /// process may take a writer's object instead of decoding its event
    /// (see `store::handoff`). Not for codecs that reshape on decoding
    /// (protobuf drops empty lists and orders fields as Go's structs).
    fn decodes_as_written(&self) -> bool {
        false
    }
}

/// Stores objects as compact JSON.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonCodec;

impl Codec for JsonCodec {
    fn encode(&self, obj: &Value) -> Result<Bytes> {
        serde_json::to_vec(obj)
            .map(Bytes::from)
            .map_err(StorageError::internal)
    }

    fn decode(&self, key: &str, data: &[u8]) -> Result<Value> {
        apimachinery::serializer::json::decode_stored(data).map_err(|e| StorageError::Corrupt {
            key: key.to_string(),
            message: e.to_string(),
        })
    }

    /// serde_json keeps field order and writes numbers that parse back
    /// to the same values.
    fn decodes_as_written(&self) -> bool {
        true
    }
}
