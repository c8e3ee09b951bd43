//! Update-time validation of the workload types (upstream's apps/v1
//! strategies' selector check, `ValidateStatefulSetUpdate` and batch's
//! `ValidateJobUpdate`): selectors and, for Jobs, the pod template are fixed
//! once the object exists.

use apimachinery::field_errors::{FieldError, Path};
use serde_json::{Map, Value};

use super::update::{immutable_field, immutable_label_selector, semantic_eq};

const STATEFULSET_UPDATABLE: &str = "updates to statefulset spec for fields other than \
'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', \
'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// `spec.selector` may not change (apps/v1 and batch/v1).
fn selector_immutable(new: &Value, old: &Value) -> Option<FieldError> {
    let (n, o) = (spec(new).get("selector"), spec(old).get("selector"));
    let path = Path::new("spec").child("selector");
    (!semantic_eq(n, o)).then(|| immutable_label_selector(&path, n))
}

/// Deployments, ReplicaSets and DaemonSets: the selector is fixed.
pub fn validate_selector_update(new: &Value, old: &Value) -> Vec<FieldError> {
    selector_immutable(new, old).into_iter().collect()
}

/// StatefulSets: only the listed spec fields may change.
pub fn validate_statefulset_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut munged = spec(new).clone();
    if let Some(map) = munged.as_object_mut() {
        for key in [
            "replicas",
            "template",
            "updateStrategy",
            "minReadySeconds",
            "ordinals",
            "revisionHistoryLimit",
            "persistentVolumeClaimRetentionPolicy",
        ] {
            restore(map, spec(old), key);
        }
    }
    if semantic_eq(Some(&munged), Some(spec(old))) {
        return Vec::new();
    }
    vec![FieldError::forbidden(
        &Path::new("spec"),
        STATEFULSET_UPDATABLE,
    )]
}

fn restore(map: &mut Map<String, Value>, old: &Value, key: &str) {
    match old.get(key) {
        Some(v) => {
            map.insert(key.to_owned(), v.clone());
        }
        None => {
            map.remove(key);
        }
    }
}

/// Jobs: selector, pod template and the completion, failure and success
/// policies are fixed. A suspended Job that never started may still change
/// its template's scheduling directives, labels and annotations.
pub fn validate_job_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (new_spec, old_spec) = (spec(new), spec(old));
    let path = Path::new("spec");
    let mut errs: Vec<FieldError> = selector_immutable(new, old).into_iter().collect();
    let mut old_template = old_spec.get("template").cloned().unwrap_or(Value::Null);
    let suspended = old_spec.get("suspend").and_then(Value::as_bool) == Some(true);
    if suspended && old.pointer("/status/startTime").is_none() {
        let new_template = new_spec.get("template").unwrap_or(&Value::Null);
        mutable_scheduling(&mut old_template, new_template);
    }
    errs.extend(immutable_field(
        new_spec.get("template"),
        Some(&old_template),
        &path.child("template"),
    ));
    errs.extend(completions_update(new_spec, old_spec, &path));
    for key in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        errs.extend(immutable_field(
            new_spec.get(key),
            old_spec.get(key),
            &path.child(key),
        ));
    }
    errs
}

/// `completions` is fixed, except that an Indexed Job may scale it
/// together with `parallelism` (elastic Indexed Jobs).
fn completions_update(new: &Value, old: &Value, path: &Path) -> Option<FieldError> {
    let path = path.child("completions");
    let indexed = new.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    if !indexed {
        return immutable_field(new.get("completions"), old.get("completions"), &path);
    }
    let completions = new.get("completions").filter(|c| !c.is_null())?;
    if semantic_eq(Some(completions), old.get("completions"))
        || new.get("parallelism") == Some(completions)
    {
        return None;
    }
    Some(FieldError::invalid(
        &path,
        completions.clone(),
        "can only be modified in tandem with spec.parallelism",
    ))
}

/// Copies into the old template what a not-yet-started Job may change.
fn mutable_scheduling(old: &mut Value, new: &Value) {
    let copy = |to: &mut Value, from: &Value, key: &str| {
        if let Some(map) = to.as_object_mut() {
            restore(map, from, key);
        }
    };
    if let (Some(old_meta), Some(new_meta)) = (old.get_mut("metadata"), new.get("metadata")) {
        copy(old_meta, new_meta, "labels");
        copy(old_meta, new_meta, "annotations");
    }
    let new_spec = new.get("spec").unwrap_or(&Value::Null);
    if let Some(old_spec) = old.get_mut("spec") {
        for key in ["nodeSelector", "tolerations", "schedulingGates"] {
            copy(old_spec, new_spec, key);
        }
        let node_affinity = new_spec.pointer("/affinity/nodeAffinity").cloned();
        if let Some(affinity) = old_spec.get_mut("affinity").and_then(Value::as_object_mut) {
            match node_affinity {
                Some(v) => affinity.insert("nodeAffinity".to_owned(), v),
                None => affinity.remove("nodeAffinity"),
            };
        } else if let (Some(v), Some(map)) = (node_affinity, old_spec.as_object_mut()) {
            map.insert(
                "affinity".to_owned(),
                serde_json::json!({"nodeAffinity": v}),
            );
        }
    }
}

#[cfg(test)]
#[path = "update_workloads_tests.rs"]
mod tests;
