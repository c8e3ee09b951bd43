//! Defaults and validation of validating admission policies and bindings,
//! checked against upstream's field paths and messages.

use serde_json::json;

use super::*;

fn policy() -> Value {
    json!({
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]
            }]},
            "validations": [{"expression": "object.spec.replicas <= 5", "reason": "Forbidden"}],
            "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]
        }
    })
}

/// The errors of `obj` after defaulting, as `path: body` lines.
fn errors(strategy: &ResourceStrategy, mut obj: Value) -> Vec<String> {
    (strategy.defaults)(&mut obj);
    (strategy.validate)(&obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn policies() -> ResourceStrategy {
    validating_policies(ResourceStrategy::default())
}

#[test]
fn a_complete_policy_is_defaulted_and_valid() {
    let mut obj = policy();
    (policies().defaults)(&mut obj);
    assert_eq!(obj["spec"]["failurePolicy"], "Fail");
    assert_eq!(obj["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(obj["spec"]["matchConstraints"]["objectSelector"], json!({}));
    assert_eq!(
        obj["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
        "*"
    );
    assert_eq!(errors(&policies(), policy()), Vec::<String>::new());
}

#[test]
fn a_policy_needs_validations_or_audit_annotations() {
    let mut obj = policy();
    obj["spec"]["validations"] = json!([]);
    obj["spec"]["auditAnnotations"] = json!([]);
    assert_eq!(
        errors(&policies(), obj),
        [
            "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
            "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
        ]
    );
}

#[test]
fn validations_and_audit_annotations_are_checked_as_upstream() {
    let mut obj = policy();
    obj["spec"]["validations"] = json!([
        {"expression": "  "},
        {"expression": "object.spec.replicas <", "message": "two\nlines", "reason": "Teapot"},
        {"expression": "true", "messageExpression": " ", "message": " "}
    ]);
    obj["spec"]["auditAnnotations"] = json!([
        {"key": "ok", "valueExpression": "'v'"},
        {"key": "ok", "valueExpression": ""},
        {"key": "bad key", "valueExpression": "'v'"}
    ]);
    let errs = errors(&policies(), obj);
    assert_eq!(
        errs[0],
        "spec.validations[0].expression: Required value: expression is not specified"
    );
    assert!(
        errs[1].starts_with("spec.validations[1].expression: Invalid value: \"object.spec.replicas <\": compilation failed"),
        "{}",
        errs[1]
    );
    assert_eq!(
        &errs[2..],
        [
            "spec.validations[1].message: Invalid value: \"two\\nlines\": message must not contain line breaks",
            "spec.validations[1].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"",
            "spec.validations[2].messageExpression: Invalid value: \" \": must be non-empty if specified",
            "spec.validations[2].message: Invalid value: \" \": message must be non-empty if specified",
            "spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified",
            "spec.auditAnnotations[1].key: Duplicate value: \"ok\"",
            "spec.auditAnnotations[2].key: Invalid value: \"p/bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ]
    );
}

#[test]
fn bindings_need_a_policy_and_sensible_actions() {
    let bindings = validating_policy_bindings();
    let errs = errors(
        &bindings,
        json!({"metadata": {"name": "b"}, "spec": {"validationActions": ["Deny", "Warn", "Deny", "Log"]}}),
    );
    assert_eq!(
        errs,
        [
            "spec.policyName: Required value",
            "spec.validationActions[2]: Duplicate value: \"Deny\"",
            "spec.validationActions[3]: Unsupported value: \"Log\": supported values: \"Audit\", \"Deny\", \"Warn\"",
            "spec.validationActions: Invalid value: [\"Deny\",\"Warn\",\"Deny\",\"Log\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ]
    );
    let errs = errors(
        &bindings,
        json!({"metadata": {"name": "b"}, "spec": {"policyName": "p"}}),
    );
    assert_eq!(
        errs,
        ["spec.validationActions: Required value: at least one validation action is required"]
    );
    let mut ok = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Audit", "Warn"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"a": "b"}}}}});
    assert_eq!(errors(&bindings, ok.clone()), Vec::<String>::new());
    (bindings.defaults)(&mut ok);
    assert_eq!(ok["spec"]["matchResources"]["matchPolicy"], "Equivalent");
}
