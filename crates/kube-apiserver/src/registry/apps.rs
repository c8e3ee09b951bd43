//! Strategies of the workload resources (apps/v1, batch/v1): upstream's
//! defaults and validation (their printers are in `printers/workloads.rs`).

use serde_json::{json, Value};

use super::core::{default_field, default_pod_spec};
use super::ResourceStrategy;

fn default_template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

/// Upstream's defaults of an update strategy: type `RollingUpdate` when
/// unset, and for that type each missing rolling-update parameter (an
/// empty `strategy: {}`, as clients send it, is filled in too).
fn default_update_strategy(spec: &mut Value, key: &str, rolling: Value) {
    default_field(spec, key, json!({}));
    let Some(strategy) = spec.get_mut(key).filter(|s| s.is_object()) else {
        return;
    };
    default_field(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] != "RollingUpdate" {
        return;
    }
    default_field(strategy, "rollingUpdate", json!({}));
    if let (Some(params), Value::Object(defaults)) = (strategy.get_mut("rollingUpdate"), rolling) {
        for (name, value) in defaults {
            default_field(params, &name, value);
        }
    }
}

fn deployment_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "replicas", json!(1));
        default_update_strategy(
            spec,
            "strategy",
            json!({"maxUnavailable": "25%", "maxSurge": "25%"}),
        );
        default_field(spec, "revisionHistoryLimit", json!(10));
        default_field(spec, "progressDeadlineSeconds", json!(600));
    }
    default_template(obj);
}

fn replicaset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "replicas", json!(1));
    }
    default_template(obj);
}

fn statefulset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "replicas", json!(1));
        default_field(spec, "podManagementPolicy", json!("OrderedReady"));
        default_update_strategy(spec, "updateStrategy", json!({"partition": 0}));
        default_field(spec, "revisionHistoryLimit", json!(10));
        default_field(
            spec,
            "persistentVolumeClaimRetentionPolicy",
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
        );
    }
    default_template(obj);
}

fn daemonset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_update_strategy(
            spec,
            "updateStrategy",
            json!({"maxUnavailable": 1, "maxSurge": 0}),
        );
        default_field(spec, "revisionHistoryLimit", json!(10));
    }
    default_template(obj);
}

fn job_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "parallelism", json!(1));
        default_field(spec, "backoffLimit", json!(6));
        default_field(spec, "completionMode", json!("NonIndexed"));
        default_field(spec, "suspend", json!(false));
        default_field(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
        if spec.get("completions").is_none() && spec.get("parallelism") == Some(&json!(1)) {
            default_field(spec, "completions", json!(1));
        }
    }
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

fn cronjob_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "concurrencyPolicy", json!("Allow"));
        default_field(spec, "suspend", json!(false));
        default_field(spec, "successfulJobsHistoryLimit", json!(3));
        default_field(spec, "failedJobsHistoryLimit", json!(1));
    }
    if let Some(spec) = obj.pointer_mut("/spec/jobTemplate/spec/template/spec") {
        default_pod_spec(spec);
    }
}

fn workload(defaults: fn(&mut Value)) -> ResourceStrategy {
    ResourceStrategy {
        defaults,
        ..ResourceStrategy::spec_status()
    }
}

pub fn deployments() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_deployment,
        validate_update: super::validation::update_workloads::validate_selector_update,
        ..workload(deployment_defaults)
    }
}

pub fn replicasets() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_replicaset,
        validate_update: super::validation::update_workloads::validate_selector_update,
        ..workload(replicaset_defaults)
    }
}

pub fn statefulsets() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_statefulset,
        validate_update: super::validation::update_workloads::validate_statefulset_update,
        ..workload(statefulset_defaults)
    }
}

pub fn daemonsets() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_daemonset,
        validate_update: super::validation::update_workloads::validate_selector_update,
        ..workload(daemonset_defaults)
    }
}

pub fn jobs() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_job,
        validate_update: super::validation::update_workloads::validate_job_update,
        ..workload(job_defaults)
    }
}

pub fn cronjobs() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_cronjob,
        ..workload(cronjob_defaults)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_defaults_follow_upstream() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}});
        deployment_defaults(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
    }

    #[test]
    fn empty_update_strategies_are_filled_in() {
        let mut d = json!({"spec": {"strategy": {}}});
        deployment_defaults(&mut d);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        let mut d = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}}});
        deployment_defaults(&mut d);
        assert_eq!(
            d["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": 2, "maxUnavailable": "25%"})
        );
        let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
        deployment_defaults(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        let mut ds = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
        daemonset_defaults(&mut ds);
        assert_eq!(ds["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        let mut sts = json!({"spec": {"updateStrategy": {}}});
        statefulset_defaults(&mut sts);
        assert_eq!(
            sts["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
    }
}
