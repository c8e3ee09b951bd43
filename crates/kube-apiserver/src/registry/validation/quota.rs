//! Validation of ResourceQuotas (upstream's `ValidateResourceQuota` and
//! `ValidateResourceQuotaUpdate`): resource names and values in
//! `spec.hard` and the status lists, scopes known and compatible with the
//! hard resources, scope selector operators, and scopes fixed once set.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::quantity::Quantity;
use apimachinery::validation::is_qualified_name;
use apimachinery::validation::object_meta::IS_NEGATIVE_ERROR_MSG;
use serde_json::Value;

/// Upstream's `standardQuotaResources`.
const QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// Resources counted in whole objects (upstream's `integerResources`).
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

/// Scopes that take no values (upstream requires `Exists` for them).
const EXISTS_ONLY: &[&str] = &[
    "BestEffort",
    "NotBestEffort",
    "Terminating",
    "NotTerminating",
    "CrossNamespacePodAffinity",
];

const EXISTS_MSG: &str = "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, \
    ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, \
    ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity";

fn is_standard_quota_resource(name: &str) -> bool {
    QUOTA_RESOURCES.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// Upstream's `IsExtendedResourceName`.
fn is_extended(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.")
}

/// Upstream's `IsResourceQuotaScopeValidForResource`.
fn scope_fits(scope: &str, resource: &str) -> bool {
    let pod_count = resource == "pods";
    let pod_compute = matches!(
        resource,
        "cpu" | "memory" | "limits.cpu" | "limits.memory" | "requests.cpu" | "requests.memory"
    );
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => pod_count || pod_compute,
        "BestEffort" => pod_count,
        _ => true,
    }
}

/// Whether some standard hard resource does not go with `scope`.
fn misfits(hard: &[&str], scope: &str) -> usize {
    hard.iter()
        .filter(|k| is_standard_quota_resource(k) && !scope_fits(scope, k))
        .count()
}

/// One resource list (`spec.hard`, `status.used`): names and values.
fn resource_list(list: Option<&Value>, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(list) = list.and_then(Value::as_object) else {
        return;
    };
    for (name, value) in list {
        let at = path.key(name);
        resource_name(name, &at, errs);
        let Some(q) = value.as_str().and_then(|v| Quantity::parse(v).ok()) else {
            continue;
        };
        resource_quantity_value(name, &q, &at, errs);
    }
}

/// Upstream's `ValidateResourceQuantityValue`: not negative, and whole for
/// the resources counted in whole objects.
pub(super) fn resource_quantity_value(
    name: &str,
    q: &Quantity,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    // Go shows quantities in canonical form.
    if q.is_negative() {
        errs.push(FieldError::invalid(
            path,
            q.canonical(),
            IS_NEGATIVE_ERROR_MSG,
        ));
    }
    let integer = INTEGER_RESOURCES.contains(&name) || is_extended(name);
    if integer && q.milli_value().is_some_and(|m| m % 1000 != 0) {
        errs.push(FieldError::invalid(
            path,
            q.canonical(),
            "must be an integer",
        ));
    }
}

