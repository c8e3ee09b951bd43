use serde_json::json;

use super::*;

type Validate = fn(&Value) -> Vec<FieldError>;

/// (validation, object, the start of each error as upstream words it, in
/// upstream's order); an empty list is an object upstream accepts.
fn cases() -> Vec<(Validate, Value, Vec<&'static str>)> {
    let class = |extra: Value| {
        let mut sc = json!({"provisioner": "csi.example.com", "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate"});
        sc.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        sc
    };
    let driver = |spec: Value| {
        let mut d = json!({"spec": {"attachRequired": true, "podInfoOnMount": false,
            "storageCapacity": false, "fsGroupPolicy": "File",
            "volumeLifecycleModes": ["Persistent"]}});
        d["spec"]
            .as_object_mut()
            .unwrap()
            .extend(spec.as_object().unwrap().clone());
        d
    };
    let attachment = |source: Value, node: &str| json!({"spec": {"attacher": "csi.example.com", "nodeName": node, "source": source}});
    vec![
        (validate_storage_class, class(json!({})), vec![]),
        (
            validate_storage_class,
            class(json!({"provisioner": "bad provisioner!"})),
            vec!["provisioner: Invalid value: \"bad provisioner!\": name part must consist of"],
        ),
        (
            validate_storage_class,
            class(json!({"provisioner": "", "reclaimPolicy": "Recycle",
                "volumeBindingMode": "Later", "parameters": {"": "x"}})),
            vec![
                "provisioner: Required value",
                "parameters: Invalid value: \"\": field can not be empty.",
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            ],
        ),
        (
            validate_volume_attributes_class,
            json!({"driverName": "csi.example.com"}),
            vec!["parameters: Required value: must contain at least one key/value pair"],
        ),
        (validate_csi_driver, driver(json!({})), vec![]),
        (
            validate_csi_driver,
            driver(json!({"attachRequired": null, "fsGroupPolicy": "Any",
                "volumeLifecycleModes": ["Forever"],
                "tokenRequests": [{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}]})),
            vec![
                "spec.attachedRequired: Required value",
                "spec.fsGroupPolicy: Unsupported value: \"Any\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"",
                "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.tokenRequests[1].audience: Duplicate value: \"a\"",
                "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: \"Persistent\", \"Ephemeral\"",
            ],
        ),
        (
            validate_csi_node,
            json!({"spec": {"drivers": [
                {"name": "d.example.com", "nodeID": "n", "topologyKeys": ["zone", "zone"]},
                {"name": "d.example.com", "nodeID": "", "allocatable": {"count": -1}}]}}),
            vec![
                "spec.drivers[0]: Duplicate value: \"zone\"",
                "spec.drivers[1].nodeID: Required value",
                "spec.drivers[1].allocatable.count: Invalid value: -1: must be greater than or equal to 0",
                "spec.drivers[1].name: Duplicate value: \"d.example.com\"",
            ],
        ),
        (
            validate_volume_attachment,
            attachment(json!({"persistentVolumeName": "pv-1"}), "node-1"),
            vec![],
        ),
        (
            validate_volume_attachment,
            attachment(json!({}), "Node_1"),
            vec![
                "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
                "spec.nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain",
            ],
        ),
        (
            validate_volume_attachment,
            attachment(json!({"persistentVolumeName": "pv", "inlineVolumeSpec": {}}), "n"),
            vec!["spec.source: Forbidden: must specify exactly one of"],
        ),
        (
            validate_csi_storage_capacity,
            json!({"storageClassName": "Fast!", "capacity": "-1Gi",
                "nodeTopology": {"matchLabels": {"a b": "x"}}}),
            vec![
                "nodeTopology.matchLabels: Invalid value: \"a b\": name part must consist of",
                "storageClassName: Invalid value: \"Fast!\": a lowercase RFC 1123 subdomain",
                "capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0",
            ],
        ),
    ]
}

#[test]
fn storage_kinds_follow_upstream() {
    for (validate, obj, want) in cases() {
        let got: Vec<String> = validate(&obj).iter().map(ToString::to_string).collect();
        assert_eq!(got.len(), want.len(), "{obj}: {got:#?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.starts_with(w), "{obj}: {g} (want {w})");
        }
    }
}
