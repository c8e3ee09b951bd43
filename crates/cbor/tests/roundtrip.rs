//! JSON ⇄ CBOR: round trips over every JSON value kind, and the exact bytes
//! upstream's encoder writes (self-described tag, byte strings, sorted
//! keys, shortest integers and floats).

use kube_cbor::{decode, decode_first, encode, encode_list, encode_watch_event, to_vec};
use serde_json::{json, Value};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn assert_round_trip(value: &Value) {
    let bytes = encode(value);
    assert!(bytes.starts_with(&[0xd9, 0xd9, 0xf7]), "{bytes:02x?}");
    let back = decode(&bytes).unwrap_or_else(|e| panic!("decoding {value}: {e}"));
    assert_eq!(&back, value);
    assert_same_number_kinds(&back, value);
}

/// Integers stay integers and floats stay floats (`2.0` is not `2`).
fn assert_same_number_kinds(a: &Value, b: &Value) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => assert_eq!(x.is_f64(), y.is_f64(), "{x} vs {y}"),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .for_each(|(x, y)| assert_same_number_kinds(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                assert_same_number_kinds(v, &y[k]);
            }
        }
        _ => {}
    }
}

#[test]
fn every_json_value_kind_round_trips() {
    assert_round_trip(&json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {}, "annotations": {"ünïcødé": "☃ snow"}},
        "spec": {
            "null": null, "yes": true, "no": false,
            "zero": 0, "small": 23, "byte": 24, "word": 65536, "minusOne": -1,
            "min": i64::MIN, "max": i64::MAX,
            "half": 1.5, "quarter": -0.25, "single": 100000.5, "double": 1.1,
            "huge": 1e300, "tiny": 5e-324, "two": 2.0, "negZero": -0.0,
            "empty": "", "list": [1, "two", [3.5, null], {"k": [] }], "emptyList": [],
        },
    }));
    for scalar in [
        json!(null),
        json!(true),
        json!(7),
        json!(-7),
        json!(0.5),
        json!("s"),
    ] {
        assert_round_trip(&scalar);
    }
}

#[test]
fn bytes_are_as_upstream_writes_them() {
    // {"a": 1}: map(1), byte string "a", 1.
    assert_eq!(encode(&json!({"a": 1})), hex("d9d9f7a1416101"));
    // Keys sort shorter first, then bytewise; strings are byte strings.
    assert_eq!(
        encode(&json!({"bb": "x", "c": true, "a": null})),
        hex("d9d9f7a34161f64163f54262624178")
    );
    // Shortest integer heads.
    assert_eq!(encode(&json!(23)), hex("d9d9f717"));
    assert_eq!(encode(&json!(24)), hex("d9d9f71818"));
    assert_eq!(encode(&json!(-1)), hex("d9d9f720"));
    assert_eq!(encode(&json!(-500)), hex("d9d9f73901f3"));
    assert_eq!(encode(&json!(i64::MIN)), hex("d9d9f73b7fffffffffffffff"));
    // Floats in the narrowest width that keeps their value.
    assert_eq!(encode(&json!(1.5)), hex("d9d9f7f93e00"));
    assert_eq!(encode(&json!(2.0)), hex("d9d9f7f94000"));
    assert_eq!(encode(&json!(100000.0)), hex("d9d9f7fa47c35000"));
    assert_eq!(encode(&json!(1.1)), hex("d9d9f7fb3ff199999999999a"));
    // An integer beyond int64 is a float, as upstream's JSON decoding has it.
    assert_eq!(encode(&json!(u64::MAX)), hex("d9d9f7fa5f800000"),);
}

#[test]
fn text_strings_and_missing_tag_are_read_too() {
    // {"a": "b"} with text strings and no self-described tag.
    assert_eq!(decode(&hex("a161616162")), Ok(json!({"a": "b"})));
    // Floats of every width.
    assert_eq!(decode(&hex("f94000")), Ok(json!(2.0)));
    assert_eq!(decode(&hex("fa40000000")), Ok(json!(2.0)));
    assert_eq!(decode(&hex("fb4000000000000000")), Ok(json!(2.0)));
    // Indefinite-length strings, arrays and maps.
    assert_eq!(decode(&hex("7f61616162ff")), Ok(json!("ab")));
    assert_eq!(decode(&hex("5f4161ff")), Ok(json!("a")));
    assert_eq!(decode(&hex("9f0102ff")), Ok(json!([1, 2])));
    assert_eq!(decode(&hex("bf416101ff")), Ok(json!({"a": 1})));
}

