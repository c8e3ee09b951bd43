//! What the mutating and validating webhook plugins share (upstream's
//! `webhook/generic`): the webhooks of every configuration, whether one is
//! to be called for a request (rules, selectors, match conditions), and
//! one call with its failure policy and metrics applied.

use std::time::{Duration, Instant};

use apimachinery::status::ApiError;
use serde_json::Value;

use super::annotations;
use super::client;
use super::matchconditions::{Conditions, Verdict};
use super::predicates;
use super::request::{review, review_version};
use super::response::{decode_patch, denied, verify_response, WebhookPatch};
use super::versioned::{self, Converted, Target};
use crate::admission::initializer::{text, Stores};
use crate::admission::metrics::{self, MatchConditions, Rejection, Step, WebhookCall};
use crate::admission::Attributes;
use component_base::tracing::Attribute;

const DEFAULT_TIMEOUT_SECONDS: u64 = 10;

/// One webhook of a configuration.
pub(super) struct Hook {
    pub configuration: String,
    /// `<configuration>/<index>`, as upstream's webhook UID.
    pub uid: String,
    pub webhook: Value,
}

/// The webhooks of every configuration of one kind, configurations in name
/// order (as upstream sorts them).
pub(super) async fn webhooks(
    stores: &Stores,
    (group, resource): (&str, &str),
) -> Result<Vec<Hook>, ApiError> {
    let mut configs = stores.list(group, resource, None).await?;
    configs.sort_by(|a, b| text(a, "/metadata/name").cmp(&text(b, "/metadata/name")));
    Ok(configs
        .iter()
        .flat_map(|c| {
            let config = text(c, "/metadata/name").unwrap_or_default();
            c.get("webhooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .map(move |(i, hook)| Hook {
                    configuration: config.to_owned(),
                    uid: format!("{config}/{i}"),
                    webhook: hook.clone(),
                })
        })
        .collect())
}

/// Whether the resource of the request is namespaced (a namespace itself
/// counts as cluster-scoped).
fn namespaced(a: &Attributes) -> bool {
    !a.namespace.is_empty() && !a.is("", "namespaces")
}

/// What the webhook plugins share: the stores they read and the compiled
/// match conditions.
pub(super) struct Dispatcher {
    pub stores: Stores,
    conditions: Conditions,
    /// Which admission half the plugin runs in, for its metrics.
    step: Step,
}

impl Dispatcher {
    pub fn new(stores: Stores, step: Step) -> Self {
        Dispatcher {
            stores,
            conditions: Conditions::default(),
            step,
        }
    }

    /// The version `webhook` is to be called for, if the request is one
    /// it is for: its rules, selectors and match conditions.
    pub async fn matches(
        &self,
        webhook: &Value,
        a: &Attributes,
    ) -> Result<Option<Target>, ApiError> {
        if predicates::is_exempt(a) || !predicates::is_admissible(a.operation) {
            return Ok(None);
        }
        let Some(invocation) = predicates::invocation(webhook, a, namespaced(a)) else {
            return Ok(None);
        };
        if !predicates::object_selector_matches(webhook, a)
            || !predicates::namespace_selector_matches(webhook, a, &self.stores).await?
        {
            return Ok(None);
        }
        if webhook.get("matchConditions").is_some() {
            let converted = versioned::objects_for(&invocation, a).await?;
            let review = review(a, &invocation, converted.as_ref(), "v1");
            let start = Instant::now();
            let verdict = self.conditions.evaluate(webhook, &review["request"]);
            let outcome = match verdict {
                Verdict::Match => MatchConditions::Matched,
                Verdict::NoMatch => MatchConditions::Excluded,
                Verdict::Error(_) => MatchConditions::Failed,
            };
            let call = WebhookCall {
                name: name(webhook),
                step: self.step,
                operation: a.operation,
            };
            metrics::global().observe_match_conditions(&call, start.elapsed(), outcome);
            match verdict {
                Verdict::Match => {}
                Verdict::NoMatch => return Ok(None),
                Verdict::Error(_) if text(webhook, "/failurePolicy") == Some("Ignore") => {
                    return Ok(None)
                }
                Verdict::Error(e) => {
                    return Err(a.forbidden(format!(
                        "failed calling webhook \"{}\": failed evaluating match conditions: {e}",
                        name(webhook)
                    )))
                }
            }
        }
        Ok(Some(invocation))
    }
}

pub(super) fn dry_run_check(webhook: &Value, a: &Attributes) -> Result<(), ApiError> {
    if a.dry_run && !predicates::dry_run_safe(webhook) {
        return Err(ApiError::bad_request(format!(
            "admission webhook \"{}\" does not support dry run",
            name(webhook)
        )));
    }
    Ok(())
}

