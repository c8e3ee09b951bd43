//! Tests for ObjectMeta validation.
use super::*;
use crate::validation::{name_is_dns_subdomain, name_is_path_segment};
use serde_json::json;

fn messages(errs: &ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn create(obj: Value, namespaced: bool) -> Vec<String> {
    messages(&validate_object_meta(
        &obj,
        namespaced,
        name_is_dns_subdomain,
    ))
}

#[test]
fn valid_objects_pass() {
    assert!(create(json!({"metadata": {"name": "a", "namespace": "ns"}}), true).is_empty());
    assert!(create(json!({"metadata": {"name": "a.b-c"}}), false).is_empty());
    assert!(create(
        json!({"metadata": {
            "generateName": "web-",
            "name": "web-x2k9d",
            "namespace": "ns",
            "labels": {"app": "web", "k8s.io/part-of": ""},
            "annotations": {"Example.com/Note": "anything at all"},
            "finalizers": ["kubernetes.io/pv-protection", "orphan"],
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1", "controller": true},
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "2", "controller": false}
            ]
        }}),
        true
    )
    .is_empty());
}

#[test]
fn name_rules() {
    assert_eq!(
        create(json!({"metadata": {}}), false),
        ["metadata.name: Required value: name or generateName is required"]
    );
    assert_eq!(
        create(json!({}), false),
        ["metadata.name: Required value: name or generateName is required"]
    );
    let errs = create(json!({"metadata": {"name": "Bad_Name"}}), false);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with(
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ),
        "{}",
        errs[0]
    );
    let errs = create(
        json!({"metadata": {"generateName": "Bad-", "name": "x"}}),
        false,
    );
    assert!(
        errs[0].starts_with("metadata.generateName: Invalid value: \"Bad-\": a lowercase RFC 1123"),
        "{errs:?}"
    );
    // The lenient rule every resource gets.
    let obj = json!({"metadata": {"name": "a/b"}});
    assert_eq!(
        messages(&validate_object_meta(&obj, false, name_is_path_segment)),
        ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
    );
}

#[test]
fn namespace_rules() {
    assert_eq!(
        create(json!({"metadata": {"name": "a"}}), true),
        ["metadata.namespace: Required value"]
    );
    assert_eq!(
        create(json!({"metadata": {"name": "a", "namespace": "ns"}}), false),
        ["metadata.namespace: Forbidden: not allowed on this type"]
    );
    let errs = create(json!({"metadata": {"name": "a", "namespace": "a.b"}}), true);
    assert_eq!(
        errs,
        ["metadata.namespace: Invalid value: \"a.b\": must not contain dots"]
    );
}

#[test]
fn labels_annotations_generation() {
    let errs = create(
        json!({"metadata": {"name": "a", "generation": -1, "labels": {"-x": "ok", "y": "bad value"}}}),
        false,
    );
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert_eq!(
        errs[0],
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    );
    assert!(errs[1].starts_with("metadata.labels: Invalid value: \"-x\": name part must consist"));
    assert!(
        errs[2].starts_with("metadata.labels: Invalid value: \"bad value\": a valid label must be")
    );

    let errs = create(
        json!({"metadata": {"name": "a", "labels": {"x": 1}, "annotations": "s"}}),
        false,
    );
    assert_eq!(
        errs,
        [
            "metadata.labels[x]: Invalid value: 1: must be of type string",
            "metadata.annotations: Invalid value: \"s\": must be of type object",
        ]
    );

    let big = "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
    let errs = create(
        json!({"metadata": {"name": "a", "annotations": {"k": big}}}),
        false,
    );
    assert_eq!(
        errs,
        ["metadata.annotations: Too long: may not be more than 262144 bytes"]
    );
    let exact = "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES - 1);
    assert!(create(
        json!({"metadata": {"name": "a", "annotations": {"k": exact}}}),
        false
    )
    .is_empty());
    let errs = create(
        json!({"metadata": {"name": "a", "annotations": {"a b": ""}}}),
        false,
    );
    assert!(errs[0].starts_with("metadata.annotations: Invalid value: \"a b\": name part"));
}