#[test]
fn tags_decode_to_their_json_form() {
    // 0("2006-01-02T15:04:05Z")
    assert_eq!(
        decode(&hex("c074323030362d30312d30325431353a30343a30355a")),
        Ok(json!("2006-01-02T15:04:05Z"))
    );
    // 1(1136214245), 1(-1), 1(1.5)
    assert_eq!(
        decode(&hex("c11a43b940e5")),
        Ok(json!("2006-01-02T15:04:05Z"))
    );
    assert_eq!(decode(&hex("c120")), Ok(json!("1969-12-31T23:59:59Z")));
    assert_eq!(
        decode(&hex("c1f93e00")),
        Ok(json!("1970-01-01T00:00:01.5Z"))
    );
    // 21/22/23 over h'01020304': base64url, base64, base16.
    assert_eq!(decode(&hex("d54401020304")), Ok(json!("AQIDBA")));
    assert_eq!(decode(&hex("d64401020304")), Ok(json!("AQIDBA==")));
    assert_eq!(decode(&hex("d74401020304")), Ok(json!("01020304")));
    // Unknown tags (4: decimal fraction) stand for their content.
    assert_eq!(decode(&hex("c48221196ab3")), Ok(json!([-2, 27315])));
    // The self-described tag may appear inside too.
    assert_eq!(decode(&hex("d9d9f7a14161d9d9f701")), Ok(json!({"a": 1})));
}

#[test]
fn watch_events_embed_a_self_described_object() {
    let object = json!({"kind": "ConfigMap", "metadata": {"name": "c"}});
    let frame = encode_watch_event("ADDED", &object);
    assert!(frame.starts_with(&hex("d9d9f7a2447479706545414444454446")));
    assert_eq!(
        decode(&frame),
        Ok(json!({"type": "ADDED", "object": object}))
    );
    let mut embedded = hex("d9d9f7");
    embedded.extend_from_slice(&encode(&object)[3..]);
    assert!(frame.ends_with(&embedded), "{frame:02x?}");
    // A stream is a plain concatenation of events.
    let mut stream = frame.clone();
    stream.extend_from_slice(&encode_watch_event("DELETED", &object));
    let (first, rest) = decode_first(&stream).expect("first");
    assert_eq!(first["type"], "ADDED");
    let (second, rest) = decode_first(rest).expect("second");
    assert_eq!(second["type"], "DELETED");
    assert!(rest.is_empty());
}

#[test]
fn lists_are_written_from_their_items() {
    let items = [
        json!({"metadata": {"name": "a"}}),
        json!({"metadata": {"name": "b"}}),
    ];
    let metadata = json!({"resourceVersion": "7"});
    let encoded: Vec<Vec<u8>> = items.iter().map(encode).collect();
    let bytes = encode_list(
        &[
            ("kind", &json!("WidgetList")),
            ("apiVersion", &json!("example.com/v1")),
            ("metadata", &metadata),
        ],
        encoded.iter().map(Vec::as_slice),
    );
    let whole = json!({
        "kind": "WidgetList", "apiVersion": "example.com/v1",
        "metadata": metadata, "items": items,
    });
    assert_eq!(bytes, encode(&whole));
    assert_eq!(decode(&bytes), Ok(whole));
}

#[test]
fn serializable_values_encode_through_their_json_form() {
    #[derive(serde::Serialize)]
    struct Status<'a> {
        kind: &'a str,
        code: u16,
    }
    let bytes = to_vec(&Status {
        kind: "Status",
        code: 404,
    })
    .expect("encodes");
    assert_eq!(decode(&bytes), Ok(json!({"kind": "Status", "code": 404})));
}
