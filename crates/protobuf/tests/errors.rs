//! Malformed input: every failure is a `ProtobufError`, never a panic.

use protobuf_codec::{decode, decode_watch_event, encode, ProtobufError};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

fn examples() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
               "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}],
                         "resources": {"limits": {"cpu": "1"}}, "livenessProbe": {"httpGet": {"port": "http"}}}]},
               "status": {"startTime": "2024-01-01T00:00:00Z"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "binaryData": {"b": "AQI="}}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
               "spec": {"renewTime": "2024-01-01T00:00:00.000001Z"}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"},
               "spec": {"group": "b", "names": {"kind": "A", "plural": "as"}, "scope": "Cluster",
                        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                            {"type": "object", "properties": {"x": {"items": [{"type": "string"}], "default": {"k": 1}}}}}}]}}),
        json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 409, "metadata": {}}),
    ]
}

#[test]
fn wrong_prefix_and_truncation() {
    assert_eq!(decode(b"{\"kind\": \"Pod\"}"), Err(ProtobufError::BadMagic));
    assert_eq!(decode(b"k8s\x01rest"), Err(ProtobufError::BadMagic));
    assert_eq!(decode(b"k8"), Err(ProtobufError::Truncated));
    assert_eq!(decode(b""), Err(ProtobufError::Truncated));
    let bytes = encode(&examples()[0]).expect("encodes");
    assert_eq!(
        decode(&bytes[..bytes.len() - 3]),
        Err(ProtobufError::Truncated)
    );
}

#[test]
fn unknown_and_missing_kinds() {
    let custom =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(
        encode(&custom),
        Err(ProtobufError::UnknownKind {
            api_version: "example.com/v1".into(),
            kind: "Widget".into()
        })
    );
    // Table has no protobuf form upstream either.
    assert!(matches!(
        encode(&json!({"apiVersion": "meta.k8s.io/v1", "kind": "Table", "rows": []})),
        Err(ProtobufError::UnknownKind { .. })
    ));
    assert_eq!(
        encode(&json!({"kind": "Pod"})),
        Err(ProtobufError::MissingTypeMeta)
    );
    assert_eq!(
        encode(&json!(["not", "an", "object"])),
        Err(ProtobufError::MissingTypeMeta)
    );
    // An envelope naming a kind we do not know.
    let mut bytes = encode(&examples()[1]).expect("encodes");
    let at = bytes
        .windows(9)
        .position(|w| w == b"ConfigMap")
        .expect("kind in envelope");
    bytes[at..at + 9].copy_from_slice(b"ConfigMop");
    assert_eq!(
        decode(&bytes),
        Err(ProtobufError::UnknownKind {
            api_version: "v1".into(),
            kind: "ConfigMop".into()
        })
    );
}

#[test]
fn type_mismatches_name_the_field() {
    let bad = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": "nginx"}});
    assert_eq!(
        encode(&bad),
        Err(ProtobufError::InvalidField {
            message_type: "PodSpec",
            field: "containers".into(),
            message: "expected an array"
        })
    );
    let bad_port = json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 4_294_967_296_i64}]}});
    assert!(
        matches!(encode(&bad_port), Err(ProtobufError::InvalidField { field, .. }) if field == "port")
    );
    let bad_time = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"creationTimestamp": "yesterday"}});
    assert!(matches!(
        encode(&bad_time),
        Err(ProtobufError::InvalidField {
            message_type: "Time",
            ..
        })
    ));
    let bad_bytes = json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}});
    assert!(
        matches!(encode(&bad_bytes), Err(ProtobufError::InvalidField { field, .. }) if field == "data")
    );
}

#[test]
fn corrupt_field_data() {
    // Field 2 of the envelope claims 100 bytes but holds 1.
    assert_eq!(decode(b"k8s\0\x12\x64\x00"), Err(ProtobufError::Truncated));
    // An 11-byte varint.
    assert!(matches!(
        decode(b"k8s\0\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
        Err(ProtobufError::Corrupt(_))
    ));
    // Group wire types are not used by Kubernetes.
    assert!(matches!(
        decode(b"k8s\0\x0b"),
        Err(ProtobufError::Corrupt(_))
    ));
    // A Pod whose metadata (field 1) is sent as a varint.
    let mut pod = b"k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x02".to_vec();
    pod.extend_from_slice(b"\x08\x01");
    assert!(matches!(decode(&pod), Err(ProtobufError::Corrupt(_))));
}

/// Wraps `raw` as the object of a WatchEvent envelope.
fn nest_watch_event(raw: &[u8]) -> Vec<u8> {
    fn field(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![(tag << 3) | 2];
        let mut len = body.len();
        while len >= 0x80 {
            out.push((len as u8) | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(body);
        out
    }
    let type_meta = [field(1, b"meta.k8s.io/v1"), field(2, b"WatchEvent")].concat();
    let event = [field(1, b"ADDED"), field(2, &field(1, raw))].concat();
    [
        b"k8s\0".as_slice(),
        &field(1, &type_meta),
        &field(2, &event),
    ]
    .concat()
}

#[test]
fn deep_nesting_is_refused() {
    let mut bytes = encode(&examples()[1]).expect("encodes");
    for _ in 0..10 {
        bytes = nest_watch_event(&bytes);
    }
    assert!(decode(&bytes).is_ok(), "moderate nesting decodes");
    for _ in 0..1000 {
        bytes = nest_watch_event(&bytes);
    }
    assert_eq!(decode(&bytes), Err(ProtobufError::TooDeep));
}

#[test]
fn random_and_mutated_input_never_panics() {
    let mut rng = StdRng::seed_from_u64(0x6b38_7300);
    let valid: Vec<Vec<u8>> = examples()
        .iter()
        .map(|v| encode(v).expect("encodes"))
        .collect();
    for round in 0..20_000 {
        let input = if round % 2 == 0 {
            let len = rng.random_range(0..64);
            let mut bytes = b"k8s\0".to_vec();
            bytes.extend((0..len).map(|_| rng.random::<u8>()));
            bytes
        } else {
            let mut bytes = valid[round % valid.len()].clone();
            for _ in 0..rng.random_range(1..4) {
                let at = rng.random_range(4..bytes.len());
                match rng.random_range(0..3) {
                    0 => bytes[at] ^= 1 << rng.random_range(0..8),
                    1 => bytes[at] = rng.random(),
                    _ => bytes.truncate(at.max(5)),
                }
                if bytes.len() <= 5 {
                    break;
                }
            }
            bytes
        };
        // Whatever decodes must encode again.
        if let Ok(value) = decode(&input) {
            let _ = encode(&value);
        }
        let _ = decode_watch_event(&input[4..]);
    }
}
