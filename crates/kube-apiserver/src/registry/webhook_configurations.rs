//! Defaults and validation of Mutating- and ValidatingWebhookConfigurations
//! (upstream's admissionregistration v1 defaults and
//! `ValidateMutatingWebhookConfiguration` /
//! `ValidateValidatingWebhookConfiguration`): fully qualified unique webhook
//! names, rules, enumerated policies, sideEffects and
//! admissionReviewVersions required, the timeout range, selectors, the
//! client config and match conditions.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::is_dns1123_subdomain;
use apimachinery::validation::selectors::{validate_label_selector, LabelSelectorOptions};
use serde_json::{json, Value};

use super::admission_policies::{match_conditions, named_rule};
use super::ResourceStrategy;

const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
/// The side effect classes v1 accepts (Unknown and Some only in v1beta1).
const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
const MAX_TIMEOUT_SECONDS: i64 = 30;

/// The strategy of `mutatingwebhookconfigurations`.
pub fn mutating() -> ResourceStrategy {
    ResourceStrategy {
        defaults: default_mutating,
        validate: validate_mutating,
        ..ResourceStrategy::default()
    }
}

/// The strategy of `validatingwebhookconfigurations`.
pub fn validating() -> ResourceStrategy {
    ResourceStrategy {
        defaults: default_validating,
        validate: validate_validating,
        ..ResourceStrategy::default()
    }
}

fn webhooks_mut(obj: &mut Value) -> impl Iterator<Item = &mut serde_json::Map<String, Value>> {
    obj.get_mut("webhooks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

fn default_mutating(obj: &mut Value) {
    for hook in webhooks_mut(obj) {
        default_webhook(hook);
        hook.entry("reinvocationPolicy")
            .or_insert_with(|| json!("Never"));
    }
}

fn default_validating(obj: &mut Value) {
    webhooks_mut(obj).for_each(default_webhook);
}

/// Upstream's v1 defaults of one webhook.
fn default_webhook(hook: &mut serde_json::Map<String, Value>) {
    hook.entry("failurePolicy").or_insert_with(|| json!("Fail"));
    hook.entry("matchPolicy")
        .or_insert_with(|| json!("Equivalent"));
    hook.entry("namespaceSelector").or_insert_with(|| json!({}));
    hook.entry("objectSelector").or_insert_with(|| json!({}));
    hook.entry("timeoutSeconds")
        .or_insert_with(|| json!(DEFAULT_TIMEOUT_SECONDS));
    let rules = hook.get_mut("rules").and_then(Value::as_array_mut);
    for rule in rules.into_iter().flatten().filter_map(Value::as_object_mut) {
        rule.entry("scope").or_insert_with(|| json!("*"));
    }
    if let Some(service) = hook
        .get_mut("clientConfig")
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut)
    {
        service.entry("port").or_insert_with(|| json!(443));
    }
}

fn validate_mutating(obj: &Value) -> Vec<FieldError> {
    validate(obj, true)
}

fn validate_validating(obj: &Value) -> Vec<FieldError> {
    validate(obj, false)
}

fn validate(obj: &Value, mutating: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("webhooks");
    let mut names = HashSet::new();
    let hooks = obj.get("webhooks").and_then(Value::as_array);
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let at = path.index(i);
        let name = text(hook, "name");
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&at.child("name"), name));
        }
        webhook(hook, &at, &mut errs);
        if mutating {
            if let Some(policy) = hook.get("reinvocationPolicy").and_then(Value::as_str) {
                enumerated(
                    policy,
                    REINVOCATION_POLICIES,
                    &at.child("reinvocationPolicy"),
                    &mut errs,
                );
            }
        }
        review_versions(hook, &at.child("admissionReviewVersions"), &mut errs);
    }
    errs
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn enumerated(value: &str, supported: &[&str], path: &Path, errs: &mut Vec<FieldError>) {
    if !supported.contains(&value) {
        errs.push(FieldError::not_supported(path, value, supported));
    }
}

/// Upstream's `IsFullyQualifiedName`: a DNS subdomain of three or more
/// segments.
fn fully_qualified(name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let problems = is_dns1123_subdomain(name);
    if !problems.is_empty() {
        errs.push(FieldError::invalid(path, name, problems.join(",")));
    } else if name.split('.').count() < 3 {
        let msg = "should be a domain with at least three segments separated by dots";
        errs.push(FieldError::invalid(path, name, msg));
    }
}

