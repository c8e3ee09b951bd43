use serde_json::json;

use super::*;

fn messages(obj: Value) -> Vec<String> {
    validate_pvc(&obj).iter().map(ToString::to_string).collect()
}

fn claim(spec: Value) -> Value {
    json!({"metadata": {"name": "c"}, "spec": spec})
}

#[test]
fn a_claim_with_modes_and_storage_is_valid() {
    let spec = json!({"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast",
        "volumeMode": "Filesystem",
        "dataSource": {"kind": "PersistentVolumeClaim", "name": "src"},
        "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "src"}});
    assert_eq!(messages(claim(spec)), Vec::<String>::new());
}

#[test]
fn an_empty_spec_needs_modes_and_storage() {
    assert_eq!(
        messages(claim(json!({}))),
        [
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value",
        ]
    );
}

#[test]
fn modes_storage_classes_and_volume_mode_are_checked() {
    let spec = json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "Sometimes"],
        "resources": {"requests": {"storage": "0"}}, "storageClassName": "Fast_Disk",
        "volumeMode": "Raw", "volumeAttributesClassName": "gold.", "selector": {
            "matchLabels": {"tier": "a b"}}});
    assert_eq!(
        messages(claim(spec)),
        [
            "spec.selector.matchLabels: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
            "spec.storageClassName: Invalid value: \"Fast_Disk\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
            "spec.volumeAttributesClassName: Invalid value: \"gold.\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ]
    );
}

#[test]
fn data_sources_are_checked_and_must_agree() {
    let base = json!({"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}});
    let mut spec = base.clone();
    spec["dataSource"] = json!({"kind": "Pod"});
    spec["dataSourceRef"] = json!({"apiGroup": "Snap_Shots", "kind": "VolumeSnapshot",
        "name": "s"});
    assert_eq!(
        messages(claim(spec)),
        [
            "spec.dataSource.name: Required value",
            "spec.dataSource: Invalid value: \"Pod\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
            "spec.dataSourceRef.apiGroup: Invalid value: \"Snap_Shots\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec: Invalid value: {}: must match dataSourceRef",
        ]
    );
    let mut spec = base;
    spec["dataSource"] = json!({"kind": "PersistentVolumeClaim", "name": "a"});
    spec["dataSourceRef"] = json!({"kind": "PersistentVolumeClaim", "name": "a",
        "namespace": "other"});
    assert_eq!(
        messages(claim(spec)),
        ["spec: Invalid value: {}: may not be specified when dataSourceRef.namespace is specified"]
    );
}

#[test]
fn updates_keep_accepting_what_the_stored_claim_had() {
    let mut stored = claim(json!({"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        "selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a b"]}]},
        "dataSource": {"apiGroup": "Snap_Shots", "kind": "VolumeSnapshot", "name": "s"},
        "dataSourceRef": {"apiGroup": "Snap_Shots", "kind": "VolumeSnapshot", "name": "s"}}));
    assert_eq!(messages(stored.clone()).len(), 3);
    assert_eq!(
        validate_pvc_update(&stored, &stored)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        Vec::<String>::new()
    );
    // A valid stored claim gets no allowance.
    let valid = claim(json!({"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}}));
    stored["spec"]["volumeName"] = json!("pv-1");
    let errs: Vec<String> = validate_pvc_update(&stored, &valid)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        errs[0].starts_with("spec.selector.matchExpressions[0].values[0]: Invalid value: \"a b\""),
        "{errs:?}"
    );
    assert!(
        errs[1].starts_with("spec.dataSource.apiGroup: Invalid value: \"Snap_Shots\""),
        "{errs:?}"
    );
}
