//! Strategies of the workload resources (apps/v1, batch/v1): upstream's
//! defaults (`pkg/apis/apps/v1/defaults.go`, `pkg/apis/batch/v1/defaults.go`
//! and the pod template's core/v1 defaults) and validation (their printers
//! are in `printers/workloads.rs`).

use serde_json::{json, Value};

use super::pod_defaults::{default_nonempty, default_pod_spec, default_unset};
use super::ResourceStrategy;

fn default_template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

/// A struct field (not a pointer in Go): missing or null reads as empty.
fn struct_field<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    default_unset(obj, key, json!({}));
    obj.get_mut(key).filter(|v| v.is_object())
}

/// `SetDefaults_Deployment`/`SetDefaults_DaemonSet`'s update strategy: type
/// `RollingUpdate` when empty, and for that type each unset rolling-update
/// parameter (an empty `strategy: {}`, as clients send it, is filled in too).
fn default_rolling_update(spec: &mut Value, key: &str, max_unavailable: Value, max_surge: Value) {
    let Some(strategy) = struct_field(spec, key) else {
        return;
    };
    default_nonempty(strategy, "type", "RollingUpdate");
    if strategy["type"] != "RollingUpdate" {
        return;
    }
    if let Some(params) = struct_field(strategy, "rollingUpdate") {
        default_unset(params, "maxUnavailable", max_unavailable);
        default_unset(params, "maxSurge", max_surge);
    }
}

/// apps/v1 `SetDefaults_Deployment`.
fn deployment_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        default_unset(spec, "replicas", json!(1));
        default_rolling_update(spec, "strategy", json!("25%"), json!("25%"));
        default_unset(spec, "revisionHistoryLimit", json!(10));
        default_unset(spec, "progressDeadlineSeconds", json!(600));
    }
    default_template(obj);
}

/// apps/v1 `SetDefaults_ReplicaSet`.
fn replicaset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        default_unset(spec, "replicas", json!(1));
    }
    default_template(obj);
}

/// apps/v1 `SetDefaults_StatefulSet`: unlike the other kinds, an explicit
/// `RollingUpdate` type without parameters keeps none; `maxUnavailable`
/// is defaulted as the MaxUnavailableStatefulSet gate (beta, on) does.
fn statefulset_update_strategy(spec: &mut Value) {
    let Some(strategy) = struct_field(spec, "updateStrategy") else {
        return;
    };
    if strategy
        .get("type")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        strategy["type"] = json!("RollingUpdate");
        default_unset(strategy, "rollingUpdate", json!({}));
    }
    if strategy["type"] != "RollingUpdate" {
        return;
    }
    if let Some(params) = strategy.get_mut("rollingUpdate").filter(|p| p.is_object()) {
        default_unset(params, "partition", json!(0));
        default_unset(params, "maxUnavailable", json!(1));
    }
}

fn statefulset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        default_nonempty(spec, "podManagementPolicy", "OrderedReady");
        statefulset_update_strategy(spec);
        default_unset(spec, "persistentVolumeClaimRetentionPolicy", json!({}));
        if let Some(policy) = spec
            .get_mut("persistentVolumeClaimRetentionPolicy")
            .filter(|p| p.is_object())
        {
            default_nonempty(policy, "whenDeleted", "Retain");
            default_nonempty(policy, "whenScaled", "Retain");
        }
        default_unset(spec, "replicas", json!(1));
        default_unset(spec, "revisionHistoryLimit", json!(10));
        // Claim templates get a claim's defaults (`SetDefaults_PersistentVolumeClaim`
        // and its spec's), status included.
        let claims = spec
            .get_mut("volumeClaimTemplates")
            .and_then(Value::as_array_mut);
        for claim in claims.into_iter().flatten().filter(|c| c.is_object()) {
            if let Some(claim_spec) = claim.get_mut("spec").filter(|s| s.is_object()) {
                default_unset(claim_spec, "volumeMode", json!("Filesystem"));
            }
            if let Some(status) = struct_field(claim, "status") {
                default_nonempty(status, "phase", "Pending");
            }
        }
    }
    default_template(obj);
}

/// apps/v1 `SetDefaults_DaemonSet`.
fn daemonset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        default_rolling_update(spec, "updateStrategy", json!(1), json!(0));
        default_unset(spec, "revisionHistoryLimit", json!(10));
    }
    default_template(obj);
}

/// `SetDefaults_PodFailurePolicyOnPodConditionsPattern`: a pattern matches
/// conditions that are `True` unless it says otherwise.
fn pod_failure_policy_defaults(job_spec: &mut Value) {
    let rules = job_spec
        .pointer_mut("/podFailurePolicy/rules")
        .and_then(Value::as_array_mut);
    for rule in rules.into_iter().flatten() {
        let patterns = rule
            .get_mut("onPodConditions")
            .and_then(Value::as_array_mut);
        for pattern in patterns.into_iter().flatten().filter(|p| p.is_object()) {
            default_nonempty(pattern, "status", "True");
        }
    }
}

/// batch/v1 `SetDefaults_Job` (JobPodReplacementPolicy is GA): a Job left
/// without completions and parallelism runs one pod once; a per-index
/// backoff limit lifts the Job-wide one to the int32 maximum; a pod
/// failure policy means replacing failed pods only.
fn job_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        let unset = |spec: &Value, key: &str| spec.get(key).is_none_or(Value::is_null);
        if unset(spec, "completions") && unset(spec, "parallelism") {
            spec["completions"] = json!(1);
        }
        default_unset(spec, "parallelism", json!(1));
        let backoff = if unset(spec, "backoffLimitPerIndex") {
            6
        } else {
            i32::MAX
        };
        default_unset(spec, "backoffLimit", json!(backoff));
        default_unset(spec, "completionMode", json!("NonIndexed"));
        default_unset(spec, "suspend", json!(false));
        let replacement = if unset(spec, "podFailurePolicy") {
            "TerminatingOrFailed"
        } else {
            "Failed"
        };
        default_unset(spec, "podReplacementPolicy", json!(replacement));
        default_unset(spec, "manualSelector", json!(false));
        pod_failure_policy_defaults(spec);
    }
    labels_from_template(obj);
    default_template(obj);
}

/// A Job without labels takes its pod template's (`SetDefaults_Job`).
fn labels_from_template(job: &mut Value) {
    let template_labels = job.pointer("/spec/template/metadata/labels").cloned();
    let Some(labels) = template_labels.filter(Value::is_object) else {
        return;
    };
    let own = job.pointer("/metadata/labels").and_then(Value::as_object);
    if own.is_none_or(|l| l.is_empty()) {
        if let Some(meta) = job.get_mut("metadata").filter(|m| m.is_object()) {
            meta["labels"] = labels;
        }
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
    labels_from_template(job);
}

/// batch/v1 `SetDefaults_CronJob`; the job template is no Job (it gets
/// only the defaults of the types it holds: pod spec, failure policy).
fn cronjob_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        default_nonempty(spec, "concurrencyPolicy", "Allow");
        default_unset(spec, "suspend", json!(false));
        default_unset(spec, "successfulJobsHistoryLimit", json!(3));
        default_unset(spec, "failedJobsHistoryLimit", json!(1));
    }
    if let Some(job_spec) = obj.pointer_mut("/spec/jobTemplate/spec") {
        pod_failure_policy_defaults(job_spec);
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
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}})
        );
    }
}
