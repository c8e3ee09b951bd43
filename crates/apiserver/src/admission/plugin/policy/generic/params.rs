//! The parameter objects a binding hands its policy (upstream's
//! `CollectParams`): by name or label selector, in the binding's namespace,
//! the request's, or cluster-wide for cluster-scoped kinds.

use apimachinery::labels::Selector;
use serde_json::Value;
use storage::Object;

use crate::admission::initializer::{text, Stores};

/// Why a binding's parameters could not be found.
#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    #[error("paramKind kind `{0}` not known")]
    UnknownKind(String),
    #[error(
        "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
    )]
    NoNamespace,
    #[error("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")]
    NamespaceOnClusterScoped,
    #[error("paramRef.name and paramRef.selector are mutually exclusive")]
    NameAndSelector,
    #[error("one of name or selector must be provided")]
    NoNameOrSelector,
    #[error("no params found for policy binding with `Deny` parameterNotFoundAction")]
    NotFound,
    #[error("{0}")]
    Selector(String),
    #[error("{0}")]
    Lookup(String),
}

/// The resource of a kind, by the usual plural (`ConfigMap` → `configmaps`).
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else if lower.ends_with('s') || lower.ends_with("ch") || lower.ends_with('x') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// The parameters to evaluate the policy with: one `None` when the policy
/// or binding uses none; empty when none were found and that is allowed.
pub async fn collect(
    stores: &Stores,
    policy: &Value,
    binding: &Value,
    request_namespace: &str,
) -> Result<Vec<Option<Object>>, ParamError> {
    let (Some(kind), Some(param_ref)) = (
        policy.pointer("/spec/paramKind"),
        binding.pointer("/spec/paramRef"),
    ) else {
        return Ok(vec![None]);
    };
    let api_version = text(kind, "/apiVersion").unwrap_or_default();
    let kind_name = text(kind, "/kind").unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let store = stores
        .store(group, &plural(kind_name))
        .filter(|s| s.info.kind == kind_name)
        .ok_or_else(|| ParamError::UnknownKind(format!("{api_version}, Kind={kind_name}")))?;
    let ref_namespace = text(param_ref, "/namespace").unwrap_or_default();
    let namespace = match (store.info.namespaced, ref_namespace, request_namespace) {
        (false, "", _) => None,
        (false, _, _) => return Err(ParamError::NamespaceOnClusterScoped),
        (true, "", "") => return Err(ParamError::NoNamespace),
        (true, "", ns) | (true, ns, _) => Some(ns),
    };
    let (group, resource) = (store.info.group.as_str(), store.info.resource.as_str());
    let lookup = |e: apimachinery::status::ApiError| ParamError::Lookup(e.message);
    let params = match (text(param_ref, "/name"), param_ref.get("selector")) {
        (Some(_), Some(s)) if !s.is_null() => return Err(ParamError::NameAndSelector),
        (Some(name), _) if !name.is_empty() => stores
            .get(group, resource, namespace, name)
            .await
            .map_err(lookup)?
            .into_iter()
            .map(Some)
            .collect(),
        (_, Some(sel)) if !sel.is_null() => {
            let selector = Selector::from_label_selector(Some(sel))
                .map_err(|e| ParamError::Selector(e.to_string()))?;
            let items = stores
                .list(group, resource, namespace)
                .await
                .map_err(lookup)?;
            items
                .into_iter()
                .filter(|o| {
                    let labels = o
                        .pointer("/metadata/labels")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    selector.matches(&labels)
                })
                .map(Some)
                .collect()
        }
        _ => return Err(ParamError::NoNameOrSelector),
    };
    let params: Vec<_> = params;
    if params.is_empty() && text(param_ref, "/parameterNotFoundAction") == Some("Deny") {
        return Err(ParamError::NotFound);
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn kinds_map_to_their_resources() {
        assert_eq!(plural("ConfigMap"), "configmaps");
        assert_eq!(plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(plural("IngressClass"), "ingressclasses");
    }
}
