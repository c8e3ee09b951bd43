//! Which webhooks a request goes to (upstream's `webhook/predicates`):
//! rules on operation, group, version, resource and scope, then the
//! namespace and object label selectors.

use crate::admission::{Attributes, GroupVersionResource, Operation};
use apimachinery::labels::Selector;
use serde_json::Value;

use crate::admission::initializer::{text, Stores};
use crate::admission::plugin::webhook::versioned::{first_covered, Target};

pub fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn listed(v: Option<&Value>, want: &str) -> bool {
    strings(v).any(|s| s == "*" || s == want)
}

/// `pods`, `pods/status`, `*`, `*/status`, `pods/*` or `*/*`: a `*`
/// subresource covers the main resource too, a bare `*` main resources
/// only, as upstream's rule matcher.
fn resource_listed(v: Option<&Value>, resource: &str, sub: &str) -> bool {
    strings(v).any(|r| {
        let (res, rsub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == resource) && (rsub == "*" || rsub == sub)
    })
}

/// The version the webhook is called for: the request's own when a rule
/// covers it, else (unless `matchPolicy` is `Exact`) the first equivalent
/// version a rule covers.
pub fn invocation(webhook: &Value, a: &Attributes, namespaced: bool) -> Option<Target> {
    let exact = text(webhook, "/matchPolicy") == Some("Exact");
    first_covered(a, exact, |resource| {
        rules_match(webhook, a, resource, namespaced)
    })
}

/// Whether one of the webhook's rules covers the request made to
/// `resource`.
fn rules_match(
    webhook: &Value,
    a: &Attributes,
    resource: &GroupVersionResource,
    namespaced: bool,
) -> bool {
    let op = a.operation.as_str();
    webhook
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|rule| {
            listed(rule.get("operations"), op)
                && listed(rule.get("apiGroups"), &resource.group)
                && listed(rule.get("apiVersions"), &resource.version)
                && resource_listed(rule.get("resources"), &resource.resource, &a.subresource)
                && match text(rule, "/scope").unwrap_or("*") {
                    "Cluster" => !namespaced,
                    "Namespaced" => namespaced,
                    _ => true,
                }
        })
}

fn selector(webhook: &Value, field: &str) -> Option<Selector> {
    match webhook.get(field) {
        None | Some(Value::Null) => Some(Selector::everything()),
        Some(v) => Selector::from_label_selector(Some(v)).ok(),
    }
}

fn labels(obj: Option<&Value>) -> serde_json::Map<String, Value> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The object selector matches the new or the old object's labels.
pub fn object_selector_matches(webhook: &Value, a: &Attributes) -> bool {
    let Some(sel) = selector(webhook, "objectSelector") else {
        return false;
    };
    if sel.is_empty() {
        return true;
    }
    let new = a.object.as_ref().map(|o| sel.matches(&labels(Some(o))));
    let old = a
        .old_object
        .as_deref()
        .map(|o| sel.matches(&labels(Some(o))));
    new.unwrap_or(false) || old.unwrap_or(false)
}

/// The namespace selector matches the labels of the request's namespace (of
/// the namespace itself for namespaces); cluster-scoped requests always
/// match.
pub async fn namespace_selector_matches(
    webhook: &Value,
    a: &Attributes,
    stores: &Stores,
) -> Result<bool, apimachinery::status::ApiError> {
    let Some(sel) = selector(webhook, "namespaceSelector") else {
        return Ok(false);
    };
    if sel.is_empty() {
        return Ok(true);
    }
    if a.is("", "namespaces") {
        let obj = a
            .object
            .as_ref()
            .or(a.old_object.as_deref().map(|o| o.value()));
        return Ok(sel.matches(&labels(obj)));
    }
    if a.namespace.is_empty() {
        return Ok(true);
    }
    let ns = stores.get("", "namespaces", None, &a.namespace).await?;
    Ok(sel.matches(&labels(ns.as_deref().map(|o| o.value()))))
}

