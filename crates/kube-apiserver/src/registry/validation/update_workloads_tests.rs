use crate::registry::validation::update::IMMUTABLE;
use serde_json::json;

use super::*;

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn workload(selector: Value) -> Value {
    json!({"spec": {"replicas": 1, "selector": selector,
        "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
}

#[test]
fn selectors_are_fixed_and_rendered_as_json() {
    let old = workload(json!({"matchLabels": {"app": "a"}}));
    let mut scaled = old.clone();
    scaled["spec"]["replicas"] = json!(3);
    assert!(validate_selector_update(&scaled, &old).is_empty());
    let new = workload(json!({"matchLabels": {"app": "b", "tier": "web"},
        "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}));
    assert_eq!(
        messages(&validate_selector_update(&new, &old)),
        vec!["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"b\",\"tier\":\"web\"},\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\",\"values\":[\"v\"]}]}: field is immutable"]
    );
    let cause = validate_selector_update(&workload(json!({"matchLabels": {"app": "b"}})), &old)[0]
        .to_cause();
    assert_eq!(cause.field, "spec.selector");
    assert_eq!(cause.reason, "FieldValueInvalid");
    assert_eq!(
        cause.message,
        "Invalid value: {\"matchLabels\":{\"app\":\"b\"}}: field is immutable"
    );
}

#[test]
fn statefulset_changes_only_listed_fields() {
    let mut old = workload(json!({"matchLabels": {"app": "a"}}));
    old["spec"]["serviceName"] = json!("svc");
    let mut new = old.clone();
    new["spec"]["replicas"] = json!(5);
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("y");
    new["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
    new["spec"]["minReadySeconds"] = json!(3);
    assert!(validate_statefulset_update(&new, &old).is_empty());
    new["spec"]["serviceName"] = json!("other");
    assert_eq!(
        messages(&validate_statefulset_update(&new, &old)),
        vec![format!("spec: Forbidden: {STATEFULSET_UPDATABLE}")]
    );
}

#[test]
fn job_template_is_fixed_unless_suspended_and_not_started() {
    let old = workload(json!({"matchLabels": {"app": "a"}}));
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
    new["spec"]["parallelism"] = json!(2);
    let errs = validate_job_update(&new, &old);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "spec.template");
    assert_eq!(errs[0].detail, IMMUTABLE);
    let mut suspended = old.clone();
    suspended["spec"]["suspend"] = json!(true);
    let mut moved = suspended.clone();
    moved["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
    moved["spec"]["template"]["metadata"]["labels"]["extra"] = json!("1");
    assert!(validate_job_update(&moved, &suspended).is_empty());
    moved["spec"]["template"]["spec"]["containers"][0]["image"] = json!("z");
    assert_eq!(validate_job_update(&moved, &suspended).len(), 1);
    let mut started = suspended.clone();
    started["status"] = json!({"startTime": "2024-01-01T00:00:00Z"});
    let mut late = started.clone();
    late["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "b"});
    assert_eq!(validate_job_update(&late, &started).len(), 1);
    let mut mode = old.clone();
    mode["spec"]["completionMode"] = json!("Indexed");
    assert_eq!(
        messages(&validate_job_update(&mode, &old)),
        vec!["spec.completionMode: Invalid value: \"Indexed\": field is immutable"]
    );
}

#[test]
fn job_completions_scale_only_with_parallelism_when_indexed() {
    let mut old = workload(json!({"matchLabels": {"app": "a"}}));
    old["spec"]["completions"] = json!(2);
    old["spec"]["parallelism"] = json!(2);
    let mut new = old.clone();
    new["spec"]["completions"] = json!(4);
    assert_eq!(
        messages(&validate_job_update(&new, &old)),
        vec!["spec.completions: Invalid value: 4: field is immutable"]
    );
    old["spec"]["completionMode"] = json!("Indexed");
    new["spec"]["completionMode"] = json!("Indexed");
    assert_eq!(
        messages(&validate_job_update(&new, &old)),
        vec!["spec.completions: Invalid value: 4: can only be modified in tandem with spec.parallelism"]
    );
    new["spec"]["parallelism"] = json!(4);
    assert!(validate_job_update(&new, &old).is_empty());
}
