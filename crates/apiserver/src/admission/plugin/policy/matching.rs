//! Which requests a policy's `matchConstraints` or a binding's
//! `matchResources` cover (upstream's generic policy matcher): resource
//! rules with names and scope, exclusions, then the namespace and object
//! label selectors. Upstream's
//! `k8s.io/apiserver/pkg/admission/plugin/policy/matching`.

use crate::admission::{Attributes, GroupVersionResource};
use apimachinery::labels::Selector;
use serde_json::{Map, Value};

use crate::admission::initializer::text;
use crate::admission::plugin::webhook::versioned::{first_covered, Target};

fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn listed(v: Option<&Value>, want: &str) -> bool {
    strings(v).any(|s| s == "*" || s == want)
}

/// `deployments`, `deployments/scale`, `*`, `*/scale`, `deployments/*` or
/// `*/*`; a bare resource covers the main resource only.
fn resource_listed(v: Option<&Value>, resource: &str, sub: &str) -> bool {
    strings(v).any(|r| {
        let (res, rsub) = match r.split_once('/') {
            Some((res, rsub)) => (res, Some(rsub)),
            None => (r, None),
        };
        let sub_ok = match rsub {
            None => sub.is_empty(),
            Some(s) => !sub.is_empty() && (s == "*" || s == sub),
        };
        (res == "*" || res == resource) && sub_ok
    })
}

/// Whether one named-resource rule covers the request made to `resource`.
fn rule_covers(
    rule: &Value,
    a: &Attributes,
    resource: &GroupVersionResource,
    namespaced: bool,
) -> bool {
    let names_ok = match rule.get("resourceNames").and_then(Value::as_array) {
        Some(names) if !names.is_empty() => names.iter().any(|n| n.as_str() == Some(&a.name)),
        _ => true,
    };
    listed(rule.get("operations"), a.operation.as_str())
        && listed(rule.get("apiGroups"), &resource.group)
        && listed(rule.get("apiVersions"), &resource.version)
        && resource_listed(rule.get("resources"), &resource.resource, &a.subresource)
        && names_ok
        && match text(rule, "/scope").unwrap_or("*") {
            "Cluster" => !namespaced,
            "Namespaced" => namespaced,
            _ => true,
        }
}

/// The version of the request one of `rules` covers (with `matchPolicy:
/// Equivalent`, possibly an equivalent one).
fn covered(rules: Option<&Value>, exact: bool, a: &Attributes, namespaced: bool) -> Option<Target> {
    let rules = rules
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    first_covered(a, exact, |resource| {
        rules
            .iter()
            .any(|r| rule_covers(r, a, resource, namespaced))
    })
}

fn selector(constraints: &Value, field: &str) -> Result<Selector, String> {
    match constraints.get(field) {
        None | Some(Value::Null) => Ok(Selector::everything()),
        Some(v) => Selector::from_label_selector(Some(v)).map_err(|e| e.to_string()),
    }
}

fn labels(obj: Option<&Value>) -> Map<String, Value> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The version the request is seen as when `constraints` (a
/// `MatchResources`) cover it, given the labels of the request's namespace
/// object (None when cluster-scoped). Malformed selectors are
/// configuration errors.
pub fn matches(
    constraints: &Value,
    a: &Attributes,
    namespace: Option<&Value>,
) -> Result<Option<Target>, String> {
    let is_namespace = a.is("", "namespaces");
    let namespaced = !a.namespace.is_empty() && !is_namespace;
    // A binding's matchResources without resourceRules narrows nothing by
    // resource; only its selectors and exclusions apply.
    let unrestricted = constraints
        .get("resourceRules")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    let exact = text(constraints, "/matchPolicy") == Some("Exact");
    let target = match unrestricted {
        true => Some(Target::of_request(a)),
        false => covered(constraints.get("resourceRules"), exact, a, namespaced),
    };
    let excluded = covered(
        constraints.get("excludeResourceRules"),
        exact,
        a,
        namespaced,
    );
    let (Some(target), None) = (target, excluded) else {
        return Ok(None);
    };
    let ns_selector = selector(constraints, "namespaceSelector")?;
    if !ns_selector.is_empty() {
        let ns_labels = if is_namespace {
            labels(
                a.object
                    .as_ref()
                    .or(a.old_object.as_deref().map(|o| o.value())),
            )
        } else if namespaced {
            labels(namespace)
        } else {
            // Cluster-scoped requests are not held back by namespace selectors.
            Map::new()
        };
        if (is_namespace || namespaced) && !ns_selector.matches(&ns_labels) {
            return Ok(None);
        }
    }
    let obj_selector = selector(constraints, "objectSelector")?;
    if obj_selector.is_empty() {
        return Ok(Some(target));
    }
    let new = a
        .object
        .as_ref()
        .map(|o| obj_selector.matches(&labels(Some(o))));
    let old = a
        .old_object
        .as_deref()
        .map(|o| obj_selector.matches(&labels(Some(o))));
    let selected = new.unwrap_or(false) || old.unwrap_or(false);
    Ok(selected.then_some(target))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::admission::{Operation, RequestContext};
    use crate::authentication::user::UserInfo;
    use crate::registry::ResourceInfo;
    use serde_json::json;

    use super::*;

    fn configmap_create() -> Attributes {
        let info = ResourceInfo::configmaps();
        let object = json!({"metadata": {"name": "c", "namespace": "team"}});
        let request = RequestContext::new(Arc::new(UserInfo::anonymous()));
        Attributes::new(
            &info,
            Operation::Create,
            Some(object),
            None,
            "",
            None,
            "",
            false,
            request,
        )
    }

    #[test]
    fn match_resources_without_resource_rules_select_by_labels_only() {
        let a = configmap_create();
        let test_ns = json!({"metadata": {"labels": {"env": "test"}}});
        let prod_ns = json!({"metadata": {"labels": {"env": "prod"}}});
        let by_ns = json!({"namespaceSelector": {"matchLabels": {"env": "test"}}});
        assert!(matches!(matches(&by_ns, &a, Some(&test_ns)), Ok(Some(_))));
        assert_eq!(matches(&by_ns, &a, Some(&prod_ns)), Ok(None));
        assert!(matches!(
            matches(&json!({"resourceRules": []}), &a, None),
            Ok(Some(_))
        ));
        let excluded = json!({"excludeResourceRules": [{"apiGroups": [""],
            "apiVersions": ["*"], "operations": ["*"], "resources": ["configmaps"]}]});
        assert_eq!(matches(&excluded, &a, Some(&test_ns)), Ok(None));
    }
}
