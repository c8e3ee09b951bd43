use serde_json::{json, Value};

use super::*;
use crate::fieldpath::Path;
use crate::schema::{FieldDef, ListDef, MapDef};

fn field(name: &str, ty: TypeRef) -> FieldDef {
    FieldDef::new(name, ty)
}

fn strukt(fields: Vec<FieldDef>) -> TypeDef {
    TypeDef::Struct(StructDef {
        fields,
        ..StructDef::default()
    })
}

fn list(elem: TypeRef, kind: ListKind) -> TypeRef {
    TypeRef::Inline(Box::new(TypeDef::List(ListDef { elem, kind })))
}

fn map(elem: TypeRef, atomic: bool) -> TypeRef {
    TypeRef::Inline(Box::new(TypeDef::Map(MapDef { elem, atomic })))
}

/// A small object type with every kind of list, map and struct.
pub(crate) fn schema() -> Schema {
    let mut s = Schema::new();
    s.insert(
        "Obj",
        strukt(vec![
            field("apiVersion", TypeRef::scalar()),
            field("kind", TypeRef::scalar()),
            field("metadata", TypeRef::named("Meta")),
            field("spec", TypeRef::named("Spec")),
            field("status", TypeRef::untyped()),
        ]),
    );
    s.insert(
        "Meta",
        strukt(vec![
            field("name", TypeRef::scalar()),
            field("namespace", TypeRef::scalar()),
            field("uid", TypeRef::scalar()),
            field("resourceVersion", TypeRef::scalar()),
            field("labels", map(TypeRef::scalar(), false)),
            field("annotations", map(TypeRef::scalar(), false)),
            field("finalizers", list(TypeRef::scalar(), ListKind::Set)),
            field("managedFields", list(TypeRef::untyped(), ListKind::Atomic)),
        ]),
    );
    let keys = |k: &[&str]| ListKind::Map {
        keys: k.iter().map(|s| (*s).to_owned()).collect(),
    };
    s.insert(
        "Spec",
        strukt(vec![
            field("replicas", TypeRef::scalar()),
            field(
                "containers",
                list(TypeRef::named("Container"), keys(&["name"])),
            ),
            field("args", list(TypeRef::scalar(), ListKind::Atomic)),
            field("selector", TypeRef::named("Selector")),
            field("config", map(TypeRef::scalar(), true)),
            field("template", TypeRef::named("Template")),
        ]),
    );
    s.insert(
        "Template",
        strukt(vec![
            field("labels", map(TypeRef::scalar(), false)),
            field("note", TypeRef::scalar()),
        ]),
    );
    s.insert(
        "Container",
        strukt(vec![
            field("name", TypeRef::scalar()),
            field("image", TypeRef::scalar()),
            field(
                "ports",
                list(
                    TypeRef::named("test.core.v1.ContainerPort"),
                    keys(&["containerPort", "protocol"]),
                ),
            ),
        ]),
    );
    s.insert(
        "test.core.v1.ContainerPort",
        strukt(vec![
            field("containerPort", TypeRef::scalar()),
            field("protocol", TypeRef::scalar()),
            field("name", TypeRef::scalar()),
        ]),
    );
    s.insert(
        "Selector",
        TypeDef::Struct(StructDef {
            fields: vec![field("matchLabels", map(TypeRef::scalar(), false))],
            atomic: true,
            other_fields: None,
        }),
    );
    s
}

pub(crate) fn root() -> TypeRef {
    TypeRef::named("Obj")
}

fn paths(set: &Set) -> Vec<String> {
    set.paths().iter().map(Path::to_string).collect()
}

#[test]
fn field_set_follows_the_schema() {
    let s = schema();
    let t = Typer::new(&s);
    let root = root();
    let obj = json!({
        "metadata": {"name": "a", "labels": {"app": "x"}, "finalizers": ["f1"]},
        "spec": {
            "replicas": 2,
            "containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}],
            "args": ["a", "b"],
            "selector": {"matchLabels": {"app": "x"}},
            "config": {"k": "v"},
            "template": {},
        },
        "status": {"ready": true, "conditions": [{"type": "A"}]},
    });
    assert_eq!(
        paths(&t.field_set(Ty::Ref(&root), &obj)),
        vec![
            ".metadata.name",
            ".metadata.finalizers[=\"f1\"]",
            ".metadata.labels.app",
            ".spec.args",
            ".spec.config",
            ".spec.replicas",
            ".spec.selector",
            ".spec.template",
            ".spec.containers[name=\"web\"]",
            ".spec.containers[name=\"web\"].image",
            ".spec.containers[name=\"web\"].name",
            // The port's protocol key defaults to TCP, as upstream's schema says.
            ".spec.containers[name=\"web\"].ports[containerPort=80,protocol=\"TCP\"]",
            ".spec.containers[name=\"web\"].ports[containerPort=80,protocol=\"TCP\"].containerPort",
            // Untyped: maps granular (their keys are members), lists atomic.
            ".status.conditions",
            ".status.ready",
        ]
    );
}

