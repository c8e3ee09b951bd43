//! Upstream's `auth reconcile` of one bootstrap policy object, run at every
//! start: labels and annotations the object lacks are added (stored values
//! win), missing rules and aggregation selectors are added back to roles,
//! missing subjects to bindings; objects annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` are left alone.
//! Nothing the administrator added is removed.

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Mutate, Store, Target, WriteOptions};
use serde_json::{Map, Value};

use crate::registry::rbac::validation::{missing_rules, PolicyRule};

const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// Whether the administrator opted the stored object out of reconciliation.
fn protected(existing: &Value) -> bool {
    existing
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE))
        .and_then(Value::as_str)
        == Some("false")
}

/// `expected`'s entries under `/metadata/<field>` missing from `existing`
/// added to it; true when any was.
fn merge_map(existing: &mut Value, expected: &Value, field: &str) -> bool {
    let Some(wanted) = expected.pointer(&format!("/metadata/{field}")) else {
        return false;
    };
    let Some(wanted) = wanted.as_object().filter(|w| !w.is_empty()) else {
        return false;
    };
    let Some(meta) = existing.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let map = meta
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !map.is_object() {
        *map = Value::Object(Map::new());
    }
    let Some(map) = map.as_object_mut() else {
        return false;
    };
    let mut changed = false;
    for (key, value) in wanted {
        if !map.contains_key(key) {
            map.insert(key.clone(), value.clone());
            changed = true;
        }
    }
    changed
}

fn rule_json(rule: &PolicyRule) -> Value {
    let mut out = Map::new();
    let fields = [
        ("verbs", &rule.verbs),
        ("apiGroups", &rule.api_groups),
        ("resources", &rule.resources),
        ("resourceNames", &rule.resource_names),
        ("nonResourceURLs", &rule.non_resource_urls),
    ];
    for (name, values) in fields {
        if !values.is_empty() {
            out.insert(
                name.to_owned(),
                values.iter().cloned().map(Value::from).collect(),
            );
        }
    }
    Value::Object(out)
}

fn decoded_rules(obj: &Value) -> Vec<PolicyRule> {
    obj.get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(PolicyRule::from_json)
        .collect()
}

/// Appends to the array at `field` of `existing` the items of `expected`'s
/// that it lacks; true when any was.
fn append_missing(existing: &mut Value, field: &str, wanted: &[Value]) -> bool {
    if wanted.is_empty() {
        return false;
    }
    let Some(obj) = existing.as_object_mut() else {
        return false;
    };
    let slot = obj.entry(field).or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    let Some(items) = slot.as_array_mut() else {
        return false;
    };
    let mut changed = false;
    for item in wanted {
        if !items.contains(item) {
            items.push(item.clone());
            changed = true;
        }
    }
    changed
}

/// The role's missing rules (broken down as upstream's `Covers` reports
/// them) and aggregation selectors added.
/// An aggregated role's rules are the aggregation controller's business.
fn reconcile_role(role: &mut Value, expected: &Value) -> bool {
    let selectors = expected
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array);
    let mut changed = false;
    if selectors.is_none() {
        let missing = missing_rules(&decoded_rules(role), &decoded_rules(expected));
        let rules: Vec<Value> = missing.iter().map(rule_json).collect();
        changed = append_missing(role, "rules", &rules);
    }
    if let Some(selectors) = selectors {
        let Some(obj) = role.as_object_mut() else {
            return changed;
        };
        let aggregation = obj
            .entry("aggregationRule")
            .or_insert_with(|| Value::Object(Map::new()));
        changed |= append_missing(aggregation, "clusterRoleSelectors", selectors);
    }
    changed
}

