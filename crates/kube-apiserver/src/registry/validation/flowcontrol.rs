//! Validation of FlowSchemas and PriorityLevelConfigurations (upstream's
//! pkg/apis/flowcontrol/validation: `ValidateFlowSchema` and
//! `ValidatePriorityLevelConfiguration`, on create and update), with
//! upstream's paths and messages. A limited level's
//! `nominalConcurrencyShares` may be zero, as the v1 API documents (the
//! newest validation.go read, of 1.31, has that behind an option that
//! 1.37's strategy no longer sets; the v1 docs and the served behaviour
//! decide).
//!
//! Not checked: that the mandatory objects (`exempt`, `catch-all`) keep
//! their fixed spec.

use std::collections::HashSet;

use apimachinery::field_errors::{ErrorType, FieldError, Path};
use apimachinery::validation::{is_dns1123_label, name_is_dns_subdomain};
use serde_json::Value;

use super::update::typed_error;
use super::{int, invalid_all, is_true, items, set, text};

const MAX_MATCHING_PRECEDENCE: i64 = 10_000;
/// Upstream's `supportedDistinguisherMethods`.
const DISTINGUISHER_METHODS: &[&str] = &["ByNamespace", "ByUser"];
/// Upstream's `supportedVerbs`, sorted as `sets.String.List` prints them.
const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
const SUBJECT_KINDS: &[&str] = &["Group", "ServiceAccount", "User"];
const ENABLEMENTS: &[&str] = &["Exempt", "Limited"];
const LIMIT_RESPONSES: &[&str] = &["Queue", "Reject"];
const MAX_QUEUES: i64 = 10_000_000;
/// Upstream's `shufflesharding.MaxHashBits`.
const MAX_HASH_BITS: f64 = 60.0;
const NS_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";
const PERCENT: &str = "must be between 0 and 100, inclusive";
const NON_NEGATIVE: &str = "must be a non-negative integer";

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

fn name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn strings<'a>(obj: &'a Value, key: &str) -> Vec<&'a str> {
    items(obj, key)
        .iter()
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

/// FlowSchemas (create and update): upstream's `ValidateFlowSchemaSpec`
/// and `ValidateFlowSchemaStatus`.
pub fn validate_flow_schema(fs: &Value) -> Vec<FieldError> {
    let (spec, path) = (spec(fs), Path::new("spec"));
    let mut errs = Vec::new();
    let precedence = int(spec, "matchingPrecedence").unwrap_or(0);
    let at = path.child("matchingPrecedence");
    if precedence <= 0 {
        errs.push(FieldError::invalid(
            &at,
            precedence,
            "must be a positive value",
        ));
    }
    if precedence > MAX_MATCHING_PRECEDENCE {
        let msg = format!("must not be greater than {MAX_MATCHING_PRECEDENCE}");
        errs.push(FieldError::invalid(&at, precedence, msg));
    }
    if precedence == 1 && name(fs) != "exempt" {
        let msg = "only the schema named 'exempt' may have matchingPrecedence 1";
        errs.push(FieldError::invalid(&at, precedence, msg));
    }
    if let Some(method) = set(spec, "distinguisherMethod") {
        let kind = text(method, "type");
        if !DISTINGUISHER_METHODS.contains(&kind) {
            let at = path.child("distinguisherMethod").child("type");
            // Upstream shows the internal method struct.
            let shown = serde_json::json!({"Type": kind});
            let detail = "supported values: \"ByNamespace\", \"ByUser\"";
            errs.push(typed_error(ErrorType::NotSupported, &at, &shown, detail));
        }
    }
    let level = spec.pointer("/priorityLevelConfiguration/name");
    let level = level.and_then(Value::as_str).unwrap_or_default();
    let at = path.child("priorityLevelConfiguration").child("name");
    if level.is_empty() {
        errs.push(FieldError::required(&at, "must reference a priority level"));
    } else {
        invalid_all(&at, level, name_is_dns_subdomain(level, false), &mut errs);
    }
    for (i, rule) in items(spec, "rules").iter().enumerate() {
        policy_rules(rule, &path.child("rules").index(i), &mut errs);
    }
    conditions(fs, &mut errs);
    errs
}

fn policy_rules(rule: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let subjects = items(rule, "subjects");
    if subjects.is_empty() {
        let msg = "subjects must contain at least one value";
        errs.push(FieldError::required(&path.child("subjects"), msg));
    }
    for (i, subject) in subjects.iter().enumerate() {
        flow_subject(subject, &path.child("subjects").index(i), errs);
    }
    let (resources, non_resources) = (
        items(rule, "resourceRules"),
        items(rule, "nonResourceRules"),
    );
    if resources.is_empty() && non_resources.is_empty() {
        let msg = "at least one of resourceRules and nonResourceRules has to be non-empty";
        errs.push(FieldError::required(path, msg));
    }
    for (i, r) in resources.iter().enumerate() {
        resource_rule(r, &path.child("resourceRules").index(i), errs);
    }
    for (i, r) in non_resources.iter().enumerate() {
        non_resource_rule(r, &path.child("nonResourceRules").index(i), errs);
    }
}

