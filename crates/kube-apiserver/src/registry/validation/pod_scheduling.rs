//! Scheduling fields of a pod spec (upstream's `validateAffinity`,
//! `ValidateTolerations` and `validateTopologySpreadConstraints`): node
//! selector terms, pod (anti-)affinity terms, tolerations and spread
//! constraints.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::selectors::{validate_label_selector, LabelSelectorOptions};
use apimachinery::validation::{
    is_label_value, is_qualified_name, name_is_dns_label, name_is_dns_subdomain,
};
use serde_json::Value;

use super::{int, invalid_all, items, set, text};

/// Upstream's taint effects, in the order its errors list them.
pub(super) const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
const WHEN_UNSATISFIABLE: &[&str] = &["DoNotSchedule", "ScheduleAnyway"];
const INCLUSION_POLICIES: &[&str] = &["Honor", "Ignore"];
const NOT_POSITIVE: &str = "must be greater than zero";
const WEIGHT_RANGE: &str = "must be in the range 1-100";

/// Upstream's `ValidateLabelName`: a qualified name.
pub(super) fn label_name(name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    invalid_all(path, name, is_qualified_name(name), errs);
}

/// `spec.affinity`.
pub(super) fn validate_affinity(affinity: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(node) = set(affinity, "nodeAffinity") {
        let path = path.child("nodeAffinity");
        let required = "requiredDuringSchedulingIgnoredDuringExecution";
        if let Some(selector) = set(node, required) {
            node_selector(selector, false, &path.child(required), errs);
        }
        let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
        for (i, term) in items(node, preferred).iter().enumerate() {
            let p = path.child(preferred).index(i);
            weight(term, &p, errs);
            let preference = term.get("preference").unwrap_or(&Value::Null);
            node_selector_term(preference, true, &p.child("preference"), errs);
        }
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        if let Some(pod) = set(affinity, key) {
            pod_affinity(pod, &path.child(key), errs);
        }
    }
}

fn weight(term: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let w = int(term, "weight").unwrap_or(0);
    if !(1..=100).contains(&w) {
        errs.push(FieldError::invalid(&path.child("weight"), w, WEIGHT_RANGE));
    }
}

/// Upstream's `ValidateNodeSelector`.
pub(super) fn node_selector(
    selector: &Value,
    allow_invalid_values: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let terms_path = path.child("nodeSelectorTerms");
    let terms = items(selector, "nodeSelectorTerms");
    if terms.is_empty() {
        errs.push(FieldError::required(
            &terms_path,
            "must have at least one node selector term",
        ));
        return;
    }
    for (i, term) in terms.iter().enumerate() {
        node_selector_term(term, allow_invalid_values, &terms_path.index(i), errs);
    }
}

fn node_selector_term(
    term: &Value,
    allow_invalid_values: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    for (j, req) in items(term, "matchExpressions").iter().enumerate() {
        let p = path.child("matchExpressions").index(j);
        node_selector_requirement(req, allow_invalid_values, &p, errs);
    }
    for (j, req) in items(term, "matchFields").iter().enumerate() {
        node_field_requirement(req, &path.child("matchFields").index(j), errs);
    }
}

