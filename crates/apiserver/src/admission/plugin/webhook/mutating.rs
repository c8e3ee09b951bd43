//! MutatingAdmissionWebhook (upstream's `webhook/mutating`): matching
//! webhooks are called one after another, each may answer with a JSON
//! patch; those with `reinvocationPolicy: IfNeeded` are called again in
//! admission's second pass when a later change went past them.

use std::time::Instant;

use apimachinery::status::ApiError;
use async_trait::async_trait;

use super::annotations::MutationAnnotator;
use super::generic::{dry_run_check, exchange, name, settle, webhooks, Dispatcher, Failure, Hook};
use super::predicates;
use super::response::apply_patch;
use super::versioned::{self, Target};
use crate::admission::initializer::{text, Stores};
use crate::admission::metrics::{Step, WebhookCall};
use crate::admission::{Attributes, Handler, HookReinvocation, MutationInterface, Operation};

const MUTATING: (&str, &str) = (
    "admissionregistration.k8s.io",
    "mutatingwebhookconfigurations",
);
/// The plugin's name, under which its reinvocation state is kept.
const MUTATING_PLUGIN: &str = "MutatingAdmissionWebhook";

pub struct MutatingWebhook {
    dispatcher: Dispatcher,
}

impl MutatingWebhook {
    pub fn new(stores: Stores) -> Self {
        MutatingWebhook {
            dispatcher: Dispatcher::new(stores, Step::Admit),
        }
    }

    /// Calls one webhook the request is for, with its audit annotations
    /// and metrics; returns whether it changed the object.
    async fn run(
        &self,
        hook: &Hook,
        invocation: &Target,
        a: &mut Attributes,
        annotator: &MutationAnnotator<'_>,
    ) -> Result<bool, ApiError> {
        let call = WebhookCall {
            name: name(&hook.webhook),
            step: Step::Admit,
            operation: a.operation,
        };
        let start = Instant::now();
        let result = self.mutate(hook, invocation, a, annotator).await;
        annotator.called(matches!(result, Ok(true)));
        let settled = settle(&hook.webhook, call, start, result)?;
        if settled.is_none() {
            annotator.failed_open();
        }
        Ok(settled.unwrap_or(false))
    }

    /// One call and its patch applied (to the object at the webhook's
    /// version, converted back); whether the object changed.
    async fn mutate(
        &self,
        hook: &Hook,
        invocation: &Target,
        a: &mut Attributes,
        annotator: &MutationAnnotator<'_>,
    ) -> Result<bool, Failure> {
        let webhook = &hook.webhook;
        dry_run_check(webhook, a).map_err(Failure::Refused)?;
        let converted = versioned::objects_for(invocation, a)
            .await
            .map_err(Failure::Refused)?;
        let stores = &self.dispatcher.stores;
        let called = (invocation, converted.as_ref());
        let hook = (hook.configuration.as_str(), webhook);
        let Some(patch) = exchange(hook, a, called, stores, true).await? else {
            return Ok(false);
        };
        let refused = |e: String| Failure::Refused(ApiError::internal_error(e));
        let cannot_modify = || {
            refused(format!(
                "admission webhook \"{}\" attempted to modify the object, which is not supported for this operation",
                name(webhook)
            ))
        };
        let changed = match converted {
            None => {
                let object = a.object.as_mut().ok_or_else(cannot_modify)?;
                apply_patch(&patch.operations, object).map_err(refused)?
            }
            Some(c) => {
                let mut object = c.object.ok_or_else(cannot_modify)?;
                let changed = apply_patch(&patch.operations, &mut object).map_err(refused)?;
                if changed {
                    let back = versioned::back_to_request(a, object).await;
                    a.object = Some(back.map_err(Failure::Refused)?);
                }
                changed
            }
        };
        annotator.patched(&patch.sent);
        Ok(changed)
    }

    /// Calls the webhooks in order (in the second pass, only those to be
    /// reinvoked), recording which ask to be called again after a change.
    async fn run_all(
        &self,
        a: &mut Attributes,
        state: &mut HookReinvocation,
    ) -> Result<(), ApiError> {
        let hooks = webhooks(&self.dispatcher.stores, MUTATING).await?;
        let is_reinvoke = a.reinvocation.is_reinvoke();
        for (index, hook) in hooks.iter().enumerate() {
            let Some(invocation) = self.dispatcher.matches(&hook.webhook, a).await? else {
                continue;
            };
            if is_reinvoke && !state.should_reinvoke(&hook.uid) {
                continue;
            }
            let annotator = MutationAnnotator {
                request: a.request.clone(),
                round: usize::from(is_reinvoke),
                index,
                configuration: &hook.configuration,
                webhook: name(&hook.webhook),
            };
            if self.run(hook, &invocation, a, &annotator).await? {
                state.require_reinvoking_previously_invoked();
                a.reinvocation.set_should_reinvoke();
            }
            if text(&hook.webhook, "/reinvocationPolicy") == Some("IfNeeded") {
                state.invoked_reinvocable(hook.uid.clone());
            }
        }
        Ok(())
    }
}

impl Handler for MutatingWebhook {
    fn handles(&self, op: Operation) -> bool {
        predicates::is_admissible(op)
    }
}

#[async_trait]
impl MutationInterface for MutatingWebhook {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let mut state = a.reinvocation.take(MUTATING_PLUGIN);
        state.begin(a.reinvocation.is_reinvoke(), a.object.as_ref());
        let result = self.run_all(a, &mut state).await;
        state.end(a.object.as_ref());
        a.reinvocation.put(MUTATING_PLUGIN, state);
        result
    }
}
