//! `encode_checked`'s verdict against decoding itself: objects of every
//! kind that round trip are found exact, and whatever is found exact
//! decodes to the very value encoded, over random objects with the edits
//! decoding does not give back (empty lists and maps, nulls, unknown
//! members, zeros, whole doubles, times in other forms, empty quantities
//! and schema arrays, fields removed) sprinkled in.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use crate::exhaustive_tests::random;
use crate::generated::{KINDS, MESSAGES};
use crate::schema::{FieldDesc, Shape, Special, Ty};
use crate::{decode, encode_checked, ProtobufError};

/// The kinds whose encodings are checked (items of lists decode with type
/// fields their encoding does not carry).
fn checked_kinds() -> impl Iterator<Item = &'static crate::schema::KindDesc> {
    KINDS
        .iter()
        .filter(|k| !k.kind.ends_with("List") && k.kind != "WatchEvent")
}

fn random_object(rng: &mut StdRng, kind: &crate::schema::KindDesc) -> Value {
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(kind.api_version));
    obj.insert("kind".into(), json!(kind.kind));
    random::object(rng, kind.message, 0, &mut obj);
    Value::Object(obj)
}

fn checked(value: &Value) -> Result<(Vec<u8>, bool), ProtobufError> {
    encode_checked(value)
}

#[test]
fn objects_that_round_trip_are_found_exact() {
    let mut rng = StdRng::seed_from_u64(0x4558_4143);
    for round in 0..5 {
        for kind in checked_kinds() {
            let value = random_object(&mut rng, kind);
            let who = format!("round {round}: {} {}", kind.api_version, kind.kind);
            let (bytes, exact) = checked(&value).unwrap_or_else(|e| panic!("{who}: {e}"));
            assert_eq!(decode(&bytes).ok().as_ref(), Some(&value), "{who}");
            assert!(exact, "{who}: round trips but is not found exact");
        }
    }
}

#[test]
fn lists_and_watch_events_are_never_exact() {
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {},
                      "items": [{"metadata": {"name": "a"}}]});
    assert_eq!(checked(&list).map(|(_, exact)| exact), Ok(false));
    let event = json!({"apiVersion": "v1", "kind": "WatchEvent", "type": "ADDED"});
    assert_eq!(checked(&event).map(|(_, exact)| exact), Ok(false));
}

/// One edit decoding may not give back, for field `f` of an object.
fn edit(rng: &mut StdRng, f: &FieldDesc, obj: &mut Map<String, Value>) {
    let name = f.json.to_owned();
    let v = match rng.random_range(0..4) {
        0 => {
            obj.remove(&name);
            return;
        }
        1 => Value::Null,
        2 => {
            obj.insert("unknownMember".into(), json!(1));
            return;
        }
        _ => match (f.shape, f.ty) {
            (Shape::Repeated, _) => json!([]),
            (Shape::Map, _) if rng.random_bool(0.5) => json!({}),
            (Shape::Map, _) => json!({"k": null}),
            (_, Ty::String | Ty::Bytes) => json!(""),
            (_, Ty::Int32 | Ty::Int64) => json!(0),
            (_, Ty::Bool) => json!(false),
            (_, Ty::Double) => {
                [json!(0), json!(2.0), json!(3), json!(-0.0)][rng.random_range(0..4)].clone()
            }
            (_, Ty::Message(idx)) => match MESSAGES[idx].special {
                Special::Time => json!("2024-01-02T04:04:05.5+01:00"),
                Special::MicroTime => json!("2024-01-02T03:04:05Z"),
                Special::Quantity => json!(""),
                Special::IntOrString => json!(0),
                Special::RawJson => json!({}),
                Special::StringList | Special::SchemaOrArray | Special::SchemaOrStringArray => {
                    json!([])
                }
                Special::SchemaOrBool => json!(true),
                Special::None => json!({}),
            },
        },
    };
    obj.insert(name, v);
}

/// Edits some fields of message `idx` (the JSON object `v`) and of the
/// messages within.
fn sprinkle(rng: &mut StdRng, idx: usize, v: &mut Value) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    for f in MESSAGES[idx].fields {
        if let (true, Ty::Message(inner)) = (f.inline, f.ty) {
            let mut members = Value::Object(std::mem::take(obj));
            sprinkle(rng, inner, &mut members);
            if let Value::Object(members) = members {
                *obj = members;
            }
            continue;
        }
        if rng.random_bool(0.03) {
            edit(rng, f, obj);
            continue;
        }
        let Ty::Message(inner) = f.ty else { continue };
        if MESSAGES[inner].special != Special::None {
            continue;
        }
        match obj.get_mut(f.json) {
            Some(Value::Array(items)) => items.iter_mut().for_each(|i| sprinkle(rng, inner, i)),
            Some(Value::Object(entries)) if f.shape == Shape::Map => {
                entries.values_mut().for_each(|e| sprinkle(rng, inner, e));
            }
            Some(member) => sprinkle(rng, inner, member),
            None => {}
        }
    }
}

