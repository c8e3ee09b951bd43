//! MutatingAdmissionWebhook and ValidatingAdmissionWebhook
//! (admissionregistration.k8s.io/v1): requests matching a webhook's rules
//! and selectors are sent to it as an AdmissionReview; mutating webhooks
//! run one after another and may answer with a JSON patch (those with
//! `reinvocationPolicy: IfNeeded` are called again in admission's second
//! pass when a later change went past them), validating ones run
//! concurrently and may only refuse.

mod annotations;
mod client;
mod conditions;
mod matching;
mod response;

use std::time::{Duration, Instant};

use apimachinery::status::ApiError;
use apiserver::admission::metrics::{self, MatchConditions, Rejection, Step, WebhookCall};
use apiserver::admission::{
    Attributes, GroupVersionKind, GroupVersionResource, Handler, HookReinvocation,
    MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::lookup::{text, Stores};
use super::versioned::{self, Converted, Target};
use annotations::MutationAnnotator;
use conditions::{Conditions, Verdict};
use response::{apply_patch, decode_patch, denied, verify_response, WebhookPatch};

const MUTATING: (&str, &str) = (
    "admissionregistration.k8s.io",
    "mutatingwebhookconfigurations",
);
const VALIDATING: (&str, &str) = (
    "admissionregistration.k8s.io",
    "validatingwebhookconfigurations",
);
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// The plugin's name, under which its reinvocation state is kept.
const MUTATING_PLUGIN: &str = "MutatingAdmissionWebhook";

/// One webhook of a configuration.
struct Hook {
    configuration: String,
    /// `<configuration>/<index>`, as upstream's webhook UID.
    uid: String,
    webhook: Value,
}

/// The webhooks of every configuration of one kind, configurations in name
/// order (as upstream sorts them).
async fn webhooks(stores: &Stores, (group, resource): (&str, &str)) -> Result<Vec<Hook>, ApiError> {
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
struct Dispatcher {
    stores: Stores,
    conditions: Conditions,
    /// Which admission half the plugin runs in, for its metrics.
    step: Step,
}

impl Dispatcher {
    fn new(stores: Stores, step: Step) -> Self {
        Dispatcher {
            stores,
            conditions: Conditions::default(),
            step,
        }
    }

    /// The version `webhook` is to be called for, if the request is one
    /// it is for: its rules, selectors and match conditions.
    async fn matches(&self, webhook: &Value, a: &Attributes) -> Result<Option<Target>, ApiError> {
        if matching::is_exempt(a) || !matching::is_admissible(a.operation) {
            return Ok(None);
        }
        let Some(invocation) = matching::invocation(webhook, a, namespaced(a)) else {
            return Ok(None);
        };
        if !matching::object_selector_matches(webhook, a)
            || !matching::namespace_selector_matches(webhook, a, &self.stores).await?
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

fn dry_run_check(webhook: &Value, a: &Attributes) -> Result<(), ApiError> {
    if a.dry_run && !matching::dry_run_safe(webhook) {
        return Err(ApiError::bad_request(format!(
            "admission webhook \"{}\" does not support dry run",
            name(webhook)
        )));
    }
    Ok(())
}

fn name(webhook: &Value) -> &str {
    text(webhook, "/name").unwrap_or_default()
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

/// The AdmissionReview version to send: the first of the webhook's
/// `admissionReviewVersions` this server speaks.
fn review_version(webhook: &Value) -> Option<&'static str> {
    matching::strings(webhook.get("admissionReviewVersions")).find_map(|v| match v {
        "v1" => Some("v1"),
        "v1beta1" => Some("v1beta1"),
        _ => None,
    })
}

fn gvk(kind: &GroupVersionKind) -> Value {
    json!({"group": kind.group, "version": kind.version, "kind": kind.kind})
}

fn gvr(resource: &GroupVersionResource) -> Value {
    json!({"group": resource.group, "version": resource.version, "resource": resource.resource})
}

/// The AdmissionReview request of one call, in `version` (v1 and v1beta1
/// carry the same fields): the objects at the version the webhook is
/// called for (`converted` when that is not the request's), the request's
/// own kind and resource as `requestKind` and `requestResource`.
fn review(
    a: &Attributes,
    invocation: &Target,
    converted: Option<&Converted>,
    version: &str,
) -> Value {
    let uid = uuid::Uuid::new_v4().to_string();
    let (object, old_object) = match converted {
        Some(c) => (c.object.clone(), c.old_object.clone()),
        None => (a.object.clone(), a.old_object.as_deref().cloned()),
    };
    let mut request = json!({
        "uid": uid,
        "kind": gvk(&invocation.kind),
        "resource": gvr(&invocation.resource),
        "requestKind": gvk(&a.kind),
        "requestResource": gvr(&a.resource),
        "name": a.name,
        "operation": a.operation.as_str(),
        "userInfo": user_info(a),
        "object": object.unwrap_or(Value::Null),
        "oldObject": old_object.unwrap_or(Value::Null),
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
    json!({"apiVersion": format!("admission.k8s.io/{version}"), "kind": "AdmissionReview", "request": request})
}

/// Why one webhook did not allow the request.
enum Failure {
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
fn settle<T>(
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

/// One round trip: the review sent, the answer verified, its audit
/// annotations and warnings recorded, a denial turned into its status and
/// a mutating webhook's patch decoded.
async fn exchange(
    webhook: &Value,
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
    let answer = client::call(config, stores, &request, Duration::from_secs(timeout)).await?;
    let response = verify_response(answer, &request["request"]["uid"], version, mutating)?;
    if let Some(returned) = response.get("auditAnnotations").and_then(Value::as_object) {
        annotations::record_returned(&a.request, name, returned);
    }
    for w in matching::strings(response.get("warnings")) {
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
        let result = self.mutate(&hook.webhook, invocation, a, annotator).await;
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
        webhook: &Value,
        invocation: &Target,
        a: &mut Attributes,
        annotator: &MutationAnnotator<'_>,
    ) -> Result<bool, Failure> {
        dry_run_check(webhook, a).map_err(Failure::Refused)?;
        let converted = versioned::objects_for(invocation, a)
            .await
            .map_err(Failure::Refused)?;
        let stores = &self.dispatcher.stores;
        let called = (invocation, converted.as_ref());
        let Some(patch) = exchange(webhook, a, called, stores, true).await? else {
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
        matching::is_admissible(op)
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
        (webhook, invocation): (&Value, &Target),
        index: usize,
        a: &Attributes,
    ) -> Result<(), ApiError> {
        let call = WebhookCall {
            name: name(webhook),
            step: Step::Validate,
            operation: a.operation,
        };
        let start = Instant::now();
        let result = self.exchange(webhook, invocation, a).await;
        if settle(webhook, call, start, result)?.is_none() {
            annotations::validating_failed_open(&a.request, index, call.name);
        }
        Ok(())
    }

    async fn exchange(
        &self,
        webhook: &Value,
        invocation: &Target,
        a: &Attributes,
    ) -> Result<(), Failure> {
        dry_run_check(webhook, a).map_err(Failure::Refused)?;
        let converted = versioned::objects_for(invocation, a)
            .await
            .map_err(Failure::Refused)?;
        let called = (invocation, converted.as_ref());
        exchange(webhook, a, called, &self.dispatcher.stores, false).await?;
        Ok(())
    }
}

impl Handler for ValidatingWebhook {
    fn handles(&self, op: Operation) -> bool {
        matching::is_admissible(op)
    }
}

#[async_trait]
impl ValidationInterface for ValidatingWebhook {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let hooks = webhooks(&self.dispatcher.stores, VALIDATING).await?;
        let mut selected = Vec::new();
        for hook in &hooks {
            if let Some(invocation) = self.dispatcher.matches(&hook.webhook, a).await? {
                selected.push((&hook.webhook, invocation));
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_first_known_review_version_is_sent() {
        let hook = |versions: Value| json!({"admissionReviewVersions": versions});
        assert_eq!(
            review_version(&hook(json!(["v2", "v1beta1", "v1"]))),
            Some("v1beta1")
        );
        assert_eq!(review_version(&hook(json!(["v1", "v1beta1"]))), Some("v1"));
        assert_eq!(review_version(&hook(json!(["v2"]))), None);
        assert_eq!(
            client::CallError::NoKnownVersion.to_string(),
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
        );
    }
}
