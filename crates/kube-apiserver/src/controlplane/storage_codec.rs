//! How built-in objects are stored (`--storage-media-type`), as upstream's
//! storage factory does: protobuf (the default) with the `k8s\0` prefix and
//! `runtime.Unknown` envelope for every kind that has a protobuf encoding,
//! JSON for the rest, YAML when asked (both as upstream's serializers write
//! them, `go_json::encode`). Custom resources have their own codec
//! (`apiextensions_apiserver::registry::customresource::codec`).
//!
//! Reads never depend on the flag or the gate: the stored bytes say what
//! they are (protobuf's `k8s\0` prefix, CBOR's self-described tag), so a
//! data directory or etcd written in one encoding is read in any other, and
//! the encoding can be changed on a live store (objects are rewritten in the
//! new one as they are updated, as upstream).

use apimachinery::serializer::json;
use bytes::Bytes;
use serde_json::Value;
use storage::codec::Encoded;
use storage::{Codec, StorageError};

/// `--storage-media-type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StorageMediaType {
    Json,
    Yaml,
    #[default]
    Protobuf,
}

impl StorageMediaType {
    /// Parses a validated flag value (unknown values mean the default).
    pub fn from_flag(value: &str) -> Self {
        match value {
            "application/json" => StorageMediaType::Json,
            "application/yaml" => StorageMediaType::Yaml,
            _ => StorageMediaType::Protobuf,
        }
    }
}

/// The codec of built-in resources' stores.
#[derive(Debug, Clone, Copy, Default)]
pub struct StorageCodec {
    pub media_type: StorageMediaType,
}

impl Codec for StorageCodec {
    fn encode(&self, obj: &Value) -> storage::error::Result<Bytes> {
        match self.media_type {
            StorageMediaType::Protobuf if has_protobuf(obj) => protobuf_codec::encode(obj)
                .map(Bytes::from)
                .map_err(StorageError::internal),
            StorageMediaType::Yaml => go_json::encode::to_yaml(obj)
                .map(Bytes::from)
                .map_err(StorageError::internal),
            _ => go_json::encode::to_vec(obj)
                .map(Bytes::from)
                .map_err(StorageError::internal),
        }
    }

    /// Decoding protobuf gives back a tree the encoder found it gives back
    /// (`protobuf_codec::encode_checked`, member order aside), which the
    /// decoder then normalizes: the tree itself when it already has Go's
    /// shape (normalizing orders members whatever order they came in).
    /// JSON and YAML are not checked (Go writes whole floats as integers).
    fn encode_checked(&self, obj: &Value) -> storage::error::Result<Encoded> {
        if self.media_type != StorageMediaType::Protobuf || !has_protobuf(obj) {
            return Ok(Encoded {
                data: self.encode(obj)?,
                exact: false,
            });
        }
        let (data, exact) = protobuf_codec::encode_checked(obj).map_err(StorageError::internal)?;
        Ok(Encoded {
            data: Bytes::from(data),
            exact: exact && go_json::is_normalized(obj),
        })
    }

    /// Objects come back in Go's shape whatever encoding stored them
    /// (protobuf decodes fields in field-number order).
    fn decode(&self, key: &str, data: &[u8]) -> storage::error::Result<Value> {
        let mut obj = decode_any(key, data)?;
        go_json::normalize(&mut obj);
        Ok(obj)
    }
}

/// Reads stored bytes in whichever encoding wrote them.
fn decode_any(key: &str, data: &[u8]) -> storage::error::Result<Value> {
    let corrupt = |message: String| StorageError::Corrupt {
        key: key.to_owned(),
        message,
    };
    if data.starts_with(protobuf_codec::MAGIC) {
        return protobuf_codec::decode(data).map_err(|e| corrupt(e.to_string()));
    }
    if kube_cbor::is_cbor(data) {
        return kube_cbor::decode(data).map_err(|e| corrupt(e.to_string()));
    }
    match data.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => json::decode_stored(data).map_err(|e| corrupt(e.to_string())),
        _ => serde_yaml::from_slice(data).map_err(|e| corrupt(e.to_string())),
    }
}

