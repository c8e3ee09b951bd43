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
    let job = json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "a"}]}}}});
    assert_eq!(
        messages(validate_job(&job)),
        ["spec.template.spec.containers[0].image: Required value"]
    );
    let cron = json!({"spec": {"schedule": "0 * * * *",
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure"}}}}}});
    assert_eq!(
        messages(validate_cronjob(&cron)),
        ["spec.jobTemplate.spec.template.spec.containers: Required value"]
    );
}

fn template(restart: &str) -> Value {
    json!({"metadata": {"labels": {"a": "b"}},
        "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "x"}]}})
}

#[test]
fn controllers_require_restart_policy_always_and_no_deadline() {
    let mut d = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template("OnFailure")}});
    d["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
    assert_eq!(
        messages(validate_deployment(&d)),
        [
            "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
        ]
    );
    assert_eq!(
        messages(validate_daemonset(&d))[1],
        "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"
    );
}

#[test]
fn statefulset_templates_are_not_pod_validated() {
    // Upstream leaves a StatefulSet's pod spec to the pods it creates.
    let s = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}}});
    assert!(validate_statefulset(&s).is_empty());
    let mut bad = s.clone();
    bad["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
    assert_eq!(
        messages(validate_statefulset(&bad)),
        ["spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""]
    );
}

#[test]
fn jobs_restart_on_failure_or_never() {
    let job = json!({"spec": {"template": template("Always")}});
    assert_eq!(
        messages(validate_job(&job)),
        ["spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""]
    );
    let job = json!({"spec": {"backoffLimit": -1, "template": template("Never")}});
    assert_eq!(
        messages(validate_job(&job)),
        ["spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"]
    );
}

#[test]
fn cronjobs_check_schedule_name_and_policy() {
    let cron = |schedule: &str| {
        json!({"metadata": {"name": "c"}, "spec": {"schedule": schedule, "concurrencyPolicy": "Sometimes",
            "jobTemplate": {"spec": {"template": template("OnFailure")}}}})
    };
    assert_eq!(
        messages(validate_cronjob(&cron("* * *"))),
        [
            "spec.schedule: Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]",
            "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
        ]
    );
    let mut ok = cron("*/5 * * * *");
    ok["spec"]["concurrencyPolicy"] = json!("Forbid");
    assert!(validate_cronjob(&ok).is_empty());
    ok["spec"]["schedule"] = json!("@hourly");
    assert!(validate_cronjob(&ok).is_empty());
    ok["spec"]["schedule"] = json!("CRON_TZ=UTC 0 * * * *");
    assert_eq!(
        messages(validate_cronjob(&ok)),
        ["spec.schedule: Invalid value: \"CRON_TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"]
    );
    ok["spec"]["schedule"] = json!("@hourly");
    ok["metadata"]["name"] = json!("x".repeat(53));
    assert_eq!(
        messages(validate_cronjob(&ok))[0],
        format!(
            "metadata.name: Invalid value: \"{}\": must be no more than 52 characters",
            "x".repeat(53)
        )
    );
}

#[test]
fn replication_controllers_select_their_template() {
    let rc = json!({"spec": {"replicas": 1, "selector": {"app": "web"}, "template": {
        "metadata": {"labels": {"app": "db"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}});
    assert_eq!(
        messages(validate_replication_controller(&rc)),
        [
            "spec.template.metadata.labels: Invalid value: {\"app\":\"db\"}: `selector` does not match template `labels`",
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        ]
    );
    // An empty selector is defaulted from the template's labels.
    let rc = json!({"spec": {"template": {"metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    assert!(validate_replication_controller(&rc).is_empty());
    assert_eq!(
        messages(validate_replication_controller(&json!({"spec": {}}))),
        [
            "spec.selector: Required value",
            "spec.template: Required value"
        ]
    );
}