/// Upstream's `ValidateResourceQuotaResourceName`.
fn resource_name(name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let msgs = is_qualified_name(name);
    if !msgs.is_empty() {
        errs.extend(msgs.into_iter().map(|m| FieldError::invalid(path, name, m)));
        return;
    }
    if name.contains('/') {
        return;
    }
    if !is_standard_quota_resource(name) && name != "storage" {
        errs.push(FieldError::invalid(
            path,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
    if !is_standard_quota_resource(name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "must be a standard resource for quota",
        ));
    }
}

/// Scopes that may not be combined.
fn conflicting(scopes: &[&str]) -> bool {
    let has = |s| scopes.contains(&s);
    (has("BestEffort") && has("NotBestEffort")) || (has("Terminating") && has("NotTerminating"))
}

fn scopes(spec: &Value, hard: &[&str], path: &Path, errs: &mut Vec<FieldError>) {
    let Some(list) = spec.get("scopes").and_then(Value::as_array) else {
        return;
    };
    let path = path.child("scopes");
    let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    for scope in &names {
        if !SCOPES.contains(scope) {
            errs.push(FieldError::invalid(
                &path,
                list.clone(),
                "unsupported scope",
            ));
        }
        for _ in 0..misfits(hard, scope) {
            let msg = "unsupported scope applied to resource";
            errs.push(FieldError::invalid(&path, list.clone(), msg));
        }
    }
    if conflicting(&names) {
        errs.push(FieldError::invalid(
            &path,
            list.clone(),
            "conflicting scopes",
        ));
    }
}

fn scope_selector(spec: &Value, hard: &[&str], path: &Path, errs: &mut Vec<FieldError>) {
    let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) else {
        return;
    };
    let path = path.child("scopeSelector").child("matchExpressions");
    let exprs = selector.get("matchExpressions").and_then(Value::as_array);
    let mut names = Vec::new();
    for e in exprs.into_iter().flatten() {
        let scope = e
            .get("scopeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let op = e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let values = e.get("values").and_then(Value::as_array);
        if !SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(
                &path.child("scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        for _ in 0..misfits(hard, scope) {
            let msg = "unsupported scope applied to resource";
            errs.push(FieldError::invalid(&path, selector.clone(), msg));
        }
        if EXISTS_ONLY.contains(&scope) && op != "Exists" {
            errs.push(FieldError::invalid(&path.child("operator"), op, EXISTS_MSG));
        }
        let count = values.map_or(0, Vec::len);
        match op {
            "In" | "NotIn" if count == 0 => errs.push(FieldError::required(
                &path.child("values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if count != 0 => errs.push(FieldError::invalid(
                &path.child("values"),
                values.cloned().map(Value::Array).unwrap_or_default(),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => errs.push(FieldError::invalid(
                &path.child("operator"),
                op,
                "not a valid selector operator",
            )),
        }
        names.push(scope);
    }
    if conflicting(&names) {
        let scopes = spec.get("scopes").cloned().unwrap_or(Value::Null);
        errs.push(FieldError::invalid(&path, scopes, "conflicting scopes"));
    }
}

/// Upstream's `ValidateResourceQuota` (metadata is checked elsewhere).
pub fn validate_resource_quota(quota: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = quota.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let hard_list = spec.get("hard");
    resource_list(hard_list, &path.child("hard"), &mut errs);
    let mut hard: Vec<&str> = hard_list
        .and_then(Value::as_object)
        .map(|h| h.keys().map(String::as_str).collect())
        .unwrap_or_default();
    hard.sort_unstable();
    scopes(spec, &hard, &path, &mut errs);
    scope_selector(spec, &hard, &path, &mut errs);
    let status = Path::new("status");
    resource_list(
        quota.pointer("/status/hard"),
        &status.child("hard"),
        &mut errs,
    );
    resource_list(
        quota.pointer("/status/used"),
        &status.child("used"),
        &mut errs,
    );
    errs
}

/// Upstream's `ValidateResourceQuotaUpdate`: the scopes are fixed.
pub fn validate_resource_quota_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let scopes = |q: &Value| q.pointer("/spec/scopes").cloned().unwrap_or(Value::Null);
    let empty = |v: &Value| v.is_null() || v.as_array().is_some_and(Vec::is_empty);
    let (now, before) = (scopes(new), scopes(old));
    if now == before || (empty(&now) && empty(&before)) {
        return Vec::new();
    }
    let path = Path::new("spec").child("scopes");
    vec![FieldError::invalid(&path, now, "field is immutable")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn hard_names_and_values() {
        let q = json!({"spec": {"hard": {"pods": "1.5", "cpu": "-1", "foo": "1",
            "count/deployments.apps": "2", "requests.example.com/gpu": "1"}}});
        // Upstream walks the hard list in map order: compare sorted.
        let mut got = messages(&validate_resource_quota(&q));
        got.sort();
        assert_eq!(
            got,
            [
                "spec.hard[cpu]: must be greater than or equal to 0",
                "spec.hard[foo]: must be a standard resource for quota",
                "spec.hard[foo]: must be a standard resource type or fully qualified",
                "spec.hard[pods]: must be an integer",
            ]
        );
    }

    #[test]
    fn scopes_must_fit_the_resources_and_each_other() {
        let q = json!({"spec": {"hard": {"pods": "1", "requests.cpu": "1"},
            "scopes": ["BestEffort", "NotBestEffort", "Bogus"]}});
        assert_eq!(
            messages(&validate_resource_quota(&q)),
            [
                "spec.scopes: unsupported scope applied to resource",
                "spec.scopes: unsupported scope",
                "spec.scopes: conflicting scopes",
            ]
        );
        let ok = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["Terminating"]}});
        assert!(validate_resource_quota(&ok).is_empty());
    }

    #[test]
    fn selector_operators() {
        let q = json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "BestEffort", "operator": "In", "values": ["x"]},
            {"scopeName": "PriorityClass", "operator": "In"},
            {"scopeName": "PriorityClass", "operator": "Exists", "values": ["a"]},
            {"scopeName": "PriorityClass", "operator": "Gt", "values": ["a"]}]}}});
        assert_eq!(
            messages(&validate_resource_quota(&q)),
            [
                format!("spec.scopeSelector.matchExpressions.operator: {EXISTS_MSG}"),
                "spec.scopeSelector.matchExpressions.values: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector".into(),
                "spec.scopeSelector.matchExpressions.values: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector".into(),
                "spec.scopeSelector.matchExpressions.operator: not a valid selector operator".into(),
            ]
        );
    }

    #[test]
    fn scopes_are_immutable() {
        let old = json!({"spec": {"scopes": ["BestEffort"]}});
        let new = json!({"spec": {"scopes": ["NotBestEffort"]}});
        assert_eq!(
            messages(&validate_resource_quota_update(&new, &old)),
            ["spec.scopes: field is immutable"]
        );
        assert!(validate_resource_quota_update(&old, &old).is_empty());
    }
}