#[test]
fn validate_reports_undeclared_fields_and_bad_elements() {
    let s = schema();
    let t = Typer::new(&s);
    let root = root();
    let undeclared = t
        .validate(
            Ty::Ref(&root),
            &json!({"spec": {"replicas": 1, "bogus": 1, "more": 2}, "extra": true}),
        )
        .expect_err("undeclared");
    // Upstream stops at the first undeclared field of each map.
    assert_eq!(
        undeclared.to_string(),
        "errors:\n  .spec.bogus: field not declared in schema\n  .extra: field not declared in schema"
    );
    let keyless = t
        .validate(
            Ty::Ref(&root),
            &json!({"spec": {"containers": [{"image": "x"}]}}),
        )
        .expect_err("keyless");
    assert_eq!(
        keyless.to_string(),
        ".spec.containers: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)"
    );
    let dup = t
        .validate(
            Ty::Ref(&root),
            &json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}),
        )
        .expect_err("duplicate");
    assert_eq!(
        dup.to_string(),
        ".spec.containers: duplicate entries for key [name=\"a\"]"
    );
    assert!(t
        .validate(Ty::Untyped, &json!({"anything": [1, {"x": 2}]}))
        .is_ok());
}

#[test]
fn merge_by_key_value_and_whole() {
    let s = schema();
    let t = Typer::new(&s);
    let root = root();
    let live = json!({
        "metadata": {"labels": {"a": "1"}, "finalizers": ["x", "y"]},
        "spec": {
            "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}],
            "args": ["1", "2"],
            "selector": {"matchLabels": {"k": "v", "k2": "v2"}},
            "config": {"p": "1", "q": "2"},
        },
    });
    let config = json!({
        "metadata": {"labels": {"b": "2"}, "finalizers": ["z", "x"]},
        "spec": {
            "containers": [{"name": "c", "image": "c:1"}, {"name": "b", "image": "b:2"}],
            "args": ["3"],
            "selector": {"matchLabels": {"k": "w"}},
            "config": {"p": "9"},
        },
    });
    let merged = t.merge(Ty::Ref(&root), &live, &config).expect("merges");
    assert_eq!(
        merged,
        json!({
            "metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["z", "x", "y"]},
            "spec": {
                "containers": [
                    {"name": "a", "image": "a:1"},
                    {"name": "c", "image": "c:1"},
                    {"name": "b", "image": "b:2"},
                ],
                "args": ["3"],
                "selector": {"matchLabels": {"k": "w"}},
                "config": {"p": "9"},
            },
        })
    );
}

#[test]
fn merge_rejects_duplicates_in_the_configuration() {
    let s = schema();
    let t = Typer::new(&s);
    let root = root();
    let err = t
        .merge(
            Ty::Ref(&root),
            &json!({}),
            &json!({"metadata": {"finalizers": ["a", "a"]}}),
        )
        .expect_err("duplicate");
    assert_eq!(
        err.to_string(),
        ".metadata.finalizers: duplicate entries for key [=\"a\"]"
    );
}