/// Objects webhooks never see, so that a broken webhook cannot lock its
/// own configuration (or the admission policies) in place: upstream's
/// `IsExemptAdmissionConfigurationResource`, by kind.
pub fn is_exempt(a: &Attributes) -> bool {
    a.kind.group == "admissionregistration.k8s.io"
        && matches!(
            a.kind.kind.as_str(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

/// Whether a webhook may be called for a dry-run request.
pub fn dry_run_safe(webhook: &Value) -> bool {
    matches!(text(webhook, "/sideEffects"), Some("None" | "NoneOnDryRun"))
}

/// Operations that webhooks see (CONNECT included).
pub fn is_admissible(op: Operation) -> bool {
    matches!(
        op,
        Operation::Create | Operation::Update | Operation::Delete | Operation::Connect
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::admission::RequestContext;
    use crate::authentication::user::UserInfo;
    use crate::registry::ResourceInfo;
    use serde_json::json;

    use super::*;

    fn pods(op: Operation, subresource: &str, labels: Value) -> Attributes {
        let info = ResourceInfo {
            has_status: true,
            ..ResourceInfo::testing("", "Pod")
        };
        let obj = json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels}});
        let request = RequestContext::new(Arc::new(UserInfo::anonymous()));
        Attributes::new(
            &info,
            op,
            Some(obj),
            None,
            subresource,
            None,
            "",
            false,
            request,
        )
    }

    fn hook(resources: &[&str], scope: &str) -> Value {
        json!({"rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                          "apiVersions": ["*"], "resources": resources, "scope": scope}]})
    }

    fn exact(hook: &Value, a: &Attributes) -> bool {
        rules_match(hook, a, &a.resource, true)
    }

    #[test]
    fn rules_match_operations_resources_subresources_and_scope() {
        let create = pods(Operation::Create, "", json!({}));
        let status = pods(Operation::Update, "status", json!({}));
        assert!(exact(&hook(&["pods"], "*"), &create));
        assert!(!exact(&hook(&["pods"], "*"), &status));
        assert!(exact(&hook(&["pods/status"], "*"), &status));
        assert!(exact(&hook(&["*/*"], "*"), &status));
        assert!(exact(&hook(&["*/*"], "*"), &create));
        assert!(exact(&hook(&["pods/*"], "*"), &create));
        assert!(!exact(&hook(&["*"], "*"), &status));
        assert!(exact(&hook(&["*"], "Namespaced"), &create));
        assert!(!exact(&hook(&["*"], "Cluster"), &create));
        assert!(!exact(
            &hook(&["pods"], "*"),
            &pods(Operation::Delete, "", json!({}))
        ));
    }

    #[test]
    fn admission_configuration_objects_are_exempt() {
        let mut a = pods(Operation::Create, "", json!({}));
        assert!(!is_exempt(&a));
        a.kind.group = "admissionregistration.k8s.io".into();
        for kind in [
            "ValidatingWebhookConfiguration",
            "MutatingAdmissionPolicyBinding",
        ] {
            a.kind.kind = kind.into();
            assert!(is_exempt(&a), "{kind}");
        }
        a.kind.kind = "Pod".into();
        assert!(!is_exempt(&a));
    }

    #[test]
    fn object_selectors_match_labels() {
        let hook = json!({"objectSelector": {"matchLabels": {"team": "a"}}});
        assert!(object_selector_matches(
            &hook,
            &pods(Operation::Create, "", json!({"team": "a"}))
        ));
        assert!(!object_selector_matches(
            &hook,
            &pods(Operation::Create, "", json!({"team": "b"}))
        ));
        assert!(object_selector_matches(
            &json!({}),
            &pods(Operation::Create, "", json!({}))
        ));
        assert!(dry_run_safe(&json!({"sideEffects": "NoneOnDryRun"})));
        assert!(!dry_run_safe(&json!({"sideEffects": "Some"})));
    }
}
