use serde_json::json;

use super::*;

fn f(name: &str) -> PathElement {
    PathElement::field(name)
}

fn set_of(paths: &[Vec<PathElement>]) -> Set {
    let mut s = Set::new();
    for p in paths {
        s.insert(p);
    }
    s
}

#[test]
fn fields_v1_encoding_is_upstreams() {
    let s = set_of(&[
        vec![f("metadata"), f("labels")],
        vec![f("metadata"), f("labels"), f("app")],
        vec![f("spec"), f("replicas")],
    ]);
    assert_eq!(
        s.to_fields_v1().to_string(),
        r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{}}}"#
    );
}

#[test]
fn key_elements_serialize_with_sorted_field_names() {
    let key = PathElement::key(vec![
        ("protocol".into(), json!("TCP")),
        ("containerPort".into(), json!(80)),
    ]);
    assert_eq!(
        key.serialize(),
        r#"k:{"containerPort":80,"protocol":"TCP"}"#
    );
    assert_eq!(key.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
    assert_eq!(
        PathElement::Value(json!("a<b")).serialize(),
        r#"v:"a\u003cb""#
    );
    assert_eq!(PathElement::Index(3).serialize(), "i:3");
    assert_eq!(PathElement::Value(json!(2.0)).to_string(), "[=2]");
}

#[test]
fn fields_v1_round_trips() {
    let doc = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}},
        }}}},
        "f:finalizers": {"v:\"a\"": {}, "v:\"b\"": {}},
    });
    let set = Set::from_fields_v1(&doc).expect("valid");
    assert!(set.has(&[f("metadata"), f("labels")]));
    assert!(set.has(&[f("metadata"), f("labels"), f("app")]));
    assert!(!set.has(&[f("metadata")]));
    let nginx = PathElement::key(vec![("name".into(), json!("nginx"))]);
    let image = [
        f("spec"),
        f("template"),
        f("spec"),
        f("containers"),
        nginx.clone(),
        f("image"),
    ];
    assert!(set.has(&image));
    assert!(set.has(&[f("finalizers"), PathElement::Value(json!("b"))]));
    // Fields sort before values, so the encoding puts f:metadata first.
    let again = Set::from_fields_v1(&set.to_fields_v1()).expect("valid");
    assert_eq!(again, set);
    assert_eq!(set.len(), 7);
}

#[test]
fn unknown_element_types_are_skipped_and_bad_ones_rejected() {
    let set = Set::from_fields_v1(&json!({"x:whatever": {}, "f:a": {}})).expect("valid");
    assert_eq!(set.paths(), vec![Path::fields(&["a"])]);
    assert!(Set::from_fields_v1(&json!({"nocolon": {}})).is_err());
    assert!(Set::from_fields_v1(&json!({"i:x": {}})).is_err());
    assert!(Set::from_fields_v1(&json!({"f:a": 1})).is_err());
}

#[test]
fn set_algebra() {
    let a = set_of(&[vec![f("a")], vec![f("b"), f("c")], vec![f("b"), f("d")]]);
    let b = set_of(&[vec![f("b"), f("c")], vec![f("e")]]);
    assert_eq!(
        a.union(&b).paths(),
        vec![
            Path::fields(&["a"]),
            Path::fields(&["e"]),
            Path::fields(&["b", "c"]),
            Path::fields(&["b", "d"]),
        ]
    );
    assert_eq!(a.intersection(&b).paths(), vec![Path::fields(&["b", "c"])]);
    assert_eq!(
        a.difference(&b).paths(),
        vec![Path::fields(&["a"]), Path::fields(&["b", "d"])]
    );
    // A member removes only itself from a difference, its subtree too from
    // a recursive difference.
    let prefix = set_of(&[vec![f("b")]]);
    assert_eq!(a.difference(&prefix), a);
    assert_eq!(
        a.recursive_difference(&prefix).paths(),
        vec![Path::fields(&["a"])]
    );
    assert!(a.difference(&a).is_empty());
}