fn string_values(req: &Value) -> Vec<&str> {
    items(req, "values")
        .iter()
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

fn node_selector_requirement(
    req: &Value,
    allow_invalid_values: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let values = string_values(req);
    let values_path = path.child("values");
    match text(req, "operator") {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            &values_path,
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            &values_path,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => errs.push(FieldError::required(
            &values_path,
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    label_name(text(req, "key"), &path.child("key"), errs);
    if !allow_invalid_values {
        for (i, value) in values.iter().enumerate() {
            invalid_all(&values_path.index(i), value, is_label_value(value), errs);
        }
    }
}

fn node_field_requirement(req: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let values = string_values(req);
    match text(req, "operator") {
        "In" | "NotIn" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    let key = text(req, "key");
    if key != "metadata.name" {
        errs.push(FieldError::invalid(
            &path.child("key"),
            key,
            "not a valid field selector key",
        ));
        return;
    }
    for (i, value) in values.iter().enumerate() {
        let p = path.child("values").index(i);
        invalid_all(&p, value, name_is_dns_subdomain(value, false), errs);
    }
}

fn pod_affinity(affinity: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let required = "requiredDuringSchedulingIgnoredDuringExecution";
    for (i, term) in items(affinity, required).iter().enumerate() {
        pod_affinity_term(term, &path.child(required).index(i), errs);
    }
    let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
    for (i, term) in items(affinity, preferred).iter().enumerate() {
        let p = path.child(preferred).index(i);
        weight(term, &p, errs);
        let inner = term.get("podAffinityTerm").unwrap_or(&Value::Null);
        pod_affinity_term(inner, &p.child("podAffinityTerm"), errs);
    }
}

fn pod_affinity_term(term: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let options = LabelSelectorOptions::default();
    for key in ["labelSelector", "namespaceSelector"] {
        errs.extend(validate_label_selector(
            term.get(key),
            options,
            &path.child(key),
        ));
    }
    for ns in items(term, "namespaces") {
        let ns = ns.as_str().unwrap_or_default();
        invalid_all(
            &path.child("namespace"),
            ns,
            name_is_dns_label(ns, false),
            errs,
        );
    }
    let selector = set(term, "labelSelector");
    let match_keys = string_array(term, "matchLabelKeys");
    let mismatch_keys = string_array(term, "mismatchLabelKeys");
    label_keys(&match_keys, selector, &path.child("matchLabelKeys"), errs);
    label_keys(
        &mismatch_keys,
        selector,
        &path.child("mismatchLabelKeys"),
        errs,
    );
    for (i, key) in match_keys.iter().enumerate() {
        if mismatch_keys.contains(key) {
            errs.push(FieldError::invalid(
                &path.child("matchLabelKeys").index(i),
                *key,
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
    let topology_key = text(term, "topologyKey");
    if topology_key.is_empty() {
        errs.push(FieldError::required(
            &path.child("topologyKey"),
            "can not be empty",
        ));
    }
    label_name(topology_key, &path.child("topologyKey"), errs);
}

fn string_array<'a>(obj: &'a Value, key: &str) -> Vec<&'a str> {
    items(obj, key).iter().filter_map(Value::as_str).collect()
}

/// Match/mismatch label keys need a label selector and must be label names.
fn label_keys(keys: &[&str], selector: Option<&Value>, path: &Path, errs: &mut Vec<FieldError>) {
    if keys.is_empty() {
        return;
    }
    if selector.is_none() {
        errs.push(FieldError::forbidden(
            path,
            "must not be specified when labelSelector is not set",
        ));
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        label_name(key, &path.index(i), errs);
    }
}

/// `spec.tolerations`.
pub(super) fn validate_tolerations(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for (i, toleration) in items(spec, "tolerations").iter().enumerate() {
        let idx = path.index(i);
        let key = text(toleration, "key");
        let operator = text(toleration, "operator");
        let effect = text(toleration, "effect");
        if !key.is_empty() {
            label_name(key, &idx.child("key"), errs);
        }
        if key.is_empty() && operator != "Exists" {
            errs.push(FieldError::invalid(
                &idx.child("operator"),
                operator,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if set(toleration, "tolerationSeconds").is_some() && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                &idx.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        toleration_operator(toleration, operator, &idx.child("operator"), errs);
        if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
            errs.push(FieldError::not_supported(
                &idx.child("effect"),
                effect,
                TAINT_EFFECTS,
            ));
        }
    }
}

fn toleration_operator(
    toleration: &Value,
    operator: &str,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let value = text(toleration, "value");
    match operator {
        "Equal" | "" => {
            let msgs = is_label_value(value);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(path, value, msgs.join(";")));
            }
        }
        "Exists" => {
            if !value.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    value,
                    "value must be empty when `operator` is 'Exists'",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(path, other, &["Equal", "Exists"])),
    }
}

/// `spec.topologySpreadConstraints`.
pub(super) fn validate_topology_spread(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let constraints = items(spec, "topologySpreadConstraints");
    for (i, constraint) in constraints.iter().enumerate() {
        let idx = path.index(i);
        let max_skew = int(constraint, "maxSkew").unwrap_or(0);
        if max_skew <= 0 {
            errs.push(FieldError::invalid(
                &idx.child("maxSkew"),
                max_skew,
                NOT_POSITIVE,
            ));
        }
        let topology_key = text(constraint, "topologyKey");
        if topology_key.is_empty() {
            errs.push(FieldError::required(
                &idx.child("topologyKey"),
                "can not be empty",
            ));
        }
        let when = text(constraint, "whenUnsatisfiable");
        if !WHEN_UNSATISFIABLE.contains(&when) {
            errs.push(FieldError::not_supported(
                &idx.child("whenUnsatisfiable"),
                when,
                WHEN_UNSATISFIABLE,
            ));
        }
        let repeated = constraints[i + 1..].iter().any(|c| {
            text(c, "topologyKey") == topology_key && text(c, "whenUnsatisfiable") == when
        });
        if repeated {
            errs.push(FieldError::duplicate(
                &idx.child("{topologyKey, whenUnsatisfiable}"),
                format!("{{{topology_key}, {when}}}"),
            ));
        }
        spread_details(constraint, when, &idx, errs);
    }
}

fn spread_details(constraint: &Value, when: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(min) = int(constraint, "minDomains") {
        let p = path.child("minDomains");
        if min <= 0 {
            errs.push(FieldError::invalid(&p, min, NOT_POSITIVE));
        }
        if when != "DoNotSchedule" {
            let msg =
                format!("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}");
            errs.push(FieldError::invalid(&p, min, msg));
        }
    }
    for key in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
        if let Some(policy) = constraint.get(key).and_then(Value::as_str) {
            if !INCLUSION_POLICIES.contains(&policy) {
                errs.push(FieldError::not_supported(
                    &path.child(key),
                    policy,
                    INCLUSION_POLICIES,
                ));
            }
        }
    }
    let selector = set(constraint, "labelSelector");
    let keys = string_array(constraint, "matchLabelKeys");
    let keys_path = path.child("matchLabelKeys");
    if !keys.is_empty() && selector.is_none() {
        errs.push(FieldError::forbidden(
            &keys_path,
            "must not be specified when labelSelector is not set",
        ));
    }
    for (i, key) in keys.iter().enumerate() {
        label_name(key, &keys_path.index(i), errs);
    }
    errs.extend(validate_label_selector(
        selector,
        LabelSelectorOptions::default(),
        &path.child("labelSelector"),
    ));
}
