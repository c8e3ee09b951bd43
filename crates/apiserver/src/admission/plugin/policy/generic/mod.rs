//! What validating and mutating admission policies share (upstream's
//! generic policy dispatcher): reading the policies and bindings of a
//! kind, matching the policy's `matchConstraints` and each binding's
//! `matchResources` against the request, collecting each binding's
//! parameters, and the `request` variable the expressions see. Upstream's
//! `k8s.io/apiserver/pkg/admission/plugin/policy/generic`.

mod params;

use apimachinery::status::ApiError;
use serde_json::{json, Value};
use storage::Object;

use super::matching;
use crate::admission::initializer::{text, Stores};
use crate::admission::plugin::webhook::request::{gvk, gvr, user_info};
use crate::admission::plugin::webhook::versioned::Target;
use crate::admission::Attributes;

pub const GROUP: &str = "admissionregistration.k8s.io";

/// The policies and bindings of one kind, with the request's namespace.
pub struct Loaded {
    pub policies: Vec<Object>,
    pub bindings: Vec<Object>,
    /// The request's namespace object (None when cluster-scoped).
    pub namespace: Option<Object>,
}

/// The policy resources themselves, which policies never apply to (so a
/// bad policy cannot lock out its own repair).
const POLICY_RESOURCES: &[&str] = &[
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
];

/// Reads the policies (`resource`) and their bindings at the latest state,
/// so a new policy or binding applies at once; None when there are no
/// policies or the request is for a policy resource. Policies come sorted
/// by name.
pub async fn load(
    stores: &Stores,
    resource: &str,
    binding_resource: &str,
    a: &Attributes,
) -> Result<Option<Loaded>, ApiError> {
    if a.resource.group == GROUP && POLICY_RESOURCES.contains(&a.resource.resource.as_str()) {
        return Ok(None);
    }
    let mut policies = stores.list(GROUP, resource, None).await?;
    if policies.is_empty() {
        return Ok(None);
    }
    policies.sort_by(|x, y| name(x).cmp(name(y)));
    let bindings = stores.list(GROUP, binding_resource, None).await?;
    let namespace = match a.namespace.as_str() {
        "" => None,
        ns => stores.get("", "namespaces", None, ns).await?,
    };
    Ok(Some(Loaded {
        policies,
        bindings,
        namespace,
    }))
}

pub fn name(obj: &Value) -> &str {
    text(obj, "/metadata/name").unwrap_or_default()
}

/// Whether failures refuse the request (Fail, the default).
pub fn fails_closed(policy: &Value) -> bool {
    text(policy, "/spec/failurePolicy") != Some("Ignore")
}

/// One policy to evaluate for one binding and one parameter.
pub struct Invocation<'l> {
    pub policy: &'l Value,
    pub binding: &'l Value,
    pub param: Option<Object>,
    /// The version the policy's constraints see the request as.
    pub target: Target,
}

/// A policy or binding that could not be used; `binding` is None for a
/// policy-level problem.
pub struct ConfigError<'l> {
    pub policy: &'l Value,
    pub binding: Option<&'l Value>,
    /// `failed to configure policy: …` or `failed to configure binding: …`.
    pub message: String,
}

/// The invocations covering the request, in policy then binding order,
/// and the configuration errors met on the way (whatever the failure
/// policy: callers decide).
pub async fn invocations<'l>(
    stores: &Stores,
    loaded: &'l Loaded,
    a: &Attributes,
) -> (Vec<Invocation<'l>>, Vec<ConfigError<'l>>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let namespace = loaded.namespace.as_deref().map(|o| o.value());
    for policy in &loaded.policies {
        let policy: &Value = policy;
        let matched = match policy.pointer("/spec/matchConstraints") {
            Some(c) => matching::matches(c, a, namespace),
            None => Ok(None),
        };
        let target = match matched {
            Ok(Some(target)) => target,
            Ok(None) => continue,
            Err(e) => {
                errors.push(ConfigError {
                    policy,
                    binding: None,
                    message: format!("failed to configure policy: {e}"),
                });
                continue;
            }
        };
        let of_policy = loaded
            .bindings
            .iter()
            .filter(|b| text(b, "/spec/policyName") == Some(name(policy)));
        for binding in of_policy {
            let binding: &Value = binding;
            let config_error = |message: String| ConfigError {
                policy,
                binding: Some(binding),
                message: format!("failed to configure binding: {message}"),
            };
            if let Some(resources) = binding.pointer("/spec/matchResources") {
                match matching::matches(resources, a, namespace) {
                    Ok(Some(_)) => {}
                    Ok(None) => continue,
                    Err(e) => {
                        errors.push(config_error(e));
                        continue;
                    }
                }
            }
            match params::collect(stores, policy, binding, &a.namespace).await {
                Ok(params) => out.extend(params.into_iter().map(|param| Invocation {
                    policy,
                    binding,
                    param,
                    target: target.clone(),
                })),
                Err(e) => errors.push(config_error(e.to_string())),
            }
        }
    }
    (out, errors)
}

/// The AdmissionRequest the `request` variable holds, of the request as
/// `target` (its kind and resource; the request's own are `requestKind`
/// and `requestResource`).
pub fn request(a: &Attributes, target: &Target) -> Value {
    let mut request = json!({
        "kind": gvk(&target.kind),
        "resource": gvr(&target.resource),
        "requestKind": gvk(&a.kind),
        "requestResource": gvr(&a.resource),
        "name": a.name,
        "operation": a.operation.as_str(),
        "userInfo": user_info(a),
        "dryRun": a.dry_run,
        "options": a.options,
    });
    if !a.subresource.is_empty() {
        request["subResource"] = json!(a.subresource);
        request["requestSubResource"] = json!(a.subresource);
    }
    if !a.namespace.is_empty() {
        request["namespace"] = json!(a.namespace);
    }
    request
}