fn has_protobuf(obj: &Value) -> bool {
    let field = |name: &str| obj.get(name).and_then(Value::as_str);
    match (field("apiVersion"), field("kind")) {
        (Some(api_version), Some(kind)) => protobuf_codec::supports(api_version, kind),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_map() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "default", "uid": "0b6f7a2e-1c5d-4f3e-9a1b-2c3d4e5f6a7b"},
            "data": {"mode": "fast"},
        })
    }

    /// A ConfigMap encoded by hand from upstream's generated.proto field
    /// numbers: Unknown{typeMeta=1{apiVersion=1, kind=2}, raw=2}, and in raw
    /// ConfigMap{metadata=1{name=1, namespace=3}, data=2 (map entries
    /// key=1, value=2)}.
    fn upstream_bytes() -> Vec<u8> {
        fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
            let mut out = vec![tag << 3 | 2, u8::try_from(bytes.len()).unwrap_or(0)];
            out.extend_from_slice(bytes);
            out
        }
        let meta = [field(1, b"settings"), field(3, b"default")].concat();
        let entry = [field(1, b"mode"), field(2, b"fast")].concat();
        let raw = [field(1, &meta), field(2, &entry)].concat();
        let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        [b"k8s\0".to_vec(), field(1, &type_meta), field(2, &raw)].concat()
    }

    #[test]
    fn protobuf_is_the_default_and_round_trips() {
        let codec = StorageCodec::default();
        let bytes = codec.encode(&config_map()).unwrap();
        assert!(bytes.starts_with(b"k8s\0"));
        assert_eq!(codec.decode("/k", &bytes).unwrap(), config_map());
    }

    #[test]
    fn reads_bytes_laid_out_as_upstream_stores_them() {
        let decoded = StorageCodec::default()
            .decode("/registry/configmaps/default/settings", &upstream_bytes())
            .unwrap();
        assert_eq!(decoded["kind"], "ConfigMap");
        assert_eq!(decoded["apiVersion"], "v1");
        assert_eq!(decoded["metadata"]["name"], "settings");
        assert_eq!(decoded["metadata"]["namespace"], "default");
        assert_eq!(decoded["data"]["mode"], "fast");
    }

    #[test]
    fn every_encoding_is_read_whatever_the_flag() {
        for written in [
            StorageMediaType::Json,
            StorageMediaType::Yaml,
            StorageMediaType::Protobuf,
        ] {
            let bytes = StorageCodec {
                media_type: written,
            }
            .encode(&config_map())
            .unwrap();
            for reader in [StorageMediaType::Json, StorageMediaType::Protobuf] {
                let codec = StorageCodec { media_type: reader };
                assert_eq!(codec.decode("/k", &bytes).unwrap(), config_map());
            }
        }
    }

    #[test]
    fn kinds_without_protobuf_are_stored_as_json() {
        let custom =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        let bytes = StorageCodec::default().encode(&custom).unwrap();
        assert_eq!(bytes.first(), Some(&b'{'));
    }

    #[test]
    fn built_in_stores_read_cbor_too() {
        let custom = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 3, "ratio": 0.5, "on": true},
        });
        let cbor = kube_cbor::encode(&custom);
        assert_eq!(StorageCodec::default().decode("/k", &cbor).unwrap(), custom);
        let mut damaged = cbor.to_vec();
        damaged.truncate(damaged.len() - 2);
        let err = StorageCodec::default().decode("/k", &damaged).unwrap_err();
        assert!(matches!(err, StorageError::Corrupt { .. }), "{err:?}");
    }

    #[test]
    fn corrupt_protobuf_is_a_corrupt_object_error() {
        let mut bytes = upstream_bytes();
        bytes.truncate(bytes.len() - 3);
        let err = StorageCodec::default().decode("/k", &bytes).unwrap_err();
        assert!(matches!(err, StorageError::Corrupt { .. }), "{err:?}");
    }

    /// Upstream's fixture objects of every kind (`testdata/kubernetes-api`),
    /// in Go's shape as the registry stores objects.
    fn fixtures() -> Vec<(String, Value)> {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/kubernetes-api/HEAD");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if let Some(name) = name.strip_suffix(".json") {
                let mut obj: Value =
                    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                go_json::normalize(&mut obj);
                out.push((name.to_owned(), obj));
            }
        }
        out
    }

    #[test]
    fn objects_found_exact_decode_to_themselves_in_order() {
        let codec = StorageCodec::default();
        let (mut exact, mut decoded) = (0, 0);
        for (name, obj) in fixtures() {
            let Ok(encoded) = codec.encode_checked(&obj) else {
                continue; // kinds that are never stored (reviews, options)
            };
            let back = codec.decode("/k", &encoded.data).unwrap();
            // Compared as text: `Value`'s equality ignores member order.
            let text = |v: &Value| serde_json::to_vec(v).unwrap();
            let same = text(&back) == text(&obj);
            if encoded.exact {
                assert!(same, "{name}: found exact, decodes to\n{back}\nnot\n{obj}");
                exact += 1;
            } else {
                decoded += 1;
            }
        }
        assert!(exact > 60, "{exact} of {} found exact", exact + decoded);
    }

    #[test]
    fn objects_written_by_the_registry_are_exact_unless_decoding_reshapes_them() {
        let codec = StorageCodec::default();
        let mut map = config_map();
        go_json::normalize(&mut map);
        assert!(codec.encode_checked(&map).unwrap().exact);
        // Decoding would normalize: the member order counts.
        let mut reordered = map.clone();
        if let Some(obj) = reordered.as_object_mut() {
            let kind = obj.shift_remove("kind").unwrap();
            obj.insert("kind".into(), kind);
        }
        assert!(!codec.encode_checked(&reordered).unwrap().exact);
        // An empty finalizer list is not on the wire.
        let mut finalizers = map.clone();
        finalizers["metadata"]["finalizers"] = json!([]);
        assert!(!codec.encode_checked(&finalizers).unwrap().exact);
        // JSON storage and kinds without protobuf are not checked.
        let json = StorageCodec {
            media_type: StorageMediaType::Json,
        };
        assert!(!json.encode_checked(&map).unwrap().exact);
    }
}
