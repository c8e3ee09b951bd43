//! ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): policies
//! whose `matchConstraints` and bindings' `matchResources` cover a request
//! are evaluated in CEL, once per parameter object the binding selects;
//! failed validations are acted on as the binding's `validationActions`
//! say (Deny refuses the request, Warn adds a warning, Audit records the
//! failure in the audit events, beside the policy's `auditAnnotations`;
//! see [`audit`]). Upstream's
//! `k8s.io/apiserver/pkg/admission/plugin/policy/validating`.

mod audit;

use apimachinery::status::{ApiError, StatusCause, StatusDetails, StatusReason};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::generic::{self, fails_closed, name, request, Invocation};
use crate::admission::initializer::Stores;
use crate::admission::plugin::cel::{Compiled, Inputs, Mode};
use crate::admission::plugin::webhook::versioned::{self, Target};
use crate::admission::{Attributes, Handler, Operation, ValidationInterface};

pub struct ValidatingAdmissionPolicy {
    stores: Stores,
    compiled: Compiled,
}

impl ValidatingAdmissionPolicy {
    pub fn new(stores: Stores) -> Self {
        ValidatingAdmissionPolicy {
            stores,
            compiled: Compiled::new(Mode::Validating),
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

#[async_trait]
impl ValidationInterface for ValidatingAdmissionPolicy {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let loaded = generic::load(
            &self.stores,
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
            a,
        )
        .await?;
        let Some(loaded) = loaded else {
            return Ok(());
        };
        let (invocations, errors) = generic::invocations(&self.stores, &loaded, a).await;
        let mut denials: Vec<Denial> = errors
            .into_iter()
            .filter(|e| fails_closed(e.policy))
            .map(|e| Denial {
                policy: name(e.policy).to_owned(),
                binding: e.binding.map(|b| name(b).to_owned()),
                message: e.message,
                reason: None,
            })
            .collect();
        let mut annotations = audit::Collector::default();
        let as_requested = request(a, &Target::of_request(a));
        for invocation in &invocations {
            // A policy matching an equivalent version sees the objects
            // converted to it (upstream's versioned attributes).
            let converted = versioned::objects_for(&invocation.target, a).await?;
            let null = Value::Null;
            let (object, old_object) = match &converted {
                Some(c) => (c.object.as_ref(), c.old_object.as_ref()),
                None => (
                    a.object.as_ref(),
                    a.old_object.as_deref().map(|o| o.value()),
                ),
            };
            let as_matched;
            let request = if converted.is_some() {
                as_matched = request(a, &invocation.target);
                &as_matched
            } else {
                &as_requested
            };
            let inputs = Inputs {
                object: object.unwrap_or(&null),
                old_object: old_object.unwrap_or(&null),
                request,
                params: invocation.param.as_deref().map_or(&null, |o| o.value()),
                namespace_object: loaded.namespace.as_deref().map_or(&null, |o| o.value()),
            };
            self.run(invocation, a, &inputs, (&mut denials, &mut annotations));
        }
        annotations.publish(a);
        match denials.into_iter().next() {
            Some(d) => Err(denied(a, d)),
            None => Ok(()),
        }
    }
}

impl ValidatingAdmissionPolicy {
    /// Evaluates one invocation's validations and audit annotations.
    fn run(
        &self,
        invocation: &Invocation<'_>,
        a: &Attributes,
        inputs: &Inputs<'_>,
        (denials, annotations): (&mut Vec<Denial>, &mut audit::Collector),
    ) {
        let (policy, binding) = (invocation.policy, invocation.binding);
        let fail = fails_closed(policy);
        let null = Value::Null;
        let evaluation = self
            .compiled
            .evaluate(policy.get("spec").unwrap_or(&null), inputs);
        let errors = evaluation
            .errors
            .into_iter()
            .filter(|_| fail)
            .map(|(index, message)| (index, message, None));
        let failures = evaluation
            .failures
            .into_iter()
            .map(|f| (f.index, f.message, f.reason));
        for (index, message, reason) in failures.chain(errors) {
            act((policy, binding), a, (index, message, reason), denials);
        }
        for annotation in evaluation.audit_annotations {
            match annotation.value {
                Ok(Some(value)) => annotations.add(name(policy), &annotation.key, value),
                Ok(None) => {}
                // A failed audit annotation refuses the request when the
                // policy fails closed.
                Err(message) if fail => denials.push(Denial {
                    policy: name(policy).to_owned(),
                    binding: Some(name(binding).to_owned()),
                    message,
                    reason: None,
                }),
                Err(_) => {}
            }
        }
    }
}

/// Acts on one failed validation (its index, message and reason) as the
/// binding's actions say.
fn act(
    (policy, binding): (&Value, &Value),
    a: &Attributes,
    (index, message, reason): (usize, String, Option<String>),
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
            "Audit" => audit::validation_failure(a, binding, index, &message),
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

#[cfg(test)]
mod tests;
