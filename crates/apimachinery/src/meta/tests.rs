//! Tests for the `meta` module.
use super::*;
use serde_json::json;

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {"app": "web"},
            "annotations": {"a": "b"},
            "finalizers": ["x/y", 5, "z"],
            "ownerReferences": [{"kind": "ReplicaSet"}]
        }
    })
}

#[test]
fn getters() {
    let obj = pod();
    assert_eq!(name(&obj), Some("p"));
    assert_eq!(namespace(&obj), Some("ns"));
    assert_eq!(uid(&obj), Some("u-1"));
    assert_eq!(resource_version(&obj), Some("42"));
    assert_eq!(generation(&obj), Some(3));
    assert_eq!(creation_timestamp(&obj), Some("2024-01-01T00:00:00Z"));
    assert_eq!(deletion_timestamp(&obj), None);
    assert_eq!(deletion_grace_period_seconds(&obj), None);
    assert_eq!(generate_name(&obj), None);
    assert_eq!(labels(&obj).and_then(|l| l.get("app")), Some(&json!("web")));
    assert_eq!(
        annotations(&obj).and_then(|a| a.get("a")),
        Some(&json!("b"))
    );
    assert_eq!(finalizers(&obj), ["x/y", "z"]);
    assert_eq!(owner_references(&obj).map(Vec::len), Some(1));
    assert_eq!(api_version(&obj), Some("v1"));
    assert_eq!(kind(&obj), Some("Pod"));
    // Wrong types and missing metadata read as absent.
    let odd = json!({"metadata": {"name": 5, "labels": "x"}});
    assert_eq!(name(&odd), None);
    assert_eq!(labels(&odd), None);
    assert_eq!(name(&json!({})), None);
    assert!(finalizers(&json!([])).is_empty());
}

#[test]
fn setters_create_and_remove() -> Result<(), MetaError> {
    let mut obj = json!({"kind": "ConfigMap"});
    set_name(&mut obj, "c")?;
    set_namespace(&mut obj, "default")?;
    set_uid(&mut obj, "u")?;
    set_resource_version(&mut obj, "7")?;
    set_generation(&mut obj, 2)?;
    set_creation_timestamp(&mut obj, "2024-01-01T00:00:00Z")?;
    set_deletion_timestamp(&mut obj, Some("2024-01-02T00:00:00Z"))?;
    set_deletion_grace_period_seconds(&mut obj, Some(30))?;
    set_generate_name(&mut obj, "c-")?;
    set_label(&mut obj, "app", "web")?;
    set_annotation(&mut obj, "note", "hi")?;
    set_finalizers(&mut obj, &["f1", "f2"])?;
    assert_eq!(
        obj,
        json!({
            "kind": "ConfigMap",
            "metadata": {
                "name": "c",
                "namespace": "default",
                "uid": "u",
                "resourceVersion": "7",
                "generation": 2,
                "creationTimestamp": "2024-01-01T00:00:00Z",
                "deletionTimestamp": "2024-01-02T00:00:00Z",
                "deletionGracePeriodSeconds": 30,
                "generateName": "c-",
                "labels": {"app": "web"},
                "annotations": {"note": "hi"},
                "finalizers": ["f1", "f2"]
            }
        })
    );
    set_namespace(&mut obj, "")?;
    set_resource_version(&mut obj, "")?;
    set_generation(&mut obj, 0)?;
    set_deletion_timestamp(&mut obj, None)?;
    set_finalizers::<&str>(&mut obj, &[])?;
    set_labels(&mut obj, [("a", "1"), ("b", "2")])?;
    set_annotations(&mut obj, [])?;
    let meta = metadata(&obj).cloned().unwrap_or_default();
    for gone in [
        "namespace",
        "resourceVersion",
        "generation",
        "deletionTimestamp",
        "finalizers",
        "annotations",
    ] {
        assert!(!meta.contains_key(gone), "{gone} should be removed");
    }
    assert_eq!(meta.get("labels"), Some(&json!({"a": "1", "b": "2"})));
    Ok(())
}

#[test]
fn setters_reject_non_objects() {
    let mut arr = json!([1]);
    assert_eq!(set_name(&mut arr, "x"), Err(MetaError::NotAnObject));
    let mut bad = json!({"metadata": 3});
    assert_eq!(set_name(&mut bad, "x"), Err(MetaError::MetadataNotAnObject));
    // A non-object labels field is replaced.
    let mut odd = json!({"metadata": {"labels": "x"}});
    assert_eq!(set_label(&mut odd, "a", "b"), Ok(()));
    assert_eq!(odd["metadata"]["labels"], json!({"a": "b"}));
}

#[test]
fn group_version_parsing_and_display() {
    let cases = [
        ("", "", ""),
        ("/", "", ""),
        ("v1", "", "v1"),
        ("apps/v1", "apps", "v1"),
        (
            "rbac.authorization.k8s.io/v1",
            "rbac.authorization.k8s.io",
            "v1",
        ),
    ];
    for (input, group, version) in cases {
        assert_eq!(
            GroupVersion::parse(input),
            Ok(GroupVersion::new(group, version)),
            "{input}"
        );
    }
    assert_eq!(
        GroupVersion::parse("a/b/c").map_err(|e| e.to_string()),
        Err("unexpected GroupVersion string: a/b/c".to_owned())
    );
    assert_eq!(GroupVersion::new("", "v1").to_string(), "v1");
    assert_eq!(GroupVersion::new("apps", "v1").to_string(), "apps/v1");
}

#[test]
fn identifier_display() {
    let gvk = GroupVersionKind::new("apps", "v1", "Deployment");
    assert_eq!(gvk.to_string(), "apps/v1, Kind=Deployment");
    assert_eq!(gvk.api_version(), "apps/v1");
    assert_eq!(gvk.group_kind().to_string(), "Deployment.apps");
    let core = GroupVersionKind::from_api_version_kind("v1", "Event");
    assert_eq!(
        core.as_ref().map(ToString::to_string).ok(),
        Some("/v1, Kind=Event".to_owned())
    );
    assert_eq!(
        core.map(|g| g.group_kind().to_string()).ok(),
        Some("Event".to_owned())
    );
    let gvr = GroupVersion::new("apps", "v1").with_resource("deployments");
    assert_eq!(gvr.to_string(), "apps/v1, Resource=deployments");
    assert_eq!(gvr.group_resource().to_string(), "deployments.apps");
    assert_eq!(gvr.group_version(), GroupVersion::new("apps", "v1"));
    assert_eq!(GroupResource::new("", "pods").to_string(), "pods");
    assert_eq!(
        GroupResource::parse("deployments.apps"),
        GroupResource::new("apps", "deployments")
    );
    assert_eq!(
        GroupResource::parse("roles.rbac.authorization.k8s.io").group,
        "rbac.authorization.k8s.io"
    );
    assert_eq!(GroupResource::parse("pods"), GroupResource::new("", "pods"));
    assert!(GroupResource::default().is_empty());
    assert_eq!(GroupKind::parse("Pod"), GroupKind::new("", "Pod"));
    assert_eq!(
        GroupKind::parse("Deployment.apps").to_string(),
        "Deployment.apps"
    );
}