#[test]
fn what_is_found_exact_decodes_to_the_value_encoded() {
    let mut rng = StdRng::seed_from_u64(0x4544_4954);
    let (mut exact_count, mut reshaped) = (0, 0);
    for round in 0..20 {
        for kind in checked_kinds() {
            let mut value = random_object(&mut rng, kind);
            sprinkle(&mut rng, kind.message, &mut value);
            let Ok((bytes, exact)) = checked(&value) else {
                continue; // an edit the encoder refuses
            };
            let who = format!("round {round}: {} {}", kind.api_version, kind.kind);
            let back = decode(&bytes).unwrap_or_else(|e| panic!("{who}: {e}"));
            if exact {
                exact_count += 1;
                assert_eq!(back, value, "{who}: found exact, decodes to another value");
            } else if back != value {
                reshaped += 1;
            }
        }
    }
    // Both verdicts were reached, most edits being found out.
    assert!(
        exact_count > 100 && reshaped > 100,
        "{exact_count} {reshaped}"
    );
}

/// `value` as decoding gives it back (which is found exact), with
/// `member` of the object at `pointer` set to `to` (`None`: removed).
fn edited(value: &Value, pointer: &str, member: &str, to: Option<Value>) -> Value {
    let bytes = crate::encode(value).unwrap_or_else(|e| panic!("{e}"));
    let mut base = decode(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(checked(&base).map(|(_, exact)| exact), Ok(true), "{base}");
    let Some(Value::Object(obj)) = base.pointer_mut(pointer) else {
        panic!("no object at {pointer} in {base}");
    };
    match to {
        Some(to) => obj.insert(member.to_owned(), to),
        None => obj.remove(member),
    };
    base
}

fn exact(value: &Value) -> bool {
    checked(value).unwrap_or_else(|e| panic!("{e}")).1
}

#[test]
fn edge_cases_of_a_secret() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": "s", "creationTimestamp": "2024-01-02T03:04:05Z"},
                        "data": {"k": "AAEC"}, "type": "Opaque"});
    let edit = |pointer: &str, member: &str, to: Value| edited(&secret, pointer, member, Some(to));
    assert!(
        exact(&edit("", "immutable", json!(false))),
        "a pointer keeps false"
    );
    assert!(
        exact(&edit("/data", "empty", json!(""))),
        "an empty map value is kept"
    );
    assert!(!exact(&edit("", "data", json!({}))), "empty map");
    assert!(!exact(&edit("/data", "k", Value::Null)), "null map value");
    assert!(
        !exact(&edit("", "type", json!(""))),
        "empty optional string"
    );
    assert!(!exact(&edit("", "stringData", Value::Null)), "null");
    assert!(!exact(&edit("", "extra", json!(1))), "unknown member");
    assert!(
        !exact(&edit("/metadata", "extra", json!({}))),
        "nested unknown member"
    );
    assert!(
        !exact(&edit("/metadata", "finalizers", json!([]))),
        "empty list"
    );
    assert!(
        exact(&edit("/metadata", "finalizers", json!([""]))),
        "an empty item is kept"
    );
    let time = "2024-01-02T03:04:05.000Z";
    assert!(
        !exact(&edit("/metadata", "creationTimestamp", json!(time))),
        "time's form"
    );
    assert!(exact(&edit("/metadata", "generation", json!(3))));
    assert!(
        !exact(&edit("/metadata", "generation", json!(0))),
        "omit_zero 0"
    );
}

#[test]
fn edge_cases_of_a_pod() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "c", "image": "i",
                                              "resources": {"limits": {"cpu": "1"}}}],
                              "hostNetwork": true}});
    let edit = |pointer: &str, member: &str, to: Option<Value>| edited(&pod, pointer, member, to);
    assert!(
        !exact(&edit("/spec", "hostNetwork", Some(json!(false)))),
        "omit_zero false"
    );
    assert!(
        exact(&edit("/spec", "containers", Some(json!([])))),
        "a required list"
    );
    assert!(
        !exact(&edit("/spec", "containers", None)),
        "a required list left out"
    );
    let limits = "/spec/containers/0/resources/limits";
    assert!(
        !exact(&edit(limits, "cpu", Some(json!("")))),
        "empty quantity"
    );
    assert!(
        !exact(&edit("", "status", None)),
        "an always-written struct left out"
    );
    let cpu = Some(json!("1500m"));
    assert!(
        exact(&edit(limits, "cpu", cpu)),
        "quantities are kept as written"
    );
}

#[test]
fn edge_cases_of_doubles() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "c"},
        "spec": {"group": "g", "names": {"plural": "p", "kind": "K"}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let schema = "/spec/versions/0/schema/openAPIV3Schema";
    let minimum = |n: Value| edited(&crd, schema, "minimum", Some(n));
    assert!(exact(&minimum(json!(1))), "an integer");
    assert!(exact(&minimum(json!(-1.5))), "a fraction");
    assert!(
        !exact(&minimum(json!(1.0))),
        "a whole double reads back as 1"
    );
    assert!(
        !exact(&minimum(json!(-0.0))),
        "negative zero reads back as 0"
    );
    assert!(
        !exact(&minimum(json!(9_007_199_254_740_993_i64))),
        "beyond 2^53"
    );
    let all_of = |v: Value| edited(&crd, schema, "allOf", Some(v));
    assert!(!exact(&all_of(json!([]))), "an empty list of schemas");
    let items = |v: Value| edited(&crd, schema, "items", Some(v));
    assert!(exact(&items(json!([{"type": "string"}]))), "schemas");
    assert!(!exact(&items(json!([]))), "no schemas reads back as none");
}
