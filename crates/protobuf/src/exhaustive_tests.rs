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
        // Decoding fills in required objects and reads back the zeros of
        // always-written ones, so the sample has them too.
        Ty::Message(idx) if depth >= SAMPLE_DEPTH => {
            return left_out(f, || {
                (f.required && MESSAGES[idx].special == Special::None).then(|| empty_object(idx))
            });
        }
        Ty::Message(idx) => sample_message(idx, depth + 1),
    })
}

/// What decoding an empty message yields: the zeros of its always-written
/// members (the encoder writes them) and its required members, empty.
fn empty_object(idx: usize) -> Value {
    let mut map = Map::new();
    for f in MESSAGES[idx].fields {
        if let (true, Ty::Message(inner)) = (f.inline, f.ty) {
            if let Value::Object(members) = empty_object(inner) {
                map.extend(members);
            }
            continue;
        }
        let required = || {
            Some(match (f.shape, f.ty) {
                (Shape::Repeated, _) => json!([]),
                (Shape::Map, _) => json!({}),
                (_, Ty::String | Ty::Bytes) => json!(""),
                (_, Ty::Int32 | Ty::Int64) => json!(0),
                (_, Ty::Double) => json!(0.0),
                (_, Ty::Bool) => json!(false),
                (_, Ty::Message(m)) if MESSAGES[m].special == Special::None => empty_object(m),
                (_, Ty::Message(_)) => return None,
            })
        };
        if let Some(v) = left_out(f, || f.required.then(required).flatten()) {
            map.insert(f.json.to_owned(), v);
        }
    }
    Value::Object(map)
}

