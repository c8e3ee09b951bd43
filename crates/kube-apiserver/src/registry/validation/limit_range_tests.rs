//! Tests of LimitRange defaulting and validation against upstream's rules.

use super::*;
use serde_json::json;

fn messages(range: &Value) -> Vec<String> {
    let mut out: Vec<String> = validate_limit_range(range)
        .iter()
        .map(|e| format!("{}: {}", e.field, e.body()))
        .collect();
    // Upstream walks each item's resources in map order.
    out.sort();
    out
}

#[test]
fn container_items_take_defaults_from_max_default_and_min() {
    let mut range = json!({"spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
        {"type": "Pod", "max": {"cpu": "4"}}]}});
    limit_range_defaults(&mut range);
    assert_eq!(range["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
    assert_eq!(
        range["spec"]["limits"][0]["defaultRequest"],
        json!({"cpu": "2", "memory": "64Mi"})
    );
    assert!(range["spec"]["limits"][1].get("default").is_none());
}

#[test]
fn bounds_must_be_ordered() {
    let range = json!({"spec": {"limits": [{"type": "Container",
        "min": {"cpu": "200m"}, "max": {"cpu": "100m"},
        "default": {"memory": "2Gi"}, "defaultRequest": {"memory": "3Gi"},
        "maxLimitRequestRatio": {"ephemeral-storage": "500m"}}]}});
    assert_eq!(
        messages(&range),
        [
            "spec.limits[0].defaultRequest[memory]: Invalid value: \"3Gi\": default request value 3Gi is greater than default limit value 2Gi",
            "spec.limits[0].maxLimitRequestRatio[ephemeral-storage]: Invalid value: \"500m\": ratio 500m is less than 1",
            "spec.limits[0].min[cpu]: Invalid value: \"200m\": min value 200m is greater than max value 100m",
        ]
    );
}

#[test]
fn types_names_and_pod_defaults() {
    let range = json!({"spec": {"limits": [
        {"type": "Pod", "default": {"cpu": "1"}, "max": {"pods": "1"}},
        {"type": "Pod"},
        {"type": "Bogus"},
        {"type": "PersistentVolumeClaim"},
        {"type": "Container", "default": {"example.com/gpu": "1"},
            "defaultRequest": {"example.com/gpu": "2"}}]}});
    assert_eq!(
        messages(&range),
        [
            "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
            "spec.limits[0].max[pods]: Invalid value: \"pods\": must be a standard resource for containers",
            "spec.limits[1].type: Duplicate value: \"Pod\"",
            "spec.limits[2].type: Invalid value: \"Bogus\": must be a standard limit type or fully qualified",
            "spec.limits[3].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
            "spec.limits[4].defaultRequest[example.com/gpu]: Invalid value: \"2\": default request value 2 is greater than default limit value 1",
            "spec.limits[4].defaultRequest[example.com/gpu]: Invalid value: \"2\": default value 1 must equal to defaultRequest value 2 in example.com/gpu",
        ]
    );
}

#[test]
fn ratio_may_not_exceed_max_over_min() {
    let range = json!({"spec": {"limits": [{"type": "Container",
        "min": {"cpu": "100m"}, "max": {"cpu": "200m"}, "maxLimitRequestRatio": {"cpu": "3"}}]}});
    assert_eq!(
        messages(&range),
        ["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"3\": ratio 3 is greater than max/min = 2.000000"]
    );
}
