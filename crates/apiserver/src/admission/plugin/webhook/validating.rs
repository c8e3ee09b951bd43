//! ValidatingAdmissionWebhook (upstream's `webhook/validating`): matching
//! webhooks are called concurrently and may only refuse; the first
//! refusal in webhook order is the answer.

use std::time::Instant;

use apimachinery::status::ApiError;
use async_trait::async_trait;

use super::annotations;
use super::generic::{dry_run_check, exchange, name, settle, webhooks, Dispatcher, Failure, Hook};
use super::predicates;
use super::versioned::{self, Target};
use crate::admission::initializer::Stores;
use crate::admission::metrics::{Step, WebhookCall};
use crate::admission::{Attributes, Handler, Operation, ValidationInterface};

const VALIDATING: (&str, &str) = (
    "admissionregistration.k8s.io",
    "validatingwebhookconfigurations",
);

pub struct ValidatingWebhook {
    dispatcher: Dispatcher,
}

impl ValidatingWebhook {
    pub fn new(stores: Stores) -> Self {
        ValidatingWebhook {
            dispatcher: Dispatcher::new(stores, Step::Validate),
        }
    }

    /// Calls one webhook (the `index`th of those called), with its metrics
    /// and failed-open annotation.
    async fn check(
        &self,
        (hook, invocation): (&Hook, &Target),
        index: usize,
        a: &Attributes,
    ) -> Result<(), ApiError> {
        let webhook = &hook.webhook;
        let call = WebhookCall {
            name: name(webhook),
            step: Step::Validate,
            operation: a.operation,
        };
        let start = Instant::now();
        let result = self.exchange(hook, invocation, a).await;
        if settle(webhook, call, start, result)?.is_none() {
            annotations::validating_failed_open(&a.request, index, call.name);
        }
        Ok(())
    }

    async fn exchange(
        &self,
        hook: &Hook,
        invocation: &Target,
        a: &Attributes,
    ) -> Result<(), Failure> {
        let webhook = &hook.webhook;
        dry_run_check(webhook, a).map_err(Failure::Refused)?;
        let converted = versioned::objects_for(invocation, a)
            .await
            .map_err(Failure::Refused)?;
        let called = (invocation, converted.as_ref());
        let hook = (hook.configuration.as_str(), webhook);
        exchange(hook, a, called, &self.dispatcher.stores, false).await?;
        Ok(())
    }
}

impl Handler for ValidatingWebhook {
    fn handles(&self, op: Operation) -> bool {
        predicates::is_admissible(op)
    }
}

#[async_trait]
impl ValidationInterface for ValidatingWebhook {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let hooks = webhooks(&self.dispatcher.stores, VALIDATING).await?;
        let mut selected = Vec::new();
        for hook in &hooks {
            if let Some(invocation) = self.dispatcher.matches(&hook.webhook, a).await? {
                selected.push((hook, invocation));
            }
        }
        let calls = selected.iter().enumerate();
        let results =
            futures::future::join_all(calls.map(|(i, (hook, inv))| self.check((hook, inv), i, a)))
                .await;
        // The first refusal in webhook order is the answer.
        for result in results {
            result?;
        }
        Ok(())
    }
}
