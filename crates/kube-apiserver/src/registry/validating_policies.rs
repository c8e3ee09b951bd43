//! Defaults and validation of ValidatingAdmissionPolicies and their
//! bindings (upstream's `pkg/apis/admissionregistration` v1 defaults and
//! `ValidateValidatingAdmissionPolicy[Binding]`): the same failure policy,
//! match constraints, parameters, match conditions and variables as the
//! mutating policies (shared with [`super::admission_policies`]), then
//! validations, audit annotations and the bindings' validation actions.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::is_qualified_name;
use serde_json::{json, Value};

use super::admission_policies::{
    compile, default_binding, default_policy, items, strings, text, validate_binding_basics,
    validate_policy_basics,
};
use super::ResourceStrategy;

const REASONS: &[&str] = &[
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];
const VALIDATION_ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_VALUE_EXPRESSION_BYTES: usize = 5 * 1024;

/// The strategy of `validatingadmissionpolicies` (which have a status).
pub fn validating_policies(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: default_policy,
        validate: validate_policy,
        ..base
    }
}

/// The strategy of `validatingadmissionpolicybindings`.
pub fn validating_policy_bindings() -> ResourceStrategy {
    ResourceStrategy {
        defaults: default_binding,
        validate: validate_binding,
        ..ResourceStrategy::default()
    }
}

fn validate_policy(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("spec");
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let params = validate_policy_basics(spec, &path, |_, _, _| {}, &mut errs);
    let (validations, annotations) = (items(spec, "validations"), items(spec, "auditAnnotations"));
    if validations.is_empty() && annotations.is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required(&path.child("validations"), detail));
        errs.push(FieldError::required(
            &path.child("auditAnnotations"),
            detail,
        ));
        return errs;
    }
    for (i, v) in validations.iter().enumerate() {
        validation(v, params, &path.child("validations").index(i), &mut errs);
    }
    let annotations_path = path.child("auditAnnotations");
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        errs.push(FieldError::invalid(
            &annotations_path,
            json!(annotations),
            format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let policy = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut keys = HashSet::new();
    for (i, annotation) in annotations.iter().enumerate() {
        let at = annotations_path.index(i);
        audit_annotation(policy, annotation, params, &at, &mut errs);
        let key = text(annotation, "key");
        if !keys.insert(key) {
            errs.push(FieldError::duplicate(&at.child("key"), key));
        }
    }
    errs
}

fn validation(v: &Value, params: bool, path: &Path, errs: &mut Vec<FieldError>) {
    match text(v, "expression") {
        source if source.trim().is_empty() => errs.push(FieldError::required(
            &path.child("expression"),
            "expression is not specified",
        )),
        source => compile(source, false, params, &path.child("expression"), errs),
    }
    let message_expression = text(v, "messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errs.push(FieldError::invalid(
            &path.child("messageExpression"),
            message_expression,
            "must be non-empty if specified",
        ));
    } else if !message_expression.is_empty() {
        let at = path.child("messageExpression");
        compile(message_expression, false, params, &at, errs);
    }
    let message = text(v, "message");
    if !message.is_empty() && message.trim().is_empty() {
        errs.push(FieldError::invalid(
            &path.child("message"),
            message,
            "message must be non-empty if specified",
        ));
    } else if message.trim().contains(['\n', '\r']) {
        errs.push(FieldError::invalid(
            &path.child("message"),
            message,
            "message must not contain line breaks",
        ));
    }
    if let Some(reason) = v.get("reason").and_then(Value::as_str) {
        if !REASONS.contains(&reason) {
            errs.push(FieldError::not_supported(
                &path.child("reason"),
                reason,
                REASONS,
            ));
        }
    }
}

fn audit_annotation(
    policy: &str,
    annotation: &Value,
    params: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let key = text(annotation, "key");
    let key_path = path.child("key");
    if policy.is_empty() {
        errs.push(FieldError::invalid(
            &key_path,
            key,
            "requires metadata.name be non-empty",
        ));
    } else {
        let full = format!("{policy}/{key}");
        for msg in is_qualified_name(&full) {
            errs.push(FieldError::invalid(&key_path, full.as_str(), msg));
        }
    }
    let source = text(annotation, "valueExpression");
    let at = path.child("valueExpression");
    match source.trim() {
        "" => errs.push(FieldError::required(
            &at,
            "valueExpression is not specified",
        )),
        trimmed if trimmed.len() > MAX_VALUE_EXPRESSION_BYTES => errs.push(FieldError::required(
            &at,
            format!("must not exceed {MAX_VALUE_EXPRESSION_BYTES} bytes in length"),
        )),
        _ => compile(source, false, params, &at, errs),
    }
}

fn validate_binding(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("spec");
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    validate_binding_basics(spec, &path, |_, _, _| {}, &mut errs);
    validation_actions(spec, &path.child("validationActions"), &mut errs);
    errs
}

fn validation_actions(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let actions = strings(spec, "validationActions");
    let mut seen = HashSet::new();
    for (i, action) in actions.iter().enumerate() {
        if !VALIDATION_ACTIONS.contains(action) {
            errs.push(FieldError::not_supported(
                &path.index(i),
                *action,
                VALIDATION_ACTIONS,
            ));
        }
        if !seen.insert(*action) {
            errs.push(FieldError::duplicate(&path.index(i), *action));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errs.push(FieldError::invalid(
            path,
            json!(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one validation action is required",
        ));
    }
}

#[cfg(test)]
#[path = "validating_policies_tests.rs"]
mod tests;
