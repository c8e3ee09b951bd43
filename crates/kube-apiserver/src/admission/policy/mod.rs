//! ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): policies
//! whose `matchConstraints` and bindings' `matchResources` cover a request
//! are evaluated in CEL, once per parameter object the binding selects;
//! failed validations are acted on as the binding's `validationActions`
//! say (Deny refuses the request, Warn adds a warning).

mod eval;
mod matching;
mod params;

use apimachinery::status::{ApiError, StatusCause, StatusDetails, StatusReason};
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::lookup::{text, Stores};
use eval::{Compiled, Inputs};

const GROUP: &str = "admissionregistration.k8s.io";

pub struct ValidatingAdmissionPolicy {
    stores: Stores,
    compiled: Compiled,
}

impl ValidatingAdmissionPolicy {
    pub fn new(stores: Stores) -> Self {
        ValidatingAdmissionPolicy {
            stores,
            compiled: Compiled::default(),
        }
    }
}

impl Handler for ValidatingAdmissionPolicy {
    fn handles(&self, _operation: Operation) -> bool {
        true
    }
}

/// A decision to refuse, with the policy and binding it came from.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Option<String>,
}

/// Whether failures to evaluate refuse the request (Fail, the default).
fn fails_closed(policy: &Value) -> bool {
    text(policy, "/spec/failurePolicy") != Some("Ignore")
}

fn name(obj: &Value) -> &str {
    text(obj, "/metadata/name").unwrap_or_default()
}

#[async_trait]
impl ValidationInterface for ValidatingAdmissionPolicy {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        // Policies are read at the latest state on every request, so a new
        // policy or binding applies at once.
        let mut policies = self
            .stores
            .list(GROUP, "validatingadmissionpolicies", None)
            .await?;
        if policies.is_empty() {
            return Ok(());
        }
        policies.sort_by(|x, y| name(x).cmp(name(y)));
        let bindings = self
            .stores
            .list(GROUP, "validatingadmissionpolicybindings", None)
            .await?;
        let namespace = match a.namespace.as_str() {
            "" => None,
            ns => self.stores.get("", "namespaces", None, ns).await?,
        };
        let mut denials = Vec::new();
        for policy in &policies {
            let matched = match policy.pointer("/spec/matchConstraints") {
                Some(c) => matching::matches(c, a, namespace.as_deref()),
                None => Ok(false),
            };
            match matched {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) if fails_closed(policy) => {
                    denials.push(Denial {
                        policy: name(policy).to_owned(),
                        binding: None,
                        message: format!("failed to configure policy: {e}"),
                        reason: None,
                    });
                    continue;
                }
                Err(_) => continue,
            }
            let of_policy = bindings
                .iter()
                .filter(|b| text(b, "/spec/policyName") == Some(name(policy)));
            for binding in of_policy {
                self.run_binding(policy, binding, a, namespace.as_deref(), &mut denials)
                    .await;
            }
        }
        match denials.into_iter().next() {
            Some(d) => Err(denied(a, d)),
            None => Ok(()),
        }
    }
}

impl ValidatingAdmissionPolicy {
    /// Evaluates `policy` for one of its bindings, once per parameter.
    async fn run_binding(
        &self,
        policy: &Value,
        binding: &Value,
        a: &Attributes,
        namespace: Option<&Value>,
        denials: &mut Vec<Denial>,
    ) {
        let fail = fails_closed(policy);
        let config_error = |message: String| Denial {
            policy: name(policy).to_owned(),
            binding: Some(name(binding).to_owned()),
            message: format!("failed to configure binding: {message}"),
            reason: None,
        };
        if let Some(resources) = binding.pointer("/spec/matchResources") {
            match matching::matches(resources, a, namespace) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    if fail {
                        denials.push(config_error(e));
                    }
                    return;
                }
            }
        }
        let params = match params::collect(&self.stores, policy, binding, &a.namespace).await {
            Ok(params) => params,
            Err(e) => {
                if fail {
                    denials.push(config_error(e.to_string()));
                }
                return;
            }
        };
        let null = Value::Null;
        let object = a.object.as_ref().unwrap_or(&null);
        let old_object = a.old_object.as_deref().unwrap_or(&null);
        let request = request(a);
        let spec = policy.get("spec").unwrap_or(&null);
        for param in &params {
            let inputs = Inputs {
                object,
                old_object,
                request: &request,
                params: param.as_deref().unwrap_or(&null),
                namespace_object: namespace.unwrap_or(&null),
            };
            let evaluation = self.compiled.evaluate(spec, &inputs);
            let errors = evaluation
                .errors
                .into_iter()
                .filter(|_| fail)
                .map(|message| (message, None));
            let failures = evaluation
                .failures
                .into_iter()
                .map(|f| (f.message, f.reason));
            for (message, reason) in failures.chain(errors) {
                act(policy, binding, a, message, reason, denials);
            }
        }
    }
}

/// Acts on one failed validation as the binding's actions say. Audit
/// annotations are not recorded: this server's admission has no audit
/// event to carry them.
fn act(
    policy: &Value,
    binding: &Value,
    a: &Attributes,
    message: String,
    reason: Option<String>,
    denials: &mut Vec<Denial>,
) {
    let actions = binding
        .pointer("/spec/validationActions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for action in actions {
        match action {
            "Deny" => denials.push(Denial {
                policy: name(policy).to_owned(),
                binding: Some(name(binding).to_owned()),
                message: message.clone(),
                reason: reason.clone(),
            }),
            "Warn" => a.request.add_warning(format!(
                "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                name(policy),
                name(binding)
            )),
            _ => {}
        }
    }
}

/// Upstream's refusal: forbidden-shaped message, the validation's reason
/// (Invalid by default) and the code that reason goes with.
fn denied(a: &Attributes, d: Denial) -> ApiError {
    let message = match &d.binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
            d.policy, d.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            d.policy, d.message
        ),
    };
    let mut err = a.forbidden(&message);
    let reason = d
        .reason
        .and_then(|r| serde_json::from_value::<StatusReason>(json!(r)).ok())
        .filter(|r| *r != StatusReason::Unknown)
        .unwrap_or(StatusReason::Invalid);
    err.code = match reason {
        StatusReason::Forbidden => 403,
        StatusReason::Unauthorized => 401,
        StatusReason::RequestEntityTooLarge => 413,
        _ => 422,
    };
    err.reason = reason;
    let details = err
        .details
        .get_or_insert_with(|| Box::new(StatusDetails::default()));
    details.causes.push(StatusCause {
        message,
        ..StatusCause::default()
    });
    err
}

fn user_info(a: &Attributes) -> Value {
    let user = a.user();
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

/// The AdmissionRequest the `request` variable holds.
fn request(a: &Attributes) -> Value {
    let gvk = json!({"group": a.kind.group, "version": a.kind.version, "kind": a.kind.kind});
    let gvr = json!({"group": a.resource.group, "version": a.resource.version, "resource": a.resource.resource});
    let mut request = json!({
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
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

#[cfg(test)]
mod tests;
