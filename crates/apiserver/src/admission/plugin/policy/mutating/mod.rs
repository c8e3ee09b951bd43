//! MutatingAdmissionPolicy (admissionregistration.k8s.io/v1): policies
//! whose `matchConstraints` and bindings' `matchResources` cover a create
//! or update are invoked once per parameter their binding selects; when
//! the `matchConditions` hold, each mutation's CEL expression yields an
//! apply configuration (`Object{...}`) or a JSON patch (`[JSONPatch{...}]`)
//! that is applied to the object in turn. Policies asking for it
//! (`reinvocationPolicy: IfNeeded`) run once more in admission's second
//! pass when a later policy, webhook or plugin changed the object. Errors
//! refuse the request unless the policy's `failurePolicy` is Ignore.
//! Upstream's `k8s.io/apiserver/pkg/admission/plugin/policy/mutating`.

mod patch;
mod types;

use std::fmt;
use std::sync::Arc;

use apimachinery::status::{ApiError, StatusCause, StatusDetails, StatusReason};
use async_trait::async_trait;
use serde_json::Value;

use super::generic::{self, fails_closed, name, Invocation};
use crate::admission::initializer::{text, Stores};
use crate::admission::plugin::cel::{Compiled, Inputs, Mode};
use crate::admission::plugin::webhook::versioned::Target;
use crate::admission::{Attributes, Handler, MutationInterface, Operation};
pub use types::{CustomTypes, Defaulter, Types};

/// The plugin's name, under which its reinvocation state is kept.
const PLUGIN: &str = "MutatingAdmissionPolicy";

/// What names one invocation among the others: its policy, binding and
/// parameter (upstream's reinvocation key).
fn key(invocation: &Invocation<'_>) -> String {
    let param = invocation.param.as_deref();
    format!(
        "{}/{}/{}/{}",
        name(invocation.policy),
        name(invocation.binding),
        param
            .and_then(|p| text(p, "/metadata/namespace"))
            .unwrap_or_default(),
        param
            .and_then(|p| text(p, "/metadata/name"))
            .unwrap_or_default(),
    )
}

pub struct MutatingAdmissionPolicy {
    stores: Stores,
    compiled: Compiled,
    custom_types: Arc<dyn CustomTypes>,
}

impl MutatingAdmissionPolicy {
    /// The plugin over the server's stores, typing kinds no store serves
    /// with `custom_types`.
    pub fn new(stores: Stores, custom_types: Arc<dyn CustomTypes>) -> Self {
        MutatingAdmissionPolicy {
            stores,
            compiled: Compiled::new(Mode::Mutating),
            custom_types,
        }
    }
}

impl Handler for MutatingAdmissionPolicy {
    fn handles(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }
}

/// A policy that could not be configured or applied (upstream's
/// `PolicyError`).
#[derive(Debug)]
pub(super) struct PolicyError {
    pub policy: String,
    pub binding: Option<String>,
    pub message: String,
    /// Set for errors of evaluation (Invalid); configuration errors keep
    /// the refusal's Forbidden.
    pub reason: Option<StatusReason>,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.binding {
            Some(b) => write!(
                f,
                "policy '{}' with binding '{b}' denied request: {}",
                self.policy, self.message
            ),
            None => write!(
                f,
                "policy \"{}\" denied request: {}",
                self.policy, self.message
            ),
        }
    }
}

/// What one evaluation needs besides the object.
struct Context<'c> {
    request: &'c Value,
    namespace: Option<&'c Value>,
    types: &'c Types,
}

#[async_trait]
impl MutationInterface for MutatingAdmissionPolicy {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if a.object.is_none() {
            return Ok(());
        }
        let loaded = generic::load(
            &self.stores,
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings",
            a,
        )
        .await?;
        let Some(loaded) = loaded else {
            return Ok(());
        };
        let (mut invocations, config_errors) = generic::invocations(&self.stores, &loaded, a).await;
        // Mutations apply to the object as requested: policies matching
        // only an equivalent version are not applied.
        invocations.retain(|i| i.target.is_request_version(a));
        let mut errors: Vec<(bool, PolicyError)> = config_errors
            .into_iter()
            .map(|e| {
                let error = PolicyError {
                    policy: name(e.policy).to_owned(),
                    binding: e.binding.map(|b| name(b).to_owned()),
                    message: e.message,
                    reason: None,
                };
                (fails_closed(e.policy), error)
            })
            .collect();
        if !invocations.is_empty() {
            let request = generic::request(a, &Target::of_request(a));
            let types = types::types(&self.stores, self.custom_types.as_ref(), a).await;
            let cx = Context {
                request: &request,
                namespace: loaded.namespace.as_deref().map(|o| o.value()),
                types: &types,
            };
            let mut sink = |policy: &Value, e: PolicyError| errors.push((fails_closed(policy), e));
            self.run_all(&invocations, a, &cx, &mut sink);
        }
        decide(a, errors)
    }
}

