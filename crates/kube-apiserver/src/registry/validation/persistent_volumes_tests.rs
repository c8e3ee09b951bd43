use serde_json::json;

use super::*;

fn messages(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn pv(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn host_path_spec() -> Value {
    json!({"capacity": {"storage": "10G"}, "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/foo", "type": ""}})
}

fn create(name: &str, spec: Value) -> Vec<String> {
    messages(validate_pv(&pv(name, spec)))
}

#[test]
fn upstream_good_volumes_pass() {
    assert_eq!(create("foo", host_path_spec()), Vec::<String>::new());
    let local = json!({"capacity": {"storage": "10G"}, "accessModes": ["ReadWriteOnce"],
        "local": {"path": "/foo"}, "storageClassName": "test-storage-class",
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "test-label-key", "operator": "In", "values": ["test-label-value"]}]}]}}});
    assert_eq!(create("foo", local), Vec::<String>::new());
    let csi = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOncePod"],
        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1",
            "nodePublishSecretRef": {"name": "s", "namespace": "ns"}},
        "volumeAttributesClassName": "gold", "volumeMode": "Block"});
    assert_eq!(create("foo", csi), Vec::<String>::new());
}

#[test]
fn modes_capacity_policy_and_source_are_required() {
    assert_eq!(
        create("foo", json!({})),
        [
            "spec.accessModes: Required value",
            "spec.capacity: Required value",
            "spec.capacity: Unsupported value: null: supported values: \"storage\"",
            "spec: Required value: must specify a volume type",
        ]
    );
    let mut spec = host_path_spec();
    spec["accessModes"] = json!(["ReadWriteOncePod", "ReadWriteOnce", "fakemode"]);
    spec["capacity"] = json!({"storage": "0", "cpu": "1000m"});
    spec["persistentVolumeReclaimPolicy"] = json!("fakeReclaimPolicy");
    assert_eq!(
        create("foo", spec),
        [
            "spec.accessModes: Unsupported value: \"fakemode\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            "spec.capacity: Unsupported value: {\"cpu\":\"1\",\"storage\":\"0\"}: supported values: \"storage\"",
            "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero",
            "spec.persistentVolumeReclaimPolicy: Unsupported value: \"fakeReclaimPolicy\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
        ]
    );
}

#[test]
fn a_negative_capacity_is_refused_twice() {
    let mut spec = host_path_spec();
    spec["capacity"] = json!({"storage": "-5Gi"});
    assert_eq!(
        create("foo", spec),
        [
            "spec.capacity[storage]: Invalid value: -5368709120: must be a valid resource quantity",
            "spec.capacity[storage]: Invalid value: \"-5Gi\": must be greater than zero",
        ]
    );
}

#[test]
fn one_source_only_and_recycled_root_host_paths() {
    let mut spec = host_path_spec();
    spec["gcePersistentDisk"] = json!({"pdName": "foo", "fsType": "ext4"});
    spec["cephfs"] = json!({"monitors": ["m"]});
    assert_eq!(
        create("foo", spec),
        [
            "spec.gcePersistentDisk: Forbidden: may not specify more than 1 volume type",
            "spec.cephFS: Forbidden: may not specify more than 1 volume type",
        ]
    );
    for root in ["/", "//", "/.", "/./"] {
        let mut spec = host_path_spec();
        spec["hostPath"]["path"] = json!(root);
        spec["persistentVolumeReclaimPolicy"] = json!("Recycle");
        assert_eq!(
            create("foo", spec),
            ["spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"],
            "{root}"
        );
    }
    let mut spec = host_path_spec();
    spec["hostPath"] = json!({"path": "/a/../b", "type": "Fifo"});
    assert_eq!(
        create("foo", spec),
        [
            "spec.hostPath.path: Invalid value: \"/a/../b\": must not contain '..'",
            "spec.hostPath.type: Unsupported value: \"Fifo\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
        ]
    );
}

#[test]
fn local_volumes_need_node_affinity_with_valid_terms() {
    let mut spec = host_path_spec();
    spec.as_object_mut().unwrap().remove("hostPath");
    spec["local"] = json!({"path": "/foo/../bar"});
    assert_eq!(
        create("foo", spec.clone()),
        [
            "spec.local.path: Invalid value: \"/foo/../bar\": must not contain '..'",
            "spec.nodeAffinity: Required value: Local volume requires node affinity",
        ]
    );
    spec["local"] = json!({"path": "/foo"});
    spec["nodeAffinity"] = json!({});
    assert_eq!(
        create("foo", spec.clone()),
        ["spec.nodeAffinity.required: Required value: must specify required node constraints"]
    );
    spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "k", "operator": "In", "values": ["a b"]}]}]}});
    let errs = create("foo", spec.clone());
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].starts_with(
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"a b\""
    ));
    // A stored volume with an invalid label value may keep it.
    let old = pv("foo", spec.clone());
    assert_eq!(
        messages(validate_pv_update(&old, &old)),
        Vec::<String>::new()
    );
}

