//! Strategies of the workload resources (apps/v1, batch/v1): upstream's
//! defaults and validation (their printers are in `printers/workloads.rs`).

use serde_json::{json, Value};

use super::defaults::default_field;
use super::pod_defaults::default_pod_spec;
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
        // Claim templates get a claim's defaults, status included.
        let claims = spec
            .get_mut("volumeClaimTemplates")
            .and_then(Value::as_array_mut);
        for claim in claims.into_iter().flatten().filter(|c| c.is_object()) {
            if let Some(claim_spec) = claim.get_mut("spec").filter(|s| s.is_object()) {
                default_field(claim_spec, "volumeMode", json!("Filesystem"));
            }
            default_field(claim, "status", json!({}));
            if let Some(status) = claim.get_mut("status") {
                default_field(status, "phase", json!("Pending"));
            }
        }
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

/// Upstream's `generateSelector`: unless `manualSelector` is true, a new
/// Job selects its pods by its uid, and its pod template carries the uid
/// and the Job's name (the `batch.kubernetes.io/` labels and their legacy
/// forms), labels a user set being left alone. The Job itself takes its
/// template's labels when it has none (`SetDefaults_Job`, which upstream
/// applies again when the stored Job is read).
fn job_on_create(job: &mut Value) {
    if job.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let meta = |key: &str| job.pointer(key).and_then(Value::as_str).map(str::to_owned);
    let (Some(name), Some(uid)) = (meta("/metadata/name"), meta("/metadata/uid")) else {
        return;
    };
    let Some(template) = job.pointer_mut("/spec/template").filter(|t| t.is_object()) else {
        return;
    };
    if !template["metadata"].is_object() {
        template["metadata"] = json!({});
    }
    if !template["metadata"]["labels"].is_object() {
        template["metadata"]["labels"] = json!({});
    }
    if let Some(labels) = template["metadata"]["labels"].as_object_mut() {
        for (key, value) in [
            ("job-name", &name),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("batch.kubernetes.io/controller-uid", &uid),
        ] {
            labels.entry(key).or_insert_with(|| json!(value));
        }
    }
    let spec = &mut job["spec"];
    if !spec["selector"].is_object() {
        spec["selector"] = json!({});
    }
    if !spec["selector"]["matchLabels"].is_object() {
        spec["selector"]["matchLabels"] = json!({});
    }
    if let Some(match_labels) = spec["selector"]["matchLabels"].as_object_mut() {
        match_labels
            .entry("batch.kubernetes.io/controller-uid")
            .or_insert_with(|| json!(uid));
    }
    let template_labels = job.pointer("/spec/template/metadata/labels").cloned();
    let own = job.pointer("/metadata/labels").and_then(Value::as_object);
    if own.is_none_or(|l| l.is_empty()) {
        if let Some(labels) = template_labels {
            job["metadata"]["labels"] = labels;
        }
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
        on_create: job_on_create,
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
    fn jobs_select_their_pods_by_uid_unless_manual() {
        let mut job = json!({"metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"template": {"metadata": {"labels": {"job-name": "mine"}}, "spec": {}}}});
        job_on_create(&mut job);
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        let labels = &job["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels["job-name"], "mine");
        assert_eq!(labels["batch.kubernetes.io/job-name"], "pi");
        assert_eq!(labels["controller-uid"], "u-1");
        assert_eq!(labels["batch.kubernetes.io/controller-uid"], "u-1");
        assert_eq!(&job["metadata"]["labels"], labels);
        let mut manual = json!({"metadata": {"name": "m", "uid": "u-2"},
            "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}}}}});
        let before = manual.clone();
        job_on_create(&mut manual);
        assert_eq!(manual, before);
    }

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
