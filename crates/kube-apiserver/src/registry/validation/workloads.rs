//! Workload validation (upstream's `pkg/apis/apps/validation` and the pod
//! template parts of `pkg/apis/batch/validation`): replicas, selectors that
//! must match the template's labels, and the template's pod spec.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::labels::Selector;
use serde_json::{Map, Value};

use super::pod::validate_pod_spec;

/// Validates a Deployment.
pub fn validate_deployment(obj: &Value) -> Vec<FieldError> {
    validate_apps(obj, "deployment", true)
}

/// Validates a ReplicaSet (upstream reuses the deployment wording).
pub fn validate_replicaset(obj: &Value) -> Vec<FieldError> {
    validate_apps(obj, "deployment", true)
}

/// Validates a StatefulSet.
pub fn validate_statefulset(obj: &Value) -> Vec<FieldError> {
    validate_apps(obj, "statefulset", true)
}

/// Validates a DaemonSet.
pub fn validate_daemonset(obj: &Value) -> Vec<FieldError> {
    validate_apps(obj, "daemonset", false)
}

/// Validates a Job: the pod template, and the selector when one is given.
pub fn validate_job(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    nonnegative(spec, "parallelism", &path, &mut errs);
    nonnegative(spec, "completions", &path, &mut errs);
    template(spec, &path, &mut errs);
    errs
}

/// Validates a CronJob's job template.
pub fn validate_cronjob(obj: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("jobTemplate").child("spec");
    let spec = obj
        .pointer("/spec/jobTemplate/spec")
        .unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    template(spec, &path, &mut errs);
    errs
}

fn validate_apps(obj: &Value, kind: &str, replicas: bool) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    if replicas {
        nonnegative(spec, "replicas", &path, &mut errs);
    }
    selector(spec, &path, kind, &mut errs);
    template(spec, &path, &mut errs);
    errs
}

fn nonnegative(spec: &Value, key: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(n) = spec.get(key).and_then(Value::as_i64) {
        if n < 0 {
            let msg = "must be greater than or equal to 0";
            errs.push(FieldError::invalid(&path.child(key), n, msg));
        }
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

fn template(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let pod_spec = spec.pointer("/template/spec").unwrap_or(&Value::Null);
    let p = path.child("template").child("spec");
    errs.extend(validate_pod_spec(pod_spec, &p));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(selector: Value, labels: Value) -> Value {
        json!({"spec": {"replicas": 1, "selector": selector, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "a", "image": "nginx"}]}}}})
    }

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn matching_selector_passes() {
        let d = deployment(
            json!({"matchLabels": {"a": "b"}}),
            json!({"a": "b", "c": "d"}),
        );
        assert!(validate_deployment(&d).is_empty());
        let d = deployment(
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}),
            json!({"a": "b"}),
        );
        assert!(validate_statefulset(&d).is_empty());
    }

    #[test]
    fn selector_must_match_template_labels() {
        let d = deployment(json!({"matchLabels": {"a": "b"}}), json!({"a": "c"}));
        let errs = validate_deployment(&d);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.template.metadata.labels");
        assert_eq!(
            errs[0].detail,
            "`selector` does not match template `labels`"
        );
        assert_eq!(errs[0].bad_value, Some(json!({"a": "c"})));
    }

    #[test]
    fn selector_is_required_and_non_empty() {
        let d = deployment(Value::Null, json!({"a": "b"}));
        assert_eq!(
            messages(validate_daemonset(&d)),
            ["spec.selector: Required value"]
        );
        let d = deployment(json!({}), json!({"a": "b"}));
        let errs = validate_replicaset(&d);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.selector");
        assert_eq!(errs[0].detail, "empty selector is invalid for deployment");
    }

    #[test]
    fn replicas_must_not_be_negative() {
        let mut d = deployment(json!({"matchLabels": {"a": "b"}}), json!({"a": "b"}));
        d["spec"]["replicas"] = json!(-1);
        assert_eq!(
            messages(validate_deployment(&d)),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
        );
    }

    #[test]
    fn template_pod_spec_is_validated() {
        let job = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}});
        assert_eq!(
            messages(validate_job(&job)),
            ["spec.template.spec.containers[0].image: Required value"]
        );
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {}}}}}});
        assert_eq!(
            messages(validate_cronjob(&cron)),
            ["spec.jobTemplate.spec.template.spec.containers: Required value"]
        );
    }
}
