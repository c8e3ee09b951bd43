//! Cases from upstream's documented strategic merge patch behaviour
//! (apimachinery's strategicpatch tests and the API conventions), with a
//! small test type and with the built-in Pod and Deployment types.

use serde_json::{json, Map, Value};

use super::{apply, ErrorClass, SmpError};
use crate::builtin;
use crate::schema::Schema;

const TEST_TYPES: &str = "\
type mergeItem
 name s
 value s
 other s
 mergingList [m=name:@mergeItem merge key=name
 nonMergingList [a:@mergeItem
 mergingIntList [s:s merge
 nonMergingIntList [a:s
 simpleMap {:s
 replacingItem u replace
 retainKeysMap @retainKeysMap retainKeys
 listOfLists [a:[a:s merge
type retainKeysMap
 name s
 value s
 other s
";

fn test_schema() -> Schema {
    builtin::parse(TEST_TYPES).unwrap().schema
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn merge(original: Value, patch: Value) -> Result<Value, SmpError> {
    apply(obj(original), &obj(patch), &test_schema(), "mergeItem").map(Value::Object)
}

fn ok(original: Value, patch: Value) -> Value {
    merge(original, patch).unwrap()
}

#[test]
fn maps_merge_recursively_and_null_deletes() {
    let out = ok(
        json!({"simpleMap": {"a": "1", "b": "2"}, "value": "x", "other": "o"}),
        json!({"simpleMap": {"a": null, "c": "3"}, "value": "y", "other": null, "name": "n"}),
    );
    assert_eq!(
        out,
        json!({"simpleMap": {"b": "2", "c": "3"}, "value": "y", "name": "n"})
    );
}

#[test]
fn merging_list_of_maps_follows_set_element_order() {
    let out = ok(
        json!({"mergingList": [{"name": "1", "other": "a"}, {"name": "2", "value": "2", "other": "b"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": "4"}, {"name": "1"}, {"name": "2"}, {"name": "3"}],
            "mergingList": [{"name": "4", "value": "4"}, {"name": "3", "value": "3"}]
        }),
    );
    assert_eq!(
        out,
        json!({"mergingList": [
            {"name": "4", "value": "4"},
            {"name": "1", "other": "a"},
            {"name": "2", "value": "2", "other": "b"},
            {"name": "3", "value": "3"}
        ]})
    );
}

#[test]
fn merging_scalar_list_is_an_ordered_set() {
    let out = ok(
        json!({"mergingIntList": [1, 2, 4]}),
        json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3]}),
    );
    assert_eq!(out, json!({"mergingIntList": [1, 2, 3, 4]}));
    let out = ok(
        json!({"mergingIntList": [1, 2]}),
        json!({"mergingIntList": [2, 3]}),
    );
    assert_eq!(out, json!({"mergingIntList": [1, 2, 3]}));
    // Only the directive: the live elements are reordered.
    let out = ok(
        json!({"mergingIntList": [1, 3]}),
        json!({"$setElementOrder/mergingIntList": [3, 2, 1]}),
    );
    assert_eq!(out, json!({"mergingIntList": [3, 1]}));
}

#[test]
fn without_order_directive_patch_order_wins_and_server_items_interleave() {
    let out = ok(
        json!({"mergingList": [{"name": "1"}, {"name": "2", "value": "b"}, {"name": "3"}]}),
        json!({"mergingList": [{"name": "3", "value": "c"}, {"name": "1", "value": "a"}]}),
    );
    assert_eq!(
        out,
        json!({"mergingList": [
            {"name": "2", "value": "b"},
            {"name": "3", "value": "c"},
            {"name": "1", "value": "a"}
        ]})
    );
    let out = ok(
        json!({"mergingIntList": [1, 2, 3]}),
        json!({"mergingIntList": [3, 1]}),
    );
    assert_eq!(out, json!({"mergingIntList": [2, 3, 1]}));
}

#[test]
fn delete_and_replace_elements() {
    let out = ok(
        json!({"mergingList": [{"name": "1"}, {"name": "1"}, {"name": "2", "value": "a"}, {"name": "3"}]}),
        json!({"mergingList": [{"name": "1", "$patch": "delete"}, {"name": "3", "$patch": "delete"}]}),
    );
    assert_eq!(out, json!({"mergingList": [{"name": "2", "value": "a"}]}));
    let out = ok(
        json!({"mergingList": [{"name": "1"}, {"name": "2"}]}),
        json!({"mergingList": [{"$patch": "replace"}]}),
    );
    assert_eq!(out, json!({"mergingList": []}));
    let out = ok(
        json!({"mergingList": [{"name": "1"}, {"name": "2"}]}),
        json!({"mergingList": [{"name": "3"}, {"$patch": "replace"}]}),
    );
    assert_eq!(out, json!({"mergingList": [{"name": "3"}]}));
}

#[test]
fn map_directives() {
    let out = ok(
        json!({"simpleMap": {"key1": "1", "key2": "1"}}),
        json!({"simpleMap": {"$patch": "delete"}}),
    );
    assert_eq!(out, json!({"simpleMap": {}}));
    let out = ok(
        json!({"name": "1", "value": "1"}),
        json!({"other": "a", "$patch": "replace"}),
    );
    assert_eq!(out, json!({"other": "a"}));
    let err = merge(
        json!({"simpleMap": {"a": "1"}}),
        json!({"simpleMap": {"$patch": "foo", "b": "2"}}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown patch type: foo in map: map[$patch:foo b:2]"
    );
    assert_eq!(err.status_class(), ErrorClass::Internal);
}

#[test]
fn non_merging_lists_and_replace_strategy_replace() {
    let out = ok(
        json!({"nonMergingList": [{"name": "1"}], "nonMergingIntList": [1, 2], "replacingItem": {"a": 1}}),
        json!({"nonMergingList": [{"name": "2"}], "nonMergingIntList": [3], "replacingItem": {"b": 2}}),
    );
    assert_eq!(
        out,
        json!({"nonMergingList": [{"name": "2"}], "nonMergingIntList": [3], "replacingItem": {"b": 2}})
    );
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    let out = ok(
        json!({"retainKeysMap": {"name": "foo", "value": "a", "other": "o"}}),
        json!({"retainKeysMap": {"$retainKeys": ["name", "value"], "value": "b"}}),
    );
    assert_eq!(out, json!({"retainKeysMap": {"name": "foo", "value": "b"}}));
    let err = merge(
        json!({"retainKeysMap": {"name": "foo"}}),
        json!({"retainKeysMap": {"$retainKeys": ["name"], "value": "b"}}),
    )
    .unwrap_err();
    assert_eq!(err, SmpError::BadRetainKeysFormat);
    assert_eq!(err.status_class(), ErrorClass::BadRequest);
}

#[test]
fn delete_from_primitive_list() {
    let out = ok(
        json!({"mergingIntList": [1, 2, 3], "nonMergingIntList": [1, 2, 3]}),
        json!({"$deleteFromPrimitiveList/mergingIntList": [2, 9], "$deleteFromPrimitiveList/nonMergingIntList": [1]}),
    );
    assert_eq!(
        out,
        json!({"mergingIntList": [1, 3], "nonMergingIntList": [2, 3]})
    );
    // Neither a missing list nor an empty one is created.
    let out = ok(
        json!({"other": "x"}),
        json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
    );
    assert_eq!(out, json!({"other": "x"}));
    let err = merge(json!({}), json!({"$deleteFromPrimitiveList": [3]})).unwrap_err();
    assert_eq!(err, SmpError::BadPrimitiveListFormat);
}

#[test]
fn malformed_patches_fail_as_upstream() {
    let err = merge(
        json!({"mergingList": [{"name": "1", "value": "a"}]}),
        json!({"mergingList": [{"value": "b"}]}),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "map: map[value:b] does not contain declared merge key: name"
    );
    let err = merge(
        json!({"mergingList": [{"name": "1"}]}),
        json!({"mergingList": [{"$patch": "merge"}]}),
    )
    .unwrap_err();
    assert_eq!(err, SmpError::MergeDirectiveInList);
    let err = merge(
        json!({"mergingList": [{"name": "1"}, {"name": "3"}, {"name": "2"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": "1"}, {"name": "2"}, {"name": "3"}],
            "mergingList": [{"name": "3", "value": "3"}, {"name": "1", "value": "1"}]
        }),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("doesn't match $setElementOrder list"),
        "{err}"
    );
    let err = merge(
        json!({"listOfLists": [["a"]]}),
        json!({"listOfLists": [["b"]]}),
    )
    .unwrap_err();
    assert_eq!(err, SmpError::NoListOfLists);
    assert_eq!(err.status_class(), ErrorClass::Unprocessable);
    let err = merge(json!({}), json!({"$setElementOrder/mergingList": "x"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a []interface {}, but received a string"
    );
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "a", "tier": "t"}, "finalizers": ["f1"]},
        "spec": {
            "containers": [
                {"name": "a", "image": "a:1",
                 "ports": [{"containerPort": 80, "protocol": "TCP"}],
                 "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                {"name": "b", "image": "b:1"}
            ],
            "tolerations": [{"key": "k1", "operator": "Exists"}]
        }
    })
}

fn patch_pod(patch: Value) -> Result<Value, SmpError> {
    let root = builtin::root("", "v1", "Pod").unwrap();
    apply(obj(pod()), &obj(patch), builtin::schema(), root).map(Value::Object)
}

#[test]
fn pod_containers_ports_and_env_merge_by_their_keys() {
    let out = patch_pod(json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{
            "name": "a", "image": "a:2",
            "$setElementOrder/ports": [{"containerPort": 80}, {"containerPort": 443}],
            "ports": [{"containerPort": 443, "protocol": "TCP"}],
            "env": [{"name": "Y", "$patch": "delete"}, {"name": "Z", "value": "3"}]
        }]
    }}))
    .unwrap();
    let a = &out["spec"]["containers"][0];
    assert_eq!(a["image"], "a:2");
    assert_eq!(
        a["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}])
    );
    assert_eq!(
        a["env"],
        // Without `$setElementOrder`, new elements come before the live
        // ones the patch does not name (upstream's mergeSortedSlice).
        json!([{"name": "Z", "value": "3"}, {"name": "X", "value": "1"}])
    );
    assert_eq!(
        out["spec"]["containers"][1],
        json!({"name": "b", "image": "b:1"})
    );
}

#[test]
fn pod_finalizers_merge_labels_merge_tolerations_replace() {
    let out = patch_pod(json!({
        "metadata": {"labels": {"tier": null, "new": "n"}, "finalizers": ["f2"]},
        "spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}
    }))
    .unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"app": "a", "new": "n"}));
    assert_eq!(out["metadata"]["finalizers"], json!(["f2", "f1"]));
    assert_eq!(
        out["spec"]["tolerations"],
        json!([{"key": "k2", "operator": "Exists"}])
    );
    let out =
        patch_pod(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}})).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!([]));
}

#[test]
fn pod_container_without_name_is_refused() {
    let err = patch_pod(json!({"spec": {"containers": [{"image": "nginx"}]}})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "map: map[image:nginx] does not contain declared merge key: name"
    );
}

#[test]
fn deployment_strategy_retain_keys() {
    let root = builtin::root("apps", "v1", "Deployment").unwrap();
    let original =
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let out = apply(obj(original), &obj(patch), builtin::schema(), root).unwrap();
    assert_eq!(
        Value::Object(out),
        json!({"spec": {"strategy": {"type": "Recreate"}}})
    );
}

#[test]
fn merged_fields_keep_their_place() {
    let out = ok(
        json!({"mergingIntList": [1], "name": "n", "simpleMap": {"a": "1"}, "value": "v"}),
        json!({"$setElementOrder/mergingIntList": [2, 1], "mergingIntList": [2], "simpleMap": null}),
    );
    let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["mergingIntList", "name", "value"]);
    assert_eq!(out["mergingIntList"], json!([2, 1]));
}