#[test]
fn compare_reports_added_modified_removed() {
    let s = schema();
    let t = Typer::new(&s);
    let root = root();
    let old = json!({"metadata": {"labels": {"a": "1", "b": "2"}},
        "spec": {"replicas": 1, "containers": [{"name": "a", "image": "1"}]}});
    let new = json!({"metadata": {"labels": {"a": "9", "c": "3"}},
        "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}});
    let c = t.compare(Ty::Ref(&root), &old, &new);
    assert_eq!(paths(&c.modified), vec![".metadata.labels.a"]);
    assert_eq!(
        paths(&c.added),
        vec![
            ".metadata.labels.c",
            ".spec.containers[name=\"b\"]",
            ".spec.containers[name=\"b\"].name"
        ]
    );
    assert_eq!(
        paths(&c.removed),
        vec![".metadata.labels.b", ".spec.replicas"]
    );
    assert!(t.compare(Ty::Ref(&root), &old, &old).is_same());
}

#[test]
fn remove_drops_fields_and_what_is_left_empty() {
    let s = schema();
    let t = Typer::new(&s);
    let root = root();
    let obj = json!({"metadata": {"name": "n", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}});
    let b = PathElement::key(vec![("name".into(), json!("b"))]);
    let a = PathElement::key(vec![("name".into(), json!("a"))]);
    let mut set = Set::new();
    set.insert(&Path::fields(&["metadata", "labels", "a"]).0);
    set.insert(&[
        PathElement::field("spec"),
        PathElement::field("containers"),
        b,
    ]);
    set.insert(&[
        PathElement::field("spec"),
        PathElement::field("containers"),
        a,
        PathElement::field("image"),
    ]);
    assert_eq!(
        t.remove(Ty::Ref(&root), &obj, &set),
        Some(json!({"metadata": {"name": "n"}, "spec": {"containers": [{"name": "a"}]}}))
    );
}

#[test]
fn named_fields_become_members() {
    let s = schema();
    let t = Typer::new(&s);
    let root = root();
    let mut set = Set::new();
    set.insert(&Path::fields(&["spec", "template", "labels", "x"]).0);
    let ensured = t.ensure_named_fields_are_members(Ty::Ref(&root), &set);
    assert_eq!(
        paths(&ensured),
        vec![
            ".spec",
            ".spec.template",
            ".spec.template.labels",
            ".spec.template.labels.x"
        ]
    );
    let untyped = t.ensure_named_fields_are_members(Ty::Untyped, &set);
    assert_eq!(untyped, set);
}

#[test]
fn untyped_values_are_deduced() {
    let s = Schema::new();
    let t = Typer::new(&s);
    let live = json!({"a": {"x": 1}, "l": [1, 2]});
    let merged = t
        .merge(Ty::Untyped, &live, &json!({"a": {"y": 2}, "l": [3]}))
        .expect("merges");
    assert_eq!(merged, json!({"a": {"x": 1, "y": 2}, "l": [3]}));
    let set: Vec<String> = paths(&t.field_set(Ty::Untyped, &merged));
    assert_eq!(set, vec![".a", ".l", ".a.x", ".a.y"]);
    let value: Value = json!(null);
    assert_eq!(t.field_set(Ty::Untyped, &value), Set::new());
}

/// An object with `n` labels in descending key order and `n` finalizers,
/// the first of which appears twice.
fn large_object(n: usize) -> Value {
    let labels: serde_json::Map<String, Value> = (0..n)
        .rev()
        .map(|i| (format!("k{i:06}"), json!("v")))
        .collect();
    let mut finalizers: Vec<Value> = (0..n).map(|i| json!(format!("f{i:06}"))).collect();
    finalizers.push(json!("f000000"));
    json!({"metadata": {"labels": labels, "finalizers": finalizers}})
}

#[test]
fn field_sets_and_comparisons_of_large_objects_take_n_log_n() {
    let s = schema();
    let t = Typer::new(&s);
    let root = root();
    let n = 50_000;
    let obj = large_object(n);
    let start = std::time::Instant::now();
    let set = t.field_set(Ty::Ref(&root), &obj);
    let compared = t.compare(Ty::Ref(&root), &json!({}), &obj);
    let took = start.elapsed();
    // Inserting in place and comparing every pair of finalizers took
    // minutes here.
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    let labels = Path::fields(&["metadata", "labels"]);
    let finalizers = Path::fields(&["metadata", "finalizers"]);
    let at = |base: &Path, pe: PathElement| {
        let mut p = base.0.clone();
        p.push(pe);
        p
    };
    assert!(set.has(&at(&labels, PathElement::field("k000007"))));
    assert!(compared
        .added
        .has(&at(&labels, PathElement::field("k000007"))));
    assert!(set.has(&at(&finalizers, PathElement::Value(json!("f000001")))));
    // The duplicated finalizer is owned as a whole.
    assert!(set.has(&at(&finalizers, PathElement::Value(json!("f000000")))));
    assert_eq!(set.paths().len(), 2 * n);
}