/// What decoding gives for field `f` when the JSON encoded leaves it out:
/// for an always-written field, its zero read back (empty strings and the
/// zeros of `omit_zero` fields are dropped unless required); otherwise
/// `other()`.
fn left_out(f: &FieldDesc, other: impl FnOnce() -> Option<Value>) -> Option<Value> {
    if !f.always {
        return other();
    }
    match f.ty {
        Ty::String | Ty::Bytes => (f.required || f.keep_empty).then(|| json!("")),
        Ty::Int32 | Ty::Int64 => (!f.omit_zero).then(|| json!(0)),
        Ty::Bool => (!f.omit_zero).then(|| json!(false)),
        Ty::Double => Some(json!(0)),
        Ty::Message(m) => match MESSAGES[m].special {
            Special::None => Some(empty_object(m)),
            Special::IntOrString => Some(json!(0)),
            Special::Quantity => Some(json!("0")),
            _ => None,
        },
    }
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

/// Random values for the property test: any subset of fields, any values
/// of each field's type (zero, negative and extreme numbers, non-ASCII and
/// escaped text, several list elements and map entries, random embedded
/// JSON), so the round trip is checked beyond one hand-picked sample.
pub(crate) mod random {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use serde_json::{json, Map, Value};

    use super::{empty_object, first_difference, left_out};
    use crate::generated::{KINDS, MESSAGES};
    use crate::schema::{FieldDesc, Shape, Special, Ty};
    use crate::{decode, encode};

    const DEPTH: usize = 5;
    const TEXT: &[&str] = &[
        "a",
        "ü-ñ",
        "with \"quotes\"\n",
        "日本",
        "x y",
        "\u{1F600}",
        "0",
    ];

    fn text(rng: &mut StdRng) -> String {
        let mut s = String::new();
        for _ in 0..rng.random_range(1..4) {
            s.push_str(TEXT[rng.random_range(0..TEXT.len())]);
        }
        s
    }

    pub(crate) fn object(rng: &mut StdRng, idx: usize, depth: usize, out: &mut Map<String, Value>) {
        for f in MESSAGES[idx].fields {
            if let (true, Ty::Message(inner)) = (f.inline, f.ty) {
                object(rng, inner, depth + 1, out);
                continue;
            }
            if !f.required && rng.random_bool(0.5) {
                if let Some(v) = left_out(f, || None) {
                    out.insert(f.json.to_owned(), v);
                }
                continue;
            }
            let mut one = || value(rng, f, depth);
            let v = match f.shape {
                Shape::Single => one(),
                Shape::Repeated => (0..3)
                    .map(|_| one())
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Array),
                Shape::Map => (0..3)
                    .map(|i| one().map(|v| (format!("key-{i}"), v)))
                    .collect::<Option<Map<_, _>>>()
                    .map(Value::Object),
            };
            match v {
                Some(v) => out.insert(f.json.to_owned(), v),
                None if f.required => out.insert(f.json.to_owned(), required_empty(f)),
                None => None,
            };
        }
    }

    fn required_empty(f: &FieldDesc) -> Value {
        match (f.shape, f.ty) {
            (Shape::Repeated, _) => json!([]),
            (Shape::Map, _) => json!({}),
            (_, Ty::Message(m)) => empty_object(m),
            _ => Value::Null,
        }
    }

    fn value(rng: &mut StdRng, f: &FieldDesc, depth: usize) -> Option<Value> {
        Some(match f.ty {
            Ty::String => json!(text(rng)),
            Ty::Bytes => json!(["AA==", "AAEC/w==", "aGVsbG8gd29ybGQ="][rng.random_range(0..3)]),
            // A zero of an `omit_zero` field is dropped on decoding, as
            // upstream's JSON leaves it out; that is checked elsewhere.
            Ty::Int32 if f.omit_zero => json!(rng.random::<i32>() | 1),
            Ty::Int64 if f.omit_zero => json!(rng.random::<i64>() | 1),
            Ty::Bool if f.omit_zero => json!(true),
            Ty::Int32 => json!(rng.random::<i32>()),
            Ty::Int64 => json!(rng.random::<i64>()),
            Ty::Bool => json!(rng.random::<bool>()),
            // Whole doubles print as integers (as Go does), so stay fractional.
            Ty::Double => json!(f64::from(rng.random::<i32>()) / 8.0 + 0.0625),
            // Deep enough: only required objects, empty (leaf types go on).
            Ty::Message(idx) if depth >= DEPTH && MESSAGES[idx].special == Special::None => {
                return left_out(f, || f.required.then(|| empty_object(idx)));
            }
            Ty::Message(idx) => message(rng, idx, depth + 1),
        })
    }

    fn message(rng: &mut StdRng, idx: usize, depth: usize) -> Value {
        let secs = rng.random_range(0..4_000_000_000_i64);
        let time = chrono::DateTime::from_timestamp(secs, 0).unwrap_or_default();
        match MESSAGES[idx].special {
            Special::None => {
                let mut map = Map::new();
                object(rng, idx, depth, &mut map);
                Value::Object(map)
            }
            Special::Time => json!(time.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
            Special::MicroTime => {
                let micros = rng.random_range(0..1_000_000);
                json!(format!("{}.{micros:06}Z", time.format("%Y-%m-%dT%H:%M:%S")))
            }
            Special::IntOrString if rng.random_bool(0.5) => json!(rng.random::<i32>()),
            Special::IntOrString => json!(text(rng)),
            Special::Quantity => json!(["0", "100m", "1.5Gi", "2e3", "-4"][rng.random_range(0..5)]),
            Special::RawJson => {
                json!({"n": rng.random::<i64>(), "s": text(rng), "l": [null, true, 1.25]})
            }
            Special::StringList => json!([text(rng), text(rng)]),
            Special::SchemaOrBool => json!(rng.random::<bool>()),
            Special::SchemaOrStringArray => json!([text(rng)]),
            Special::SchemaOrArray => json!({"type": "integer", "minimum": 1.5}),
        }
    }

    #[test]
    fn random_objects_of_every_kind_round_trip() {
        let mut rng = StdRng::seed_from_u64(0x5052_4f50);
        for round in 0..20 {
            for kind in &KINDS {
                let mut obj = Map::new();
                obj.insert("apiVersion".into(), json!(kind.api_version));
                obj.insert("kind".into(), json!(kind.kind));
                object(&mut rng, kind.message, 0, &mut obj);
                if let (Some(item_kind), Some(Value::Array(items))) =
                    (kind.kind.strip_suffix("List"), obj.get_mut("items"))
                {
                    for item in items.iter_mut().filter_map(Value::as_object_mut) {
                        item.insert("apiVersion".into(), json!(kind.api_version));
                        item.insert("kind".into(), json!(item_kind));
                    }
                }
                let value = Value::Object(obj);
                let who = format!("round {round}: {} {}", kind.api_version, kind.kind);
                let bytes = encode(&value).unwrap_or_else(|e| panic!("{who}: {e}"));
                let back = decode(&bytes).unwrap_or_else(|e| panic!("{who}: {e}"));
                if let Some(path) = first_difference("", &value, &back) {
                    panic!("{who}: differs at {path}");
                }
            }
        }
    }
}
