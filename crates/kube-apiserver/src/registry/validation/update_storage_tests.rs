use serde_json::json;

use super::*;

type Validate = fn(&Value, &Value) -> Vec<FieldError>;

/// (kind, validation, old, new, the errors as upstream words them); an
/// empty list is an update upstream allows.
fn cases() -> Vec<(&'static str, Validate, Value, Value, Vec<&'static str>)> {
    let va = json!({"spec": {"attacher": "csi.example.com", "nodeName": "n1",
        "source": {"persistentVolumeName": "pv-1"}}});
    let mut va_status = va.clone();
    va_status["status"] = json!({"attached": true});
    let driver = json!({"spec": {"attachRequired": true, "podInfoOnMount": false,
        "volumeLifecycleModes": ["Persistent"]}});
    let node = |id: &str, count: i64| {
        json!({"spec": {"drivers": [{"name": "d", "nodeID": id, "topologyKeys": ["zone"],
            "allocatable": {"count": count}}, {"name": "e", "nodeID": "x", "topologyKeys": null}]}})
    };
    let capacity = |zone: &str, class: &str| {
        json!({"nodeTopology": {"matchLabels": {"zone": zone},
            "matchExpressions": [{"key": "k", "operator": "Exists"}]},
            "storageClassName": class, "capacity": "1Gi"})
    };
    vec![
        (
            "VolumeAttachment",
            validate_volume_attachment_update,
            va.clone(),
            json!({"spec": {"attacher": "csi.example.com", "nodeName": "n2",
                "source": {"persistentVolumeName": "pv-1"}}}),
            vec!["spec: Invalid value: null: field is immutable"],
        ),
        ("VolumeAttachment", validate_volume_attachment_update, va, va_status, vec![]),
        (
            "CSIDriver",
            validate_csi_driver_update,
            driver.clone(),
            json!({"spec": {"attachRequired": false, "podInfoOnMount": true,
                "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}),
            vec![
                "spec.attachedRequired: Invalid value: false: field is immutable",
                "spec.volumeLifecycleModes: Invalid value: [\"Persistent\",\"Ephemeral\"]: field is immutable",
            ],
        ),
        (
            "CSINode",
            validate_csi_node_update,
            node("a", 1),
            node("b", 1),
            vec!["spec.drivers: Invalid value: {\"Name\":\"d\",\"NodeID\":\"b\",\"TopologyKeys\":[\"zone\"],\"Allocatable\":null}: field is immutable"],
        ),
        ("CSINode", validate_csi_node_update, node("a", 1), node("a", 5), vec![]),
        (
            "CSINode",
            validate_csi_node_update,
            node("a", 1),
            json!({"spec": {"drivers": []}}),
            vec![],
        ),
        (
            "CSIStorageCapacity",
            validate_csi_storage_capacity_update,
            capacity("a", "fast"),
            capacity("b", "slow"),
            vec![
                "nodeTopology: Invalid value: {\"matchLabels\":{\"zone\":\"b\"},\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}: field is immutable",
                "storageClassName: Invalid value: \"slow\": field is immutable",
            ],
        ),
        (
            "CSIStorageCapacity",
            validate_csi_storage_capacity_update,
            capacity("a", "fast"),
            json!({"nodeTopology": {"matchLabels": {"zone": "a"},
                "matchExpressions": [{"key": "k", "operator": "Exists"}]},
                "storageClassName": "fast", "capacity": "2Gi", "maximumVolumeSize": "1Gi"}),
            vec![],
        ),
    ]
}

#[test]
fn every_immutable_field_is_refused_as_upstream() {
    for (kind, validate, old, new, want) in cases() {
        let got: Vec<String> = validate(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, want, "{kind}");
    }
}