#[test]
fn elements_order_as_upstream() {
    let mut items = [
        PathElement::Index(0),
        PathElement::Value(json!("x")),
        PathElement::key(vec![("port".into(), json!(8080))]),
        PathElement::key(vec![("port".into(), json!(80))]),
        f("z"),
        f("a"),
    ];
    items.sort();
    let shown: Vec<String> = items.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        vec![".a", ".z", "[port=80]", "[port=8080]", "[=\"x\"]", "[0]"]
    );
    assert_eq!(compare_values(&json!(1), &json!(1.5)), Ordering::Less);
    assert_eq!(compare_values(&json!("a"), &json!(true)), Ordering::Less);
    assert_eq!(
        compare_values(&json!({"a": 1}), &json!({"a": 1, "b": 2})),
        Ordering::Less
    );
    assert_eq!(compare_values(&json!(null), &json!({})), Ordering::Greater);
}

#[test]
fn paths_print_as_upstream() {
    let p = Path::new(vec![
        f("spec"),
        f("containers"),
        PathElement::key(vec![("name".into(), json!("web"))]),
        f("image"),
    ]);
    assert_eq!(p.to_string(), r#".spec.containers[name="web"].image"#);
}

/// Found by fuzzing (fuzz/fuzz_targets/field_path.rs): a value key holding
/// a long number reads as the nearest float, as Go's `strconv.ParseFloat`
/// does, and writes back to a key that reads to the same element.
#[test]
fn value_keys_with_long_numbers_read_correctly_rounded() {
    let key = "v:1111111000003585777579240863971";
    let Ok(Some(element)) = PathElement::deserialize(key) else {
        panic!("{key} does not parse");
    };
    assert_eq!(element, PathElement::Value(json!(1.1111110000035857e30)));
    let printed = element.serialize();
    assert_eq!(PathElement::deserialize(&printed), Ok(Some(element)));
}

#[test]
fn fields_v1_with_many_keys_in_reverse_order_reads_in_n_log_n() {
    // A managedFields entry of a large request: keys in descending order
    // (serde_json keeps the order sent), half of them with children.
    let n = 100_000;
    let mut doc = serde_json::Map::new();
    for i in (0..n).rev() {
        let child = if i % 2 == 0 {
            json!({".": {}, "f:x": {}})
        } else {
            json!({})
        };
        doc.insert(format!("f:k{i:06}"), child);
    }
    let doc = Value::Object(doc);
    let start = std::time::Instant::now();
    let set = Set::from_fields_v1(&doc).expect("valid");
    let took = start.elapsed();
    // Inserting each key in place took over 10 s here (debug build).
    assert!(took < std::time::Duration::from_secs(6), "{took:?}");
    assert!(set.has(&[f("k000001")]));
    assert!(set.has(&[f("k000002")]));
    assert!(set.has(&[f("k000002"), f("x")]));
    assert!(!set.has(&[f("k000001"), f("x")]));
    assert_eq!(set.to_fields_v1(), {
        let mut sorted: Vec<_> = doc.as_object().into_iter().flatten().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        Value::Object(
            sorted
                .into_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    });
}

#[test]
fn fields_v1_keys_naming_one_element_are_merged() {
    // Two spellings of the same key element, each with its own children.
    let doc = json!({
        "k:{\"a\":1,\"b\":2}": {"f:x": {}},
        "k:{\"b\":2,\"a\":1}": {".": {}, "f:y": {}},
    });
    let set = Set::from_fields_v1(&doc).expect("valid");
    let key = PathElement::key(vec![("a".into(), json!(1)), ("b".into(), json!(2))]);
    assert!(set.has(std::slice::from_ref(&key)));
    assert!(set.has(&[key.clone(), f("x")]));
    assert!(set.has(&[key, f("y")]));
}