#[test]
fn classes_and_volume_mode_are_checked() {
    let mut spec = host_path_spec();
    spec["storageClassName"] = json!("-invalid-");
    spec["volumeMode"] = json!("Raw");
    spec["volumeAttributesClassName"] = json!("");
    let errs = create("foo", spec);
    assert_eq!(errs.len(), 4, "{errs:?}");
    assert!(errs[0].starts_with(
        "spec.storageClassName: Invalid value: \"-invalid-\": a lowercase RFC 1123 subdomain"
    ));
    assert_eq!(
        errs[1..],
        [
            "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
            "spec.volumeAttributesClassName: Required value: an empty string is disallowed",
            "spec.csi: Required value: has to be specified when using volumeAttributesClassName",
        ]
    );
}

#[test]
fn mount_options_annotation_needs_a_mountable_source() {
    let mut obj = pv("foo", host_path_spec());
    obj["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/mount-options": "ro"});
    assert_eq!(
        messages(validate_pv(&obj)),
        ["metadata.annotations.volume.beta.kubernetes.io/mount-options: Forbidden: may not specify mount options for this volume type"]
    );
    obj["spec"].as_object_mut().unwrap().remove("hostPath");
    obj["spec"]["nfs"] = json!({"server": "localhost", "path": "/srv"});
    assert_eq!(messages(validate_pv(&obj)), Vec::<String>::new());
}

#[test]
fn inline_specs_follow_the_inline_rules() {
    let spec = json!({"capacity": {"storage": "1Gi"}, "claimRef": {}, "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "fast", "volumeMode": "Block",
        "nodeAffinity": {}, "volumeAttributesClassName": "", "local": {"path": "/x"}});
    assert_eq!(
        messages(validate_inline_pv_spec(&spec, &Path::new("spec").child("source").child("inlineVolumeSpec"))),
        [
            "spec.source.inlineVolumeSpec.claimRef: Forbidden: may not be specified in the context of inline volumes",
            "spec.source.inlineVolumeSpec.capacity: Forbidden: may not be specified in the context of inline volumes",
            "spec.source.inlineVolumeSpec.csi: Required value: has to be specified in the context of inline volumes",
            "spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy: Forbidden: may only be Retain in the context of inline volumes",
            "spec.source.inlineVolumeSpec.nodeAffinity: Forbidden: may not be specified in the context of inline volumes",
            "spec.source.inlineVolumeSpec.nodeAffinity: Required value: Local volume requires node affinity",
            "spec.source.inlineVolumeSpec.storageClassName: Forbidden: may not be specified in the context of inline volumes",
            "spec.source.inlineVolumeSpec.volumeMode: Forbidden: may not specify volumeMode other than Filesystem in the context of inline volumes",
        ]
    );
    let good = json!({"accessModes": ["ReadWriteOnce"],
        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}});
    assert_eq!(
        messages(validate_inline_pv_spec(&good, &Path::new("s"))),
        Vec::<String>::new()
    );
}