/// `existing` reconciled with `expected`, or `None` when nothing changes.
pub fn reconciled(existing: &Value, expected: &Value) -> Option<Value> {
    if protected(existing) {
        return None;
    }
    let mut out = existing.clone();
    let mut changed = merge_map(&mut out, expected, "labels");
    changed |= merge_map(&mut out, expected, "annotations");
    changed |= match expected.get("kind").and_then(Value::as_str) {
        Some("ClusterRole" | "Role") => reconcile_role(&mut out, expected),
        _ => {
            let subjects = expected.get("subjects").and_then(Value::as_array);
            append_missing(&mut out, "subjects", subjects.map_or(&[], Vec::as_slice))
        }
    };
    changed.then_some(out)
}

/// Creates `expected` when missing, else reconciles the stored object.
pub async fn ensure(
    store: &Store,
    expected: Value,
    existing: Option<storage::Object>,
) -> Result<(), String> {
    let name = expected
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let namespace = expected
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let failed = |e: ApiError| format!("reconciling {} {name:?}: {}", store.info.kind, e.message);
    let Some(existing) = existing else {
        return match store.create(expected, &WriteOptions::default()).await {
            Ok(_) => Ok(()),
            // Created since the list: a later start reconciles it.
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(failed(e)),
        };
    };
    if existing.peek(|existing| reconciled(existing, &expected).is_none()) {
        return Ok(());
    }
    let mutate: Mutate = Arc::new(move |current: Option<&Value>| {
        // A concurrent deletion: recreate, as a later start would.
        let Some(current) = current else {
            return Ok(expected.clone());
        };
        Ok(reconciled(current, &expected).unwrap_or_else(|| current.clone()))
    });
    let opts = WriteOptions::default();
    let written = store.update(namespace.as_deref(), &name, Target::Main, mutate, &opts);
    written.await.map(|_| ()).map_err(failed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn discovery(rules: Value, annotations: Value) -> Value {
        json!({"kind": "ClusterRole",
            "metadata": {"name": "system:discovery", "annotations": annotations,
                "labels": {"kubernetes.io/bootstrapping": "mine"}},
            "rules": rules})
    }

    fn expected() -> Value {
        json!({"kind": "ClusterRole",
            "metadata": {"name": "system:discovery",
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", "x": "y"},
                "annotations": {AUTOUPDATE: "true"}},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/api", "/apis"]}]})
    }

    #[test]
    fn missing_rules_and_metadata_are_added_back() {
        let stored = discovery(
            json!([{"verbs": ["get"], "nonResourceURLs": ["/api"]}]),
            json!({}),
        );
        let out = reconciled(&stored, &expected()).unwrap_or_default();
        assert_eq!(
            out["rules"],
            json!([{"verbs": ["get"], "nonResourceURLs": ["/api"]},
                {"verbs": ["get"], "nonResourceURLs": ["/apis"]}])
        );
        // The stored label wins; the missing one is added.
        assert_eq!(
            out["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "mine"
        );
        assert_eq!(out["metadata"]["labels"]["x"], "y");
        assert_eq!(out["metadata"]["annotations"][AUTOUPDATE], "true");
    }

    #[test]
    fn covered_and_protected_objects_are_left_alone() {
        let annotations = json!({AUTOUPDATE: "true"});
        let mut wider = discovery(
            json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}]),
            annotations,
        );
        wider["metadata"]["labels"]["x"] = json!("z");
        assert_eq!(reconciled(&wider, &expected()), None);
        let protected = discovery(json!([]), json!({AUTOUPDATE: "false"}));
        assert_eq!(reconciled(&protected, &expected()), None);
    }

    #[test]
    fn bindings_get_missing_subjects_back() {
        let subject = json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
            "name": "system:authenticated"});
        let other = json!({"kind": "User", "name": "jane"});
        let expected = json!({"kind": "ClusterRoleBinding", "metadata": {},
            "subjects": [subject]});
        let stored = json!({"kind": "ClusterRoleBinding", "metadata": {},
            "subjects": [other]});
        let out = reconciled(&stored, &expected).unwrap_or_default();
        assert_eq!(out["subjects"], json!([other, subject]));
        assert_eq!(reconciled(&out, &expected), None);
    }
}
