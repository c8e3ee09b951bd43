//! Round trips a synthetic object of every encodable kind, with every
//! field of every reachable message filled in, through encode and decode.

use serde_json::{json, Map, Value};

use crate::generated::{KINDS, MESSAGES};
use crate::schema::{FieldDesc, Shape, Special, Ty};
use crate::{decode, encode};

/// How deep sample objects go; recursive types stop here.
const SAMPLE_DEPTH: usize = 7;

fn sample_object(idx: usize, depth: usize, out: &mut Map<String, Value>) {
    for f in MESSAGES[idx].fields {
        if f.inline {
            if let Ty::Message(inner) = f.ty {
                sample_object(inner, depth + 1, out);
            }
            continue;
        }
        let Some(v) = sample_value(f, depth) else {
            continue;
        };
        let v = match f.shape {
            Shape::Single => v,
            Shape::Repeated => Value::Array(vec![v]),
            Shape::Map => json!({ "some-key": v }),
        };
        out.insert(f.json.to_owned(), v);
    }
}

fn sample_value(f: &FieldDesc, depth: usize) -> Option<Value> {
    Some(match f.ty {
        Ty::String => Value::String(format!("{}-value", f.json)),
        Ty::Bytes => Value::String("AAEC/w==".into()),
        Ty::Int32 => json!(-7),
        Ty::Int64 => json!(1_i64 << 40),
        Ty::Bool => json!(true),
        Ty::Double => json!(1.5),
        // Decoding fills in required objects, so the sample has them too.
        Ty::Message(idx) if depth >= SAMPLE_DEPTH => {
            return (f.required && MESSAGES[idx].special == Special::None)
                .then(|| empty_object(idx));
        }
        Ty::Message(idx) => sample_message(idx, depth + 1),
    })
}

/// What decoding an empty message yields: its required members, empty.
fn empty_object(idx: usize) -> Value {
    let mut map = Map::new();
    for f in MESSAGES[idx].fields.iter().filter(|f| f.required) {
        let v = match (f.shape, f.ty) {
            (Shape::Repeated, _) => json!([]),
            (Shape::Map, _) => json!({}),
            (_, Ty::String | Ty::Bytes) => json!(""),
            (_, Ty::Int32 | Ty::Int64) => json!(0),
            (_, Ty::Double) => json!(0.0),
            (_, Ty::Bool) => json!(false),
            (_, Ty::Message(m)) if MESSAGES[m].special == Special::None => empty_object(m),
            (_, Ty::Message(_)) => continue,
        };
        map.insert(f.json.to_owned(), v);
    }
    Value::Object(map)
}

fn sample_message(idx: usize, depth: usize) -> Value {
    match MESSAGES[idx].special {
        Special::None => {
            let mut map = Map::new();
            sample_object(idx, depth, &mut map);
            Value::Object(map)
        }
        Special::Time => json!("2024-01-02T03:04:05Z"),
        Special::MicroTime => json!("2024-01-02T03:04:05.123456Z"),
        Special::IntOrString if depth.is_multiple_of(2) => json!("25%"),
        Special::IntOrString => json!(8080),
        Special::Quantity => json!("100m"),
        Special::RawJson => json!({"embedded": [1, "two", null, {"three": 3.5}]}),
        Special::StringList => json!(["a", "b"]),
        Special::SchemaOrBool => json!(false),
        Special::SchemaOrStringArray => json!(["x", "y"]),
        Special::SchemaOrArray => json!({"type": "string"}),
    }
}

/// The path of the first member where `a` and `b` differ.
fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .find_map(|(k, v)| match y.get(k) {
                Some(w) => first_difference(&format!("{path}.{k}"), v, w),
                None => Some(format!("{path}.{k} (missing)")),
            })
            .or_else(|| {
                y.keys()
                    .find(|k| !x.contains_key(*k))
                    .map(|k| format!("{path}.{k} (extra)"))
            }),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(&format!("{path}[{i}]"), v, w)),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} vs {b}")),
    }
}

#[test]
fn every_kind_round_trips_with_every_field_set() {
    for kind in &KINDS {
        let mut obj = Map::new();
        obj.insert("apiVersion".into(), json!(kind.api_version));
        obj.insert("kind".into(), json!(kind.kind));
        sample_object(kind.message, 0, &mut obj);
        if let (Some(item_kind), Some(Value::Array(items))) =
            (kind.kind.strip_suffix("List"), obj.get_mut("items"))
        {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                item.insert("apiVersion".into(), json!(kind.api_version));
                item.insert("kind".into(), json!(item_kind));
            }
        }
        let value = Value::Object(obj);
        let bytes =
            encode(&value).unwrap_or_else(|e| panic!("{} {}: {e}", kind.api_version, kind.kind));
        let back =
            decode(&bytes).unwrap_or_else(|e| panic!("{} {}: {e}", kind.api_version, kind.kind));
        if let Some(path) = first_difference("", &value, &back) {
            panic!("{} {}: differs at {path}", kind.api_version, kind.kind);
        }
    }
}

#[test]
fn kinds_are_sorted_for_lookup() {
    assert!(KINDS
        .windows(2)
        .all(|w| (w[0].api_version, w[0].kind) < (w[1].api_version, w[1].kind)));
    for kind in &KINDS {
        assert!(crate::supports(kind.api_version, kind.kind));
    }
    assert!(crate::supports("apps/v1", "DeploymentList"));
    assert!(
        crate::supports("v1", "Status"),
        "meta kinds resolve under any group version"
    );
    assert!(!crate::supports("example.com/v1", "Widget"));
}
