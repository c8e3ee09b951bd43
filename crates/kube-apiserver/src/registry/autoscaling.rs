//! Strategies of HorizontalPodAutoscalers at `autoscaling/v2` (the storage
//! version) and `autoscaling/v1`: upstream's defaults of each version.

use serde_json::{json, Value};

use super::pod_defaults::default_unset;
use super::{validation, ResourceStrategy};

/// autoscaling/v2 `SetDefaults_HorizontalPodAutoscaler`: one replica at
/// least, the CPU target at 80% when no metric is given, and a behavior's
/// scaling rules completed from upstream's (`GenerateHPAScaleUpRules`,
/// `GenerateHPAScaleDownRules`).
fn v2_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    default_unset(spec, "minReplicas", json!(1));
    if spec["metrics"].as_array().is_none_or(Vec::is_empty) {
        spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}]);
    }
    if let Some(behavior) = spec.get_mut("behavior").filter(|b| b.is_object()) {
        default_rules(
            behavior,
            "scaleUp",
            json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
        );
        // No stabilization window: the controller's
        // --horizontal-pod-autoscaler-downscale-stabilization applies.
        default_rules(
            behavior,
            "scaleDown",
            json!({"selectPolicy": "Max",
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}),
        );
    }
}

/// Upstream's `copyHPAScalingRules` over the defaults: every rule the
/// object sets wins.
fn default_rules(behavior: &mut Value, key: &str, defaults: Value) {
    default_unset(behavior, key, json!({}));
    let (Some(rules), Value::Object(defaults)) =
        (behavior.get_mut(key).filter(|r| r.is_object()), defaults)
    else {
        return;
    };
    for (name, value) in defaults {
        default_unset(rules, &name, value);
    }
}

/// autoscaling/v1 `SetDefaults_HorizontalPodAutoscaler` (the CPU target is
/// defaulted in conversion, as upstream does: `api::autoscaling_v1`).
fn v1_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        default_unset(spec, "minReplicas", json!(1));
    }
}

pub fn horizontal_pod_autoscalers() -> ResourceStrategy {
    ResourceStrategy {
        defaults: v2_defaults,
        validate: validation::autoscaling::validate_hpa,
        ..ResourceStrategy::spec_status()
    }
}

pub fn horizontal_pod_autoscalers_v1() -> ResourceStrategy {
    ResourceStrategy {
        defaults: v1_defaults,
        validate: validation::autoscaling::validate_hpa_v1,
        ..ResourceStrategy::spec_status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_defaults_follow_upstream() {
        let mut hpa =
            json!({"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"selectPolicy": "Min"}}}});
        v2_defaults(&mut hpa);
        let spec = &hpa["spec"];
        assert_eq!(spec["minReplicas"], 1);
        assert_eq!(
            spec["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert_eq!(spec["behavior"]["scaleDown"]["selectPolicy"], "Min");
        assert!(spec["behavior"]["scaleDown"]
            .get("stabilizationWindowSeconds")
            .is_none());
        assert_eq!(spec["behavior"]["scaleUp"]["stabilizationWindowSeconds"], 0);
        assert_eq!(spec["behavior"]["scaleUp"]["policies"][0]["value"], 4);
        let mut bare = json!({"spec": {"maxReplicas": 3}});
        v2_defaults(&mut bare);
        assert!(bare["spec"].get("behavior").is_none());
    }
}