#[test]
fn owner_references_and_finalizers() {
    let errs = create(
        json!({"metadata": {"name": "a", "ownerReferences": [
            {},
            {"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u"},
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"},
            {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true}
        ]}}),
        false,
    );
    assert_eq!(
        errs[..4],
        [
            "metadata.ownerReferences[0].apiVersion: Required value: must not be empty",
            "metadata.ownerReferences[0].kind: Required value: must not be empty",
            "metadata.ownerReferences[0].name: Required value: must not be empty",
            "metadata.ownerReferences[0].uid: Required value: must not be empty",
        ]
    );
    assert_eq!(errs[4], "metadata.ownerReferences[1].apiVersion: Invalid value: \"a/b/c\": must be <group>/<version> or <version>");
    assert!(
        errs[5].starts_with("metadata.ownerReferences[2]: Invalid value: {"),
        "{}",
        errs[5]
    );
    assert!(
        errs[5].ends_with(": /v1, Kind=Event is disallowed from being an owner"),
        "{}",
        errs[5]
    );
    assert!(errs[6].ends_with("Only one reference can have Controller set to true. Found \"true\" in references for A/a and B/b"), "{}", errs[6]);
    assert_eq!(errs.len(), 7);

    let errs = create(
        json!({"metadata": {"name": "a", "finalizers": ["a/b/c", "orphan", "foregroundDeletion"]}}),
        false,
    );
    assert_eq!(errs.len(), 2);
    assert!(errs[0].starts_with("metadata.finalizers: Invalid value: \"a/b/c\": a valid label key"));
    assert_eq!(
        errs[1],
        "metadata.finalizers: Invalid value: [\"a/b/c\",\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set"
    );
}

fn stored() -> Value {
    json!({"metadata": {
        "name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5",
        "generation": 2, "creationTimestamp": "2024-01-01T00:00:00Z",
        "finalizers": ["f1"]
    }})
}

#[test]
fn update_accepts_unchanged_identity() {
    let mut new = stored();
    new["metadata"]["labels"] = json!({"x": "y"});
    new["metadata"]["generation"] = json!(3);
    assert!(validate_object_meta_update(&new, &stored()).is_empty());
}

#[test]
fn update_rejects_changes_to_immutable_fields() {
    let new = json!({"metadata": {
        "name": "b", "namespace": "other", "uid": "u2", "resourceVersion": "5",
        "generation": 1, "creationTimestamp": "2025-01-01T00:00:00Z",
        "deletionGracePeriodSeconds": 30
    }});
    assert_eq!(
        messages(&validate_object_meta_update(&new, &stored())),
        [
            "metadata.generation: Invalid value: 1: must not be decremented",
            "metadata.name: Invalid value: \"b\": field is immutable",
            "metadata.namespace: Invalid value: \"other\": field is immutable",
            "metadata.uid: Invalid value: \"u2\": field is immutable",
            "metadata.creationTimestamp: Invalid value: \"2025-01-01T00:00:00Z\": field is immutable",
            "metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable",
        ]
    );
    // Removing a field shows its zero value.
    let mut new = stored();
    new["metadata"].as_object_mut().map(|m| m.remove("uid"));
    new["metadata"]
        .as_object_mut()
        .map(|m| m.remove("creationTimestamp"));
    assert_eq!(
        messages(&validate_object_meta_update(&new, &stored())),
        [
            "metadata.uid: Invalid value: \"\": field is immutable",
            "metadata.creationTimestamp: Invalid value: null: field is immutable",
        ]
    );
}

#[test]
fn update_requires_resource_version_and_blocks_new_finalizers_while_deleting() {
    let mut new = stored();
    new["metadata"]["resourceVersion"] = json!("");
    assert_eq!(
        messages(&validate_object_meta_update(&new, &stored())),
        ["metadata.resourceVersion: Invalid value: \"\": must be specified for an update"]
    );

    let mut old = stored();
    old["metadata"]["deletionTimestamp"] = json!("2024-02-01T00:00:00Z");
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!(["f1", "z", "b", "z"]);
    assert_eq!(
        messages(&validate_object_meta_update(&new, &old)),
        ["metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b\", \"z\"}"]
    );
    // Removing finalizers while deleting is fine.
    new["metadata"]["finalizers"] = json!([]);
    assert!(validate_object_meta_update(&new, &old).is_empty());
}

#[test]
fn generated_names() {
    let mut n = 0u32;
    let name = generate_name("web-", || {
        n += 1;
        n
    });
    assert_eq!(name, "web-cdfgh");
    let long = "a".repeat(70);
    let name = generate_name(&long, || 0);
    assert_eq!(name.len(), 63);
    assert!(name.ends_with("abbbbb"));
    // Never splits a multi-byte character.
    let wide = "é".repeat(40);
    assert_eq!(generate_name(&wide, || 26).len(), 58 + 5);
    assert!(generate_name(&wide, || 26).ends_with("99999"));
}