/// The kind's own member, and none of the others.
fn flow_subject(subject: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let kind = text(subject, "kind");
    let member = match kind {
        "ServiceAccount" => "serviceAccount",
        "User" => "user",
        "Group" => "group",
        _ => {
            let at = path.child("kind");
            errs.push(FieldError::not_supported(&at, kind, SUBJECT_KINDS));
            return;
        }
    };
    let at = path.child(member);
    match set(subject, member) {
        None => {
            let msg = format!("{member} is required when subject kind is '{kind}'");
            errs.push(FieldError::required(&at, msg));
        }
        Some(s) if member == "serviceAccount" => service_account_subject(s, &at, errs),
        Some(s) if text(s, "name").is_empty() => {
            errs.push(FieldError::required(&at.child("name"), ""));
        }
        Some(_) => {}
    }
    for (other, other_kind) in [
        ("serviceAccount", "ServiceAccount"),
        ("user", "User"),
        ("group", "Group"),
    ] {
        if other != member && set(subject, other).is_some() {
            let msg = format!("{other} is forbidden when subject kind is not '{other_kind}'");
            errs.push(FieldError::forbidden(&path.child(other), msg));
        }
    }
}

fn service_account_subject(sa: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let name = text(sa, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else if name != "*" {
        invalid_all(
            &path.child("name"),
            name,
            name_is_dns_subdomain(name, false),
            errs,
        );
    }
    let namespace = text(sa, "namespace");
    if namespace.is_empty() {
        let msg = "must specify namespace for service account";
        errs.push(FieldError::required(&path.child("namespace"), msg));
    } else {
        invalid_all(
            &path.child("namespace"),
            namespace,
            is_dns1123_label(namespace),
            errs,
        );
    }
}

/// Verbs: some, `*` alone, or supported ones.
fn verbs(rule: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let list = strings(rule, "verbs");
    let at = path.child("verbs");
    if list.is_empty() {
        let msg = "verbs must contain at least one value";
        errs.push(FieldError::required(&at, msg));
    } else if list.contains(&"*") {
        if list.len() > 1 {
            let msg = "if '*' is present, must not specify other verbs";
            errs.push(FieldError::invalid(&at, list, msg));
        }
    } else if !list.iter().all(|v| VERBS.contains(v)) {
        errs.push(FieldError::not_supported(&at, list, VERBS));
    }
}

/// A list that must not be empty and may hold `*` only alone.
fn wildcard_list(rule: &Value, key: &str, what: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let list = strings(rule, key);
    let at = path.child(key);
    if list.is_empty() {
        let msg = format!("resource rules must supply at least one {what}");
        errs.push(FieldError::required(&at, msg));
    } else if list.len() > 1 && list.contains(&"*") {
        let msg = format!("if '*' is present, must not specify other {what}s");
        errs.push(FieldError::invalid(&at, list, msg));
    }
}

fn resource_rule(rule: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    verbs(rule, path, errs);
    wildcard_list(rule, "apiGroups", "api group", path, errs);
    wildcard_list(rule, "resources", "resource", path, errs);
    let namespaces = strings(rule, "namespaces");
    let at = path.child("namespaces");
    if namespaces.is_empty() && !is_true(rule, "clusterScope") {
        let msg = "resource rules that are not cluster scoped must supply at least one namespace";
        errs.push(FieldError::required(&at, msg));
    } else if namespaces.contains(&"*") {
        if namespaces.len() > 1 {
            let msg = "if '*' is present, must not specify other namespaces";
            errs.push(FieldError::invalid(&at, namespaces, msg));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for msg in is_dns1123_label(ns) {
                errs.push(FieldError::invalid(
                    &at.index(i),
                    *ns,
                    format!("{NS_INTRO}{msg}"),
                ));
            }
        }
    }
}

fn non_resource_rule(rule: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    verbs(rule, path, errs);
    let urls = strings(rule, "nonResourceURLs");
    let at = path.child("nonResourceURLs");
    if urls.is_empty() {
        let msg = "nonResourceURLs must contain at least one value";
        errs.push(FieldError::required(&at, msg));
    } else if urls.contains(&"*") {
        if urls.len() > 1 {
            let msg = "if '*' is present, must not specify other non-resource URLs";
            errs.push(FieldError::invalid(&at, urls, msg));
        }
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(msg) = non_resource_url(url) {
                errs.push(FieldError::invalid(&at.index(i), *url, msg));
            }
        }
    }
}

/// Upstream's `ValidateNonResourceURLPath`.
fn non_resource_url(url: &str) -> Option<&'static str> {
    if url.is_empty() {
        return Some("must not be empty");
    }
    if url == "/" {
        return None;
    }
    if !url.starts_with('/') {
        return Some("must start with slash");
    }
    if url.contains(' ') {
        return Some("must not contain white-space");
    }
    if url.contains("//") {
        return Some("must not contain double slash");
    }
    let wildcards = url.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !url.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

