use serde_json::json;

use super::*;

fn hpa(spec: Value) -> Value {
    let mut obj = json!({"apiVersion": "autoscaling/v2", "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1, "maxReplicas": 3}});
    obj["spec"]
        .as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    obj
}

fn errors(obj: &Value) -> Vec<String> {
    validate_hpa(obj).iter().map(ToString::to_string).collect()
}

#[test]
fn replicas_and_target_follow_upstream() {
    assert!(errors(&hpa(json!({}))).is_empty());
    assert_eq!(
        errors(&hpa(json!({"maxReplicas": 0, "minReplicas": 0,
            "scaleTargetRef": {"kind": "", "name": "a/b"}}))),
        [
            "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.maxReplicas: Invalid value: 0: must be greater than 0",
            "spec.scaleTargetRef.kind: Required value",
            "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
        ]
    );
    assert_eq!(
        errors(&hpa(json!({"minReplicas": 5}))),
        ["spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"]
    );
}

#[test]
fn metrics_follow_upstream() {
    let metrics = json!({"metrics": [
        {"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 0}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"},
            "target": {"type": "AverageValue", "averageValue": "0"}},
            "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
        {"type": "Object"},
        {"type": "Bogus"},
    ]});
    let unsupported = "spec.metrics[3].type: Unsupported value: \"Bogus\": supported values: \
        \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"";
    assert_eq!(
        errors(&hpa(metrics)),
        [
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
            "spec.metrics[1].pods.target.averageValue: Invalid value: 0: must be positive",
            "spec.metrics[1].resource: Forbidden: must populate the given metric source only",
            "spec.metrics[2].object: Required value: must populate information for the given metric source",
            unsupported,
            unsupported,
        ]
    );
}

#[test]
fn behavior_follows_upstream() {
    let behavior = json!({"behavior": {"scaleUp": {"stabilizationWindowSeconds": 4000,
        "selectPolicy": "Any", "policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]},
        "scaleDown": {"policies": []}}});
    assert_eq!(
        errors(&hpa(behavior)),
        [
            "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
            "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Any\": supported values: \"Disabled\", \"Max\", \"Min\"",
            "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
            "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
            "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
        ]
    );
}

#[test]
fn v1_objects_are_checked_in_their_v2_form() {
    let v1 = json!({"apiVersion": "autoscaling/v1", "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "maxReplicas": 0, "targetCPUUtilizationPercentage": 0}});
    let got: Vec<String> = validate_hpa_v1(&v1)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        [
            "spec.maxReplicas: Invalid value: 0: must be greater than 0",
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
        ]
    );
}

#[test]
fn container_resource_names_are_container_resources() {
    let metric = |name: &str| {
        json!({"metrics": [{"type": "ContainerResource", "containerResource": {
            "name": name, "container": "app",
            "target": {"type": "Utilization", "averageUtilization": 50}}}]})
    };
    for good in ["cpu", "memory", "hugepages-2Mi", "example.com/gpu"] {
        assert!(errors(&hpa(metric(good))).is_empty(), "{good}");
    }
    let at = "spec.metrics[0].containerResource.name: Invalid value:";
    assert_eq!(
        errors(&hpa(metric("pods"))),
        [format!(
            "{at} \"pods\": must be a standard resource for containers"
        )]
    );
    assert_eq!(
        errors(&hpa(metric("cpuu"))),
        [
            format!("{at} \"cpuu\": must be a standard resource type or fully qualified"),
            format!("{at} \"cpuu\": must be a standard resource for containers"),
        ]
    );
    assert_eq!(
        errors(&hpa(metric("requests.example.com/gpu"))),
        [format!(
            "{at} \"requests.example.com/gpu\": doesn't follow extended resource name standard"
        )]
    );
}
