//! Workload validation (upstream's `pkg/apis/apps/validation`, the
//! ReplicationController and PodTemplate parts of
//! `pkg/apis/core/validation` and `pkg/apis/batch/validation`): replicas,
//! selectors that must match the template's labels, the template's pod
//! spec and the restart policy each controller allows.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::labels::Selector;
use apimachinery::validation::object_meta::{validate_annotations, validate_labels};
use serde_json::{Map, Value};

use super::pod::validate_pod_template_spec;
use super::{enumerated, int, nonnegative, set, text};

const CONCURRENCY_POLICIES: &[&str] = &["Allow", "Forbid", "Replace"];
const CRON_DESCRIPTORS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];
/// Jobs created from a CronJob append 11 characters to its name.
const MAX_CRONJOB_NAME: usize = 52;

/// Validates a Deployment.
pub fn validate_deployment(obj: &Value) -> Vec<FieldError> {
    validate_apps(obj, "deployment", Template::Full("ReplicaSet"))
}

/// Validates a ReplicaSet (upstream reuses the deployment wording).
pub fn validate_replicaset(obj: &Value) -> Vec<FieldError> {
    validate_apps(obj, "deployment", Template::Full("ReplicaSet"))
}

/// Validates a StatefulSet: upstream checks only its template's metadata,
/// restart policy and deadline, not the template's pod spec.
pub fn validate_statefulset(obj: &Value) -> Vec<FieldError> {
    validate_apps(obj, "statefulset", Template::MetadataOnly("StatefulSet"))
}

/// Validates a DaemonSet.
pub fn validate_daemonset(obj: &Value) -> Vec<FieldError> {
    validate_apps(obj, "daemonset", Template::Full("DaemonSet"))
}