/// Status conditions: each with a type, no type twice.
fn conditions(obj: &Value, errs: &mut Vec<FieldError>) {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let list = items(status, "conditions");
    let mut seen = HashSet::with_capacity(list.len());
    let path = Path::new("status").child("conditions");
    for (i, condition) in list.iter().enumerate() {
        let kind = text(condition, "type");
        let at = path.index(i).child("type");
        if !seen.insert(kind) {
            errs.push(FieldError::duplicate(&at, kind));
        }
        if kind.is_empty() {
            errs.push(FieldError::required(&at, "must not be empty"));
        }
    }
}

/// PriorityLevelConfigurations (create and update): upstream's
/// `ValidatePriorityLevelConfigurationSpec` and status rules.
pub fn validate_priority_level(pl: &Value) -> Vec<FieldError> {
    let (spec, path) = (spec(pl), Path::new("spec"));
    let mut errs = Vec::new();
    let kind = text(spec, "type");
    if (name(pl) == "exempt") != (kind == "Exempt") {
        let msg = "type must be 'Exempt' if and only if name is 'exempt'";
        errs.push(FieldError::invalid(&path.child("type"), kind, msg));
    }
    let (limited, exempt) = (set(spec, "limited"), set(spec, "exempt"));
    match kind {
        "Exempt" => {
            if limited.is_some() {
                let msg = "must be nil if the type is not Limited";
                errs.push(FieldError::forbidden(&path.child("limited"), msg));
            }
            if let Some(exempt) = exempt {
                let at = path.child("exempt");
                shares(exempt, &at, &mut errs);
                lending(exempt, &at, &mut errs);
            }
        }
        "Limited" => {
            if exempt.is_some() {
                let msg = "must be nil if the type is Limited";
                errs.push(FieldError::forbidden(&path.child("exempt"), msg));
            }
            match limited {
                None => errs.push(FieldError::required(
                    &path.child("limited"),
                    "must not be empty when type is Limited",
                )),
                Some(limited) => limited_level(limited, &path.child("limited"), &mut errs),
            }
        }
        _ => errs.push(FieldError::not_supported(
            &path.child("type"),
            kind,
            ENABLEMENTS,
        )),
    }
    conditions(pl, &mut errs);
    errs
}

/// `nominalConcurrencyShares`: zero or more (zero makes a "jail" level).
fn shares(level: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(shares) = int(level, "nominalConcurrencyShares").filter(|s| *s < 0) {
        let at = path.child("nominalConcurrencyShares");
        errs.push(FieldError::invalid(&at, shares, NON_NEGATIVE));
    }
}

fn lending(level: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(percent) = int(level, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
        errs.push(FieldError::invalid(
            &path.child("lendablePercent"),
            percent,
            PERCENT,
        ));
    }
}

fn limited_level(limited: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    shares(limited, path, errs);
    limit_response(
        limited.get("limitResponse").unwrap_or(&Value::Null),
        path,
        errs,
    );
    lending(limited, path, errs);
    if let Some(limit) = int(limited, "borrowingLimitPercent").filter(|p| *p < 0) {
        let at = path.child("borrowingLimitPercent");
        errs.push(FieldError::invalid(
            &at,
            limit,
            "if specified, must be a non-negative integer",
        ));
    }
}

fn limit_response(response: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let path = path.child("limitResponse");
    let queuing = set(response, "queuing");
    match text(response, "type") {
        "Reject" if queuing.is_some() => errs.push(FieldError::forbidden(
            &path.child("queuing"),
            "must be nil if limited.limitResponse.type is not Limited",
        )),
        "Reject" => {}
        "Queue" => match queuing {
            None => errs.push(FieldError::required(
                &path.child("queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => queuing_config(q, &path.child("queuing"), errs),
        },
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            LIMIT_RESPONSES,
        )),
    }
}

/// Upstream's `ValidatePriorityLevelQueuingConfiguration`.
fn queuing_config(q: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let (limit, queues, hand) = (
        int(q, "queueLengthLimit").unwrap_or(0),
        int(q, "queues").unwrap_or(0),
        int(q, "handSize").unwrap_or(0),
    );
    if limit <= 0 {
        errs.push(FieldError::invalid(
            &path.child("queueLengthLimit"),
            limit,
            "must be positive",
        ));
    }
    let at = path.child("queues");
    if queues <= 0 {
        errs.push(FieldError::invalid(&at, queues, "must be positive"));
    } else if queues > MAX_QUEUES {
        let msg = format!("must not be greater than {MAX_QUEUES}");
        errs.push(FieldError::invalid(&at, queues, msg));
    }
    let at = path.child("handSize");
    let entropy = ((queues as f64).log2() * hand as f64).ceil();
    if hand <= 0 {
        errs.push(FieldError::invalid(&at, hand, "must be positive"));
    } else if hand > queues {
        let msg = format!("should not be greater than queues ({queues})");
        errs.push(FieldError::invalid(&at, hand, msg));
    } else if entropy > MAX_HASH_BITS {
        let msg = format!(
            "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"
        );
        errs.push(FieldError::invalid(&at, hand, msg));
    }
}

#[cfg(test)]
#[path = "flowcontrol_tests.rs"]
mod tests;
