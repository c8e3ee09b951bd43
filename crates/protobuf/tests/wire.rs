//! Wire-level behaviour: bodies as Go clients write them, and the watch
//! stream framing.

use protobuf_codec::{decode, decode_watch_event, encode, encode_watch_event};
use serde_json::json;

fn len_field(tag: u8, body: &[u8]) -> Vec<u8> {
    assert!(body.len() < 0x80, "test helper handles short bodies only");
    [&[(tag << 3) | 2, body.len() as u8][..], body].concat()
}

fn varint_field(tag: u8, value: u8) -> Vec<u8> {
    vec![tag << 3, value]
}

/// The body `kubectl create configmap cm --from-literal=k=v` sends: Go
/// writes every non-pointer field, zero or not, including the zero
/// creationTimestamp as an empty message.
fn go_config_map() -> Vec<u8> {
    let meta = [
        len_field(1, b"cm"),
        len_field(2, b""),
        len_field(3, b""),
        len_field(4, b""),
        len_field(5, b""),
        len_field(6, b""),
        varint_field(7, 0),
        len_field(8, b""),
    ]
    .concat();
    let entry = [len_field(1, b"k"), len_field(2, b"v")].concat();
    let config_map = [len_field(1, &meta), len_field(2, &entry)].concat();
    let type_meta = [len_field(1, b"v1"), len_field(2, b"ConfigMap")].concat();
    [
        b"k8s\0".to_vec(),
        len_field(1, &type_meta),
        len_field(2, &config_map),
        len_field(3, b""),
        len_field(4, b""),
    ]
    .concat()
}

#[test]
fn go_zero_values_decode_like_their_json_form() {
    // Empty omitempty strings, the zero generation (a non-pointer
    // omitempty integer) and the zero creationTimestamp vanish, as in
    // upstream's JSON.
    assert_eq!(
        decode(&go_config_map()).expect("decodes"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}})
    );
}

#[test]
fn encoding_matches_go_byte_for_byte() {
    // Its JSON form leaves the zeros out; Go's marshaller writes them.
    let value = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm"},
        "data": {"k": "v"}
    });
    assert_eq!(encode(&value).expect("encodes"), go_config_map());
}

#[test]
fn watch_events_are_length_prefixed_bare_messages() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "7"},
                     "spec": {"containers": []}, "status": {}});
    let frame = encode_watch_event("ADDED", &pod).expect("encodes");
    let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
    assert_eq!(len, frame.len() - 4);
    let message = &frame[4..];
    assert!(
        !message.starts_with(b"k8s\0"),
        "the event itself has no envelope"
    );
    // The object inside is a complete protobuf body of its own.
    let object_body = encode(&pod).expect("encodes");
    assert!(message.windows(object_body.len()).any(|w| w == object_body));
    assert_eq!(
        decode_watch_event(message).expect("decodes"),
        json!({"type": "ADDED", "object": pod})
    );
}

#[test]
fn watch_errors_carry_status_and_unknown_kinds_fall_back_to_json() {
    let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                        "reason": "Expired", "code": 410, "message": "too old resource version"});
    let frame = encode_watch_event("ERROR", &status).expect("encodes");
    assert_eq!(
        decode_watch_event(&frame[4..]).expect("decodes"),
        json!({"type": "ERROR", "object": status})
    );
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}});
    let frame = encode_watch_event("MODIFIED", &widget).expect("encodes");
    assert!(
        frame.windows(8).any(|w| w == b"\"spec\":{"),
        "embedded as JSON"
    );
    assert_eq!(
        decode_watch_event(&frame[4..]).expect("decodes"),
        json!({"type": "MODIFIED", "object": widget})
    );
}

#[test]
fn watch_event_kind_round_trips_through_the_envelope() {
    let event = json!({"apiVersion": "meta.k8s.io/v1", "kind": "WatchEvent", "type": "DELETED",
                       "object": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"},
                                  "spec": {}, "status": {}}});
    assert_eq!(
        decode(&encode(&event).expect("encodes")).expect("decodes"),
        event
    );
}