impl MutatingAdmissionPolicy {
    /// Invokes every policy in order (in admission's second pass, only
    /// those to be reinvoked), recording which ask to be invoked again
    /// after a later change (upstream's policy reinvocation context).
    fn run_all(
        &self,
        invocations: &[Invocation<'_>],
        a: &mut Attributes,
        cx: &Context<'_>,
        errors: &mut dyn FnMut(&Value, PolicyError),
    ) {
        let mut state = a.reinvocation.take(PLUGIN);
        let is_reinvoke = a.reinvocation.is_reinvoke();
        state.begin(is_reinvoke, a.object.as_ref());
        for invocation in invocations {
            let key = key(invocation);
            if is_reinvoke && !state.should_reinvoke(&key) {
                continue;
            }
            if self.invoke(invocation, a, cx, errors) {
                state.require_reinvoking_previously_invoked();
                a.reinvocation.set_should_reinvoke();
            }
            if text(invocation.policy, "/spec/reinvocationPolicy") == Some("IfNeeded") {
                state.invoked_reinvocable(key);
            }
        }
        state.end(a.object.as_ref());
        a.reinvocation.put(PLUGIN, state);
    }

    /// Applies one invocation's mutations in order; returns whether the
    /// object changed.
    fn invoke(
        &self,
        invocation: &Invocation<'_>,
        a: &mut Attributes,
        cx: &Context<'_>,
        errors: &mut dyn FnMut(&Value, PolicyError),
    ) -> bool {
        let (policy, binding) = (invocation.policy, invocation.binding);
        let error = |message: String| PolicyError {
            policy: name(policy).to_owned(),
            binding: Some(name(binding).to_owned()),
            message,
            reason: Some(StatusReason::Invalid),
        };
        let null = Value::Null;
        let spec = policy.get("spec").unwrap_or(&null);
        let mut changed = false;
        let Some(mut object) = a.object.take() else {
            return false;
        };
        let base = Inputs {
            object: &null,
            old_object: a.old_object.as_deref().map_or(&null, |o| o.value()),
            request: cx.request,
            params: invocation.param.as_deref().map_or(&null, |o| o.value()),
            namespace_object: cx.namespace.unwrap_or(&null),
        };
        match self.compiled.conditions_hold(
            spec,
            &Inputs {
                object: &object,
                ..base
            },
        ) {
            Ok(true) => {
                let mutations = spec.get("mutations").and_then(Value::as_array);
                for mutation in mutations.into_iter().flatten() {
                    let inputs = Inputs {
                        object: &object,
                        ..base
                    };
                    // Variables see the object as the earlier mutations left it.
                    let variables = self.compiled.variables(spec, &inputs);
                    match self.mutate(mutation, &inputs, &variables, cx.types) {
                        Ok(Some(mutated)) if mutated != object => {
                            object = mutated;
                            // Upstream defaults the object after every patch.
                            cx.types.apply_defaults(&mut object);
                            changed = true;
                        }
                        Ok(_) => {}
                        Err(message) => errors(policy, error(message)),
                    }
                }
            }
            Ok(false) => {}
            Err(message) => errors(policy, error(message)),
        }
        a.object = Some(object);
        changed
    }

    /// The object with one mutation applied (None: the mutation's type
    /// is not one this server knows).
    fn mutate(
        &self,
        mutation: &Value,
        inputs: &Inputs<'_>,
        variables: &Value,
        types: &Types,
    ) -> Result<Option<Value>, String> {
        let (source, apply): (_, fn(&Types, &Value, Value) -> _) =
            match text(mutation, "/patchType") {
                Some("ApplyConfiguration") => (
                    text(mutation, "/applyConfiguration/expression"),
                    patch::apply_configuration,
                ),
                Some("JSONPatch") => (text(mutation, "/jsonPatch/expression"), |_, o, v| {
                    patch::json_patch(o, v)
                }),
                _ => return Ok(None),
            };
        let Some(source) = source else {
            return Ok(None);
        };
        let value = self.compiled.run(source, inputs, variables)?;
        apply(types, inputs.object, value)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

/// Refuses the request when an error came from a policy that fails
/// closed; errors of policies with `failurePolicy: Ignore` are dropped.
fn decide(a: &Attributes, errors: Vec<(bool, PolicyError)>) -> Result<(), ApiError> {
    let refused: Vec<PolicyError> = errors
        .into_iter()
        .filter_map(|(fail, e)| fail.then_some(e))
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(refusal(a, refused))
    }
}

/// Upstream's refusal: Forbidden-shaped, with the first error's message
/// (and reason, when it has one) and every error as a cause.
fn refusal(a: &Attributes, errors: Vec<PolicyError>) -> ApiError {
    let mut err = a.forbidden("admission request denied by policy");
    let details = err
        .details
        .get_or_insert_with(|| Box::new(StatusDetails::default()));
    for e in &errors {
        details.causes.push(StatusCause {
            message: e.to_string(),
            ..StatusCause::default()
        });
    }
    if let Some(first) = errors.into_iter().next() {
        err.message = first.to_string();
        if let Some(reason) = first.reason {
            err.reason = reason;
        }
    }
    err
}

#[cfg(test)]
mod tests;
