use serde_json::json;

use super::*;

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn daemonset_gets_go_order_and_non_omitempty_zeros() {
    let mut ds = json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "spec": {"template": {"spec": {"containers": [{"image": "x", "name": "c"}]}}},
        "metadata": {"name": "d", "labels": {"b": "1", "a": "2"}, "unknownField": 1},
        "status": {}
    });
    assert!(normalize(&mut ds));
    assert_eq!(
        keys(&ds),
        ["kind", "apiVersion", "metadata", "spec", "status"]
    );
    assert_eq!(keys(&ds["metadata"]), ["name", "labels"]);
    assert_eq!(keys(&ds["metadata"]["labels"]), ["a", "b"]);
    assert_eq!(
        ds["status"],
        json!({
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0
        })
    );
    // A struct is never left out by omitempty; Time's zero is null.
    assert_eq!(ds["spec"]["selector"], Value::Null);
    assert_eq!(
        ds["spec"]["template"]["metadata"],
        json!({}),
        "creationTimestamp is omitzero"
    );
    let container = &ds["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(keys(container), ["name", "image", "resources"]);
}

#[test]
fn replication_controller_status_replicas_is_written() {
    let mut rc =
        json!({"kind": "ReplicationController", "apiVersion": "v1", "metadata": {"name": "r"}});
    normalize(&mut rc);
    assert_eq!(rc["status"], json!({"replicas": 0}));
    assert_eq!(rc["spec"], json!({}));
}

#[test]
fn pointers_keep_explicit_zeros_and_omitempty_drops_empty_values() {
    let mut deploy = json!({
        "kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": "d", "annotations": {}, "finalizers": [], "generation": 0},
        "spec": {"replicas": 0, "paused": false, "minReadySeconds": 0, "selector": null,
                 "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": []}}}
    });
    normalize(&mut deploy);
    assert_eq!(keys(&deploy["metadata"]), ["name"]);
    assert_eq!(
        keys(&deploy["spec"]),
        ["replicas", "selector", "template", "strategy"]
    );
    assert_eq!(deploy["spec"]["replicas"], json!(0));
    assert_eq!(deploy["spec"]["template"]["spec"]["containers"], json!([]));
}

#[test]
fn quantities_are_canonical_and_null_elements_take_zero_values() {
    let mut pod = json!({
        "kind": "Pod", "apiVersion": "v1", "metadata": {},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": "1024Mi", "cpu": "0.5"}}}, null]}
    });
    normalize(&mut pod);
    let containers = &pod["spec"]["containers"];
    assert_eq!(
        containers[0]["resources"]["limits"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    assert_eq!(
        keys(&containers[0]["resources"]["limits"]),
        ["cpu", "memory"]
    );
    assert_eq!(containers[1], json!({"name": "", "resources": {}}));
}

#[test]
fn unknown_kinds_and_types_are_left_alone() {
    let original = json!({"apiVersion": "example.com/v1", "kind": "Thing", "z": 1, "a": null});
    let mut v = original.clone();
    assert!(!normalize(&mut v));
    assert_eq!(v, original);
    assert!(!normalize_as("io.k8s.nothing.Here", &mut v));
}

#[test]
fn status_envelope_has_go_order_and_empty_metadata() {
    let mut status = json!({"code": 404, "reason": "NotFound", "message": "m", "status": "Failure",
                            "apiVersion": "v1", "kind": "Status", "details": {"kind": "pods", "name": "x"}});
    assert!(normalize_as(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        &mut status
    ));
    let text = serde_json::to_string(&status).unwrap();
    assert_eq!(
        text,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"m","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#
    );
}

#[test]
fn raw_and_interface_values_keep_their_content() {
    let mut row = json!({"object": {"z": 1, "a": 2}, "cells": [{"y": 1, "b": 2}, null]});
    normalize_as("io.k8s.apimachinery.pkg.apis.meta.v1.TableRow", &mut row);
    assert_eq!(keys(&row), ["cells", "object"]);
    assert_eq!(keys(&row["object"]), ["z", "a"]);
    assert_eq!(row["cells"][1], Value::Null);
    let mut bare = json!({"cells": []});
    normalize_as("io.k8s.apimachinery.pkg.apis.meta.v1.TableRow", &mut bare);
    assert_eq!(bare, json!({"cells": [], "object": null}));
}

#[test]
fn normalizing_twice_changes_nothing() {
    let mut svc = json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "s"},
                         "spec": {"ports": [{"port": 80, "targetPort": "http"}]}});
    normalize(&mut svc);
    let once = serde_json::to_string(&svc).unwrap();
    normalize(&mut svc);
    assert_eq!(serde_json::to_string(&svc).unwrap(), once);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], json!("http"));
}