/// The checks both kinds of webhook share, in upstream's order.
fn webhook(hook: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    fully_qualified(text(hook, "name"), &path.child("name"), errs);
    let rules = hook.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        named_rule(rule, &path.child("rules").index(i), errs);
    }
    for (field, supported) in [
        ("failurePolicy", FAILURE_POLICIES),
        ("matchPolicy", MATCH_POLICIES),
    ] {
        if let Some(value) = hook.get(field).and_then(Value::as_str) {
            enumerated(value, supported, &path.child(field), errs);
        }
    }
    // The typed round trip stores an absent value as "".
    match hook.get("sideEffects").and_then(Value::as_str) {
        None | Some("") => errs.push(FieldError::required(
            &path.child("sideEffects"),
            format!("must specify one of {}", SIDE_EFFECTS.join(", ")),
        )),
        Some(s) => enumerated(s, SIDE_EFFECTS, &path.child("sideEffects"), errs),
    }
    if let Some(timeout) = hook.get("timeoutSeconds").and_then(Value::as_i64) {
        if !(1..=MAX_TIMEOUT_SECONDS).contains(&timeout) {
            errs.push(FieldError::invalid(
                &path.child("timeoutSeconds"),
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    for field in ["namespaceSelector", "objectSelector"] {
        if let Some(s) = hook.get(field).filter(|s| !s.is_null()) {
            errs.extend(validate_label_selector(
                Some(s),
                LabelSelectorOptions::default(),
                &path.child(field),
            ));
        }
    }
    let null = Value::Null;
    let config = hook.get("clientConfig").unwrap_or(&null);
    errs.extend(apiextensions::webhook_client_config_errors(
        config,
        &path.child("clientConfig"),
    ));
    match_conditions(hook, false, &path.child("matchConditions"), errs);
}

/// `admissionReviewVersions`: required, and one this server speaks.
fn review_versions(hook: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let versions: Vec<String> = hook
        .get("admissionReviewVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    if versions.is_empty() {
        errs.push(FieldError::required(
            path,
            "must specify one of v1, v1beta1",
        ));
        return;
    }
    errs.extend(apiextensions::webhook_review_versions(
        &versions, true, path,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(hook: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "c"}, "webhooks": [hook]});
        default_validating(&mut obj);
        obj
    }

    fn valid_hook() -> Value {
        json!({
            "name": "check.example.com",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://hook.example.com/check"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""],
                       "apiVersions": ["v1"], "resources": ["pods"]}],
        })
    }

    fn messages(hook: Value) -> Vec<String> {
        validate_validating(&config(hook))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn with(field: &str, value: Value) -> Value {
        let mut hook = valid_hook();
        hook[field] = value;
        hook
    }

    #[test]
    fn defaults_follow_upstream() {
        let mut obj = json!({"webhooks": [{"name": "a.b.c", "rules": [{}],
            "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]});
        default_mutating(&mut obj);
        let hook = &obj["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(hook["matchPolicy"], "Equivalent");
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(hook["reinvocationPolicy"], "Never");
        assert_eq!(hook["namespaceSelector"], json!({}));
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    }

    #[test]
    fn a_valid_webhook_passes() {
        assert_eq!(messages(valid_hook()), Vec::<String>::new());
    }

    #[test]
    fn names_must_be_fully_qualified_and_unique() {
        assert_eq!(
            messages(with("name", json!("check"))),
            ["webhooks[0].name: Invalid value: \"check\": should be a domain with at least three segments separated by dots"]
        );
        let two = json!({"webhooks": [valid_hook(), valid_hook()]});
        let errs: Vec<String> = validate_validating(&two)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            ["webhooks[1].name: Duplicate value: \"check.example.com\""]
        );
    }

    #[test]
    fn side_effects_review_versions_and_timeout() {
        let mut hook = valid_hook();
        hook.as_object_mut().map(|h| h.remove("sideEffects"));
        assert_eq!(
            messages(hook),
            ["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"]
        );
        assert_eq!(
            messages(with("sideEffects", json!("Some"))),
            ["webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""]
        );
        assert_eq!(
            messages(with("admissionReviewVersions", json!([]))),
            ["webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"]
        );
        assert_eq!(
            messages(with("admissionReviewVersions", json!(["v2"]))),
            ["webhooks[0].admissionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1"]
        );
        assert_eq!(
            messages(with("timeoutSeconds", json!(31))),
            ["webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"]
        );
    }

    #[test]
    fn client_configs_are_checked() {
        assert_eq!(
            messages(with("clientConfig", json!({}))),
            ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]
        );
        let errs = messages(with(
            "clientConfig",
            json!({"url": "http://hook.example.com/x?a=b"}),
        ));
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].contains("'https' is the only allowed URL scheme"));
        assert!(errs[1].contains("query parameters are not permitted in the URL"));
        let errs = messages(with(
            "clientConfig",
            json!({"service": {"name": "s", "namespace": "n", "port": 70000}}),
        ));
        assert_eq!(
            errs,
            ["webhooks[0].clientConfig.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive"]
        );
    }
}