pub(super) fn name(webhook: &Value) -> &str {
    text(webhook, "/name").unwrap_or_default()
}

/// Why one webhook did not allow the request.
pub(super) enum Failure {
    /// The call failed; the webhook's failure policy decides.
    Call(client::CallError),
    /// The webhook denied the request.
    Denied(ApiError),
    /// This server refused to go on (a dry run the webhook cannot take, a
    /// patch that does not apply).
    Refused(ApiError),
}

impl From<client::CallError> for Failure {
    fn from(e: client::CallError) -> Self {
        Failure::Call(e)
    }
}

/// Settles the outcome of one webhook call: records it in the webhook
/// metrics and applies the failure policy to a failed call (Fail unless
/// Ignore; a failure that fails the request is upstream's internal
/// error). `None` when the call failed open.
pub(super) fn settle<T>(
    webhook: &Value,
    call: WebhookCall,
    start: Instant,
    result: Result<T, Failure>,
) -> Result<Option<T>, ApiError> {
    let m = metrics::global();
    let elapsed = start.elapsed();
    match result {
        Ok(v) => {
            m.observe_webhook(&call, elapsed, 200, false);
            Ok(Some(v))
        }
        Err(Failure::Denied(e)) => {
            m.observe_webhook_rejection(&call, Rejection::Denied, e.code);
            m.observe_webhook(&call, elapsed, e.code, true);
            Err(e)
        }
        Err(Failure::Refused(e)) => {
            m.observe_webhook_rejection(&call, Rejection::Internal, 0);
            m.observe_webhook(&call, elapsed, 0, true);
            Err(e)
        }
        Err(Failure::Call(e)) => {
            let code = e.code(call.step == Step::Admit);
            if text(webhook, "/failurePolicy") == Some("Ignore") {
                tracing::warn!(webhook = call.name, error = %e, "failed calling webhook, failing open");
                m.observe_webhook(&call, elapsed, code, false);
                m.observe_webhook_fail_open(&call);
                return Ok(None);
            }
            m.observe_webhook_rejection(&call, Rejection::CallingWebhook, code);
            m.observe_webhook(&call, elapsed, code, true);
            Err(ApiError::internal_error(format!(
                "failed calling webhook \"{}\": {e}",
                call.name
            )))
        }
    }
}

/// Upstream's attributes of the `Call mutating webhook` and `Call
/// validating webhook` spans.
fn call_attributes(
    configuration: &str,
    name: &str,
    a: &Attributes,
    request: &Value,
) -> Vec<Attribute> {
    vec![
        Attribute::new("configuration", configuration.to_owned()),
        Attribute::new("webhook", name.to_owned()),
        Attribute::new("resource", a.resource.to_string()),
        Attribute::new("subresource", a.subresource.clone()),
        Attribute::new("operation", a.operation.as_str()),
        Attribute::new(
            "UID",
            text(request, "/request/uid").unwrap_or_default().to_owned(),
        ),
    ]
}

/// One round trip: the review sent, the answer verified, its audit
/// annotations and warnings recorded, a denial turned into its status and
/// a mutating webhook's patch decoded.
pub(super) async fn exchange(
    (configuration, webhook): (&str, &Value),
    a: &Attributes,
    (invocation, converted): (&Target, Option<&Converted>),
    stores: &Stores,
    mutating: bool,
) -> Result<Option<WebhookPatch>, Failure> {
    let name = name(webhook);
    let version = review_version(webhook).ok_or(client::CallError::NoKnownVersion)?;
    let timeout = webhook
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    let request = review(a, invocation, converted, version);
    let null = Value::Null;
    let config = webhook.get("clientConfig").unwrap_or(&null);
    let calling = client::call(config, stores, &request, Duration::from_secs(timeout));
    let span = if mutating {
        "Call mutating webhook"
    } else {
        "Call validating webhook"
    };
    let attributes = || call_attributes(configuration, name, a, &request);
    let answer = component_base::tracing::in_span(span, attributes, calling).await?;
    let response = verify_response(answer, &request["request"]["uid"], version, mutating)?;
    if let Some(returned) = response.get("auditAnnotations").and_then(Value::as_object) {
        annotations::record_returned(&a.request, name, returned);
    }
    for w in predicates::strings(response.get("warnings")) {
        a.request.add_warning(w);
    }
    if response.get("allowed").and_then(Value::as_bool) != Some(true) {
        return Err(Failure::Denied(denied(name, response.get("status"))));
    }
    if !mutating {
        return Ok(None);
    }
    Ok(decode_patch(&response, version)?)
}
