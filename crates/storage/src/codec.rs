//! How objects become stored bytes and back. The JSON codec is the default;
//! protobuf storage encoding and encryption-at-rest transformers wrap or
//! replace it later without touching the store.

use bytes::Bytes;
use serde_json::Value;

use crate::error::{Result, StorageError};

/// Stored bytes, and what decoding them gives.
pub struct Encoded {
    pub data: Bytes,
    /// [`Codec::decode`] gives back exactly the tree encoded, member order
    /// included: a writer's tree then stands for the decoded object (as
    /// its answer, and as the object of its watches' event: see
    /// `store::handoff`), so nothing decodes it.
    pub exact: bool,
}

pub trait Codec: Send + Sync + 'static {
    fn encode(&self, obj: &Value) -> Result<Bytes>;
    fn decode(&self, key: &str, data: &[u8]) -> Result<Value>;

    /// Encodes an object a writer stores, telling whether decoding gives
    /// it back exactly; conservative, and cheap (known while encoding, as
    /// no decode is made to find out). The default claims nothing: the
    /// writer then decodes what it stored, as upstream's store always does.
    fn encode_checked(&self, obj: &Value) -> Result<Encoded> {
        Ok(Encoded {
            data: self.encode(obj)?,
            exact: false,
        })
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
    /// to the same values: every tree decodes as it was written.
    fn encode_checked(&self, obj: &Value) -> Result<Encoded> {
        Ok(Encoded {
            data: self.encode(obj)?,
            exact: true,
        })
    }
}