/// Validates a ReplicationController.
pub fn validate_replication_controller(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    if let Some(n) = int(spec, "minReadySeconds") {
        nonnegative(n, &path.child("minReadySeconds"), &mut errs);
    }
    let empty = Map::new();
    let template_labels = spec
        .pointer("/template/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    // An empty selector is defaulted to the template's labels.
    let selector = spec
        .get("selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
        .unwrap_or(template_labels);
    if selector.is_empty() {
        errs.push(FieldError::required(&path.child("selector"), ""));
    }
    if let Some(n) = int(spec, "replicas") {
        nonnegative(n, &path.child("replicas"), &mut errs);
    }
    let template_path = path.child("template");
    let Some(template) = set(spec, "template") else {
        errs.push(FieldError::required(&template_path, ""));
        return errs;
    };
    let matches = selector
        .iter()
        .all(|(k, v)| template_labels.get(k) == Some(v));
    if !matches {
        errs.push(FieldError::invalid(
            &template_path.child("metadata").child("labels"),
            Value::Object(template_labels.clone()),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(validate_pod_template_spec(template, &template_path));
    controller_template_rules(template, &template_path, "ReplicationController", &mut errs);
    errs
}

/// Validates a Job: counts, deadline and the pod template.
pub fn validate_job(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    job_spec(spec, &Path::new("spec"), &mut errs);
    errs
}

/// Validates a CronJob: name length, schedule, policies and job template.
pub fn validate_cronjob(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name.len() > MAX_CRONJOB_NAME {
        errs.push(FieldError::invalid(
            &Path::new("metadata").child("name"),
            name,
            format!("must be no more than {MAX_CRONJOB_NAME} characters"),
        ));
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let schedule = text(spec, "schedule");
    if schedule.is_empty() {
        errs.push(FieldError::required(&path.child("schedule"), ""));
    } else if let Some(msg) = schedule_error(schedule) {
        errs.push(FieldError::invalid(&path.child("schedule"), schedule, msg));
    }
    if let Some(n) = int(spec, "startingDeadlineSeconds") {
        nonnegative(n, &path.child("startingDeadlineSeconds"), &mut errs);
    }
    enumerated(
        spec,
        "concurrencyPolicy",
        &path,
        CONCURRENCY_POLICIES,
        &mut errs,
    );
    let job_path = path.child("jobTemplate").child("spec");
    let job = spec.pointer("/jobTemplate/spec").unwrap_or(&Value::Null);
    job_spec(job, &job_path, &mut errs);
    for key in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        if let Some(n) = int(spec, key) {
            nonnegative(n, &path.child(key), &mut errs);
        }
    }
    errs
}

/// The checks robfig/cron's standard parser makes before field ranges.
fn schedule_error(schedule: &str) -> Option<String> {
    if schedule.contains("TZ") {
        return Some("cannot use TZ or CRON_TZ in schedule, use timeZone field instead".into());
    }
    if schedule.starts_with('@') {
        let known = CRON_DESCRIPTORS.contains(&schedule) || schedule.starts_with("@every ");
        return (!known).then(|| format!("unrecognized descriptor: {schedule}"));
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    (fields.len() != 5).then(|| {
        format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        )
    })
}

fn job_spec(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
    ] {
        if let Some(n) = int(spec, key) {
            nonnegative(n, &path.child(key), errs);
        }
    }
    let template_path = path.child("template");
    let template = spec.get("template").unwrap_or(&Value::Null);
    errs.extend(validate_pod_template_spec(template, &template_path));
    let policy = template
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always");
    if policy != "OnFailure" && policy != "Never" {
        errs.push(FieldError::not_supported(
            &template_path.child("spec").child("restartPolicy"),
            policy,
            &["OnFailure", "Never"],
        ));
    }
}

/// How much of an apps/v1 workload's template upstream validates.
#[derive(Clone, Copy)]
enum Template {
    /// The whole pod template; the kind names the deadline message.
    Full(&'static str),
    /// Labels and annotations only (StatefulSets).
    MetadataOnly(&'static str),
}

fn validate_apps(obj: &Value, kind: &str, template: Template) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    if kind != "daemonset" {
        if let Some(n) = int(spec, "replicas") {
            nonnegative(n, &path.child("replicas"), &mut errs);
        }
    }
    selector(spec, &path, kind, &mut errs);
    let template_path = path.child("template");
    let template_obj = spec.get("template").unwrap_or(&Value::Null);
    let owner = match template {
        Template::Full(owner) => {
            errs.extend(validate_pod_template_spec(template_obj, &template_path));
            owner
        }
        Template::MetadataOnly(owner) => {
            let meta = template_obj.get("metadata").unwrap_or(&Value::Null);
            let meta_path = template_path.child("metadata");
            validate_labels(meta.get("labels"), &meta_path.child("labels"), &mut errs);
            validate_annotations(
                meta.get("annotations"),
                &meta_path.child("annotations"),
                &mut errs,
            );
            owner
        }
    };
    controller_template_rules(template_obj, &template_path, owner, &mut errs);
    errs
}

/// Controllers that keep pods running: restart policy Always, no deadline.
fn controller_template_rules(
    template: &Value,
    path: &Path,
    owner: &str,
    errs: &mut Vec<FieldError>,
) {
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let spec_path = path.child("spec");
    let policy = text(spec, "restartPolicy");
    if !policy.is_empty() && policy != "Always" {
        errs.push(FieldError::not_supported(
            &spec_path.child("restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if set(spec, "activeDeadlineSeconds").is_some() {
        errs.push(FieldError::forbidden(
            &spec_path.child("activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {owner} is not Supported"),
        ));
    }
}

/// The selector is required, non-empty and must select the template.
fn selector(spec: &Value, path: &Path, kind: &str, errs: &mut Vec<FieldError>) {
    let p = path.child("selector");
    let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) else {
        errs.push(FieldError::required(&p, ""));
        return;
    };
    let selector = match Selector::from_label_selector(Some(sel)) {
        Ok(selector) => selector,
        Err(e) => {
            errs.push(FieldError::invalid(&p, sel.clone(), e.0));
            return;
        }
    };
    if selector.is_empty() {
        let msg = format!("empty selector is invalid for {kind}");
        errs.push(FieldError::invalid(&p, sel.clone(), msg));
        return;
    }
    let empty = Map::new();
    let labels = spec
        .pointer("/template/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if !selector.matches(labels) {
        let lp = path.child("template").child("metadata").child("labels");
        let msg = "`selector` does not match template `labels`";
        errs.push(FieldError::invalid(&lp, Value::Object(labels.clone()), msg));
    }
}

#[cfg(test)]
#[path = "workloads_tests.rs"]
mod tests;
