//! Request bodies decoded by their encoding, every one through the bounded
//! decoders (upstream: the serializers the codec factory hands each
//! handler, `runtime/serializer/{json,yaml,protobuf,cbor}`). Handlers,
//! patches, apply, subresources, DeleteOptions and the audit log all read
//! bodies here.

use apimachinery::serializer::{self, DecodeError};
use serde_json::Value;

use super::negotiation::Encoding;

/// Why a body could not be decoded, by decoder.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("{0}")]
    Text(DecodeError),
    #[error("{0}")]
    Protobuf(protobuf_codec::ProtobufError),
    #[error("{0}")]
    Cbor(kube_cbor::CborError),
}

impl BodyError {
    /// The detail upstream's serializer gives when it refuses the input
    /// for one of its own limits, before the kind is known; `None` for
    /// other errors.
    pub fn unrecognized_detail(&self) -> Option<String> {
        match self {
            BodyError::Text(DecodeError::JsonMaxDepth) => Some(format!(
                "couldn't get version/kind; json parse error: {}",
                DecodeError::JsonMaxDepth
            )),
            BodyError::Text(e) if e.is_upstream_limit() => Some(e.to_string()),
            BodyError::Cbor(e) => Some(format!("unable to determine group/version/kind: {e}")),
            _ => None,
        }
    }
}

/// Decodes a body in `encoding`.
pub fn decode(encoding: Encoding, bytes: &[u8]) -> Result<Value, BodyError> {
    match encoding {
        Encoding::Json => serializer::json::decode(bytes).map_err(BodyError::Text),
        Encoding::Yaml => serializer::yaml::decode(bytes).map_err(BodyError::Text),
        Encoding::Protobuf => protobuf_codec::decode(bytes).map_err(BodyError::Protobuf),
        Encoding::Cbor => kube_cbor::decode(bytes).map_err(BodyError::Cbor),
    }
}

/// Upstream's summary of a body it could not recognize: the first 30
/// bytes, as text when it starts like a JSON object, else in hex.
pub fn summarize(bytes: &[u8]) -> String {
    const SHOWN: usize = 30;
    let shown = &bytes[..bytes.len().min(SHOWN)];
    let more = if bytes.len() > SHOWN { " ..." } else { "" };
    match bytes.first() {
        None => "<empty>".to_owned(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(shown)),
        Some(_) => {
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_limits_are_unrecognized_bodies() {
        let deep = "[".repeat(10_001);
        let err = decode(Encoding::Json, deep.as_bytes()).unwrap_err();
        assert_eq!(
            err.unrecognized_detail().as_deref(),
            Some("couldn't get version/kind; json parse error: exceeded max depth")
        );
        let err = decode(Encoding::Yaml, deep.as_bytes()).unwrap_err();
        assert_eq!(
            err.unrecognized_detail().as_deref(),
            Some("yaml: exceeded max depth of 10000")
        );
        let err = decode(Encoding::Json, b"{").unwrap_err();
        assert_eq!(err.unrecognized_detail(), None);
    }

    #[test]
    fn summaries_are_upstream_s() {
        assert_eq!(summarize(b""), "<empty>");
        assert_eq!(summarize(b"[[["), "5b5b5b");
        let object = format!("{{\"a\":\"{}\"}}", "b".repeat(40));
        assert_eq!(
            summarize(object.as_bytes()),
            format!("{} ...", &object[..30])
        );
    }
}
