//! MutatingAdmissionWebhook and ValidatingAdmissionWebhook
//! (admissionregistration.k8s.io/v1): requests matching a webhook's rules
//! and selectors are sent to it as an AdmissionReview; mutating webhooks
//! run one after another and may answer with a JSON patch (those with
//! `reinvocationPolicy: IfNeeded` are called again in admission's second
//! pass when a later change went past them), validating ones run
//! concurrently and may only refuse.

mod client;
mod conditions;
mod matching;

use std::time::Duration;

use apimachinery::status::{ApiError, StatusReason};
use apiserver::admission::{
    Attributes, Handler, HookReinvocation, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use base64::Engine;
use serde_json::{json, Value};

use super::lookup::{text, Stores};
use conditions::{Conditions, Verdict};

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

/// The webhooks of every configuration of one kind, configurations in name
/// order (as upstream sorts them), each with a key naming it among them
/// (`<configuration>/<index>`, as upstream's webhook UID).
async fn webhooks(
    stores: &Stores,
    (group, resource): (&str, &str),
) -> Result<Vec<(String, Value)>, ApiError> {
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
                .map(move |(i, hook)| (format!("{config}/{i}"), hook.clone()))
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
}

impl Dispatcher {
    fn new(stores: Stores) -> Self {
        Dispatcher {
            stores,
            conditions: Conditions::default(),
        }
    }

    /// Whether `webhook` is to be called for this request: its rules,
    /// selectors and match conditions. Dry runs are refused for webhooks
    /// with side effects.
    async fn should_call(&self, webhook: &Value, a: &Attributes) -> Result<bool, ApiError> {
        if !self.matches(webhook, a).await? {
            return Ok(false);
        }
        dry_run_check(webhook, a)?;
        Ok(true)
    }

    /// Whether the request is one `webhook` is for: its rules, selectors
    /// and match conditions.
    async fn matches(&self, webhook: &Value, a: &Attributes) -> Result<bool, ApiError> {
        if !matching::is_admissible(a.operation)
            || !matching::rules_match(webhook, a, namespaced(a))
            || !matching::object_selector_matches(webhook, a)
            || !matching::namespace_selector_matches(webhook, a, &self.stores).await?
        {
            return Ok(false);
        }
        if webhook.get("matchConditions").is_some() {
            let review = review(a);
            match self.conditions.evaluate(webhook, &review["request"]) {
                Verdict::Match => {}
                Verdict::NoMatch => return Ok(false),
                Verdict::Error(_) if text(webhook, "/failurePolicy") == Some("Ignore") => {
                    return Ok(false)
                }
                Verdict::Error(e) => {
                    return Err(a.forbidden(format!(
                        "failed calling webhook \"{}\": failed evaluating match conditions: {e}",
                        name(webhook)
                    )))
                }
            }
        }
        Ok(true)
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

/// The AdmissionReview v1 request of one call.
fn review(a: &Attributes) -> Value {
    let uid = uuid::Uuid::new_v4().to_string();
    let gvk = json!({"group": a.kind.group, "version": a.kind.version, "kind": a.kind.kind});
    let gvr = json!({"group": a.resource.group, "version": a.resource.version, "resource": a.resource.resource});
    let mut request = json!({
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": a.name,
        "operation": a.operation.as_str(),
        "userInfo": user_info(a),
        "object": a.object.clone().unwrap_or(Value::Null),
        "oldObject": a.old_object.as_deref().cloned().unwrap_or(Value::Null),
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
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

/// Upstream's answer to a denial: the webhook's status, at least 400.
fn denied(webhook: &str, status: Option<&Value>) -> ApiError {
    let field = |k: &str| {
        status
            .and_then(|s| text(s, &format!("/{k}")))
            .unwrap_or_default()
    };
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let prefix = format!("admission webhook \"{webhook}\" denied the request");
    let message = match (field("message"), field("reason")) {
        (m, _) if !m.is_empty() => format!("{prefix}: {m}"),
        (_, r) if !r.is_empty() => format!("{prefix}: {r}"),
        _ => format!("{prefix} without explanation"),
    };
    let reason = serde_json::from_value::<StatusReason>(json!(field("reason")))
        .unwrap_or(StatusReason::Unknown);
    ApiError::new(code, reason, message)
}

/// What came back from one webhook.
enum Outcome {
    Allowed(Value),
    Ignored,
}

/// Calls one webhook and checks its answer; failures obey its failure
/// policy (Fail unless Ignore).
async fn call(webhook: &Value, a: &Attributes, stores: &Stores) -> Result<Outcome, ApiError> {
    let name = name(webhook);
    let timeout = webhook
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    let request = review(a);
    let uid = request["request"]["uid"].clone();
    let config = webhook.get("clientConfig").cloned().unwrap_or(Value::Null);
    let answer = client::call(&config, stores, &request, Duration::from_secs(timeout))
        .await
        .and_then(|r| check_response(r, &uid));
    let response = match answer {
        Ok(r) => r,
        Err(e) if text(webhook, "/failurePolicy") == Some("Ignore") => {
            tracing::warn!(webhook = name, error = %e, "failed calling webhook; failure policy Ignore");
            return Ok(Outcome::Ignored);
        }
        Err(e) => {
            return Err(ApiError::internal_error(format!(
                "failed calling webhook \"{name}\": failed to call webhook: {e}"
            )))
        }
    };
    for w in response
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(w) = w.as_str() {
            a.request.add_warning(w);
        }
    }
    if response.get("allowed").and_then(Value::as_bool) != Some(true) {
        return Err(denied(name, response.get("status")));
    }
    Ok(Outcome::Allowed(response))
}

/// The `response` of an AdmissionReview answering `uid`.
fn check_response(review: Value, uid: &Value) -> Result<Value, client::CallError> {
    let bad = |m: &str| client::CallError::Response(m.to_owned());
    if review.get("apiVersion").and_then(Value::as_str) != Some("admission.k8s.io/v1")
        || review.get("kind").and_then(Value::as_str) != Some("AdmissionReview")
    {
        return Err(bad(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview",
        ));
    }
    let response = review
        .get("response")
        .cloned()
        .ok_or_else(|| bad("response was absent"))?;
    if response.get("uid") != Some(uid) {
        return Err(bad(&format!(
            "expected response.uid={}, got {}",
            uid,
            response.get("uid").cloned().unwrap_or(json!(""))
        )));
    }
    Ok(response)
}

/// Applies a webhook's JSON patch to the object.
fn apply_patch(response: &Value, object: &mut Value) -> Result<bool, String> {
    let Some(patch) = response.get("patch").and_then(Value::as_str) else {
        return Ok(false);
    };
    if text(response, "/patchType") != Some("JSONPatch") {
        return Err("expected patchType JSONPatch".into());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .map_err(|e| e.to_string())?;
    let patch: json_patch::Patch = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).map_err(|e| e.to_string())?;
    let changed = patched != *object;
    *object = patched;
    Ok(changed)
}

pub struct MutatingWebhook {
    dispatcher: Dispatcher,
}

impl MutatingWebhook {
    pub fn new(stores: Stores) -> Self {
        MutatingWebhook {
            dispatcher: Dispatcher::new(stores),
        }
    }

    /// Calls one webhook the request is for; returns whether it changed
    /// the object.
    async fn run(&self, webhook: &Value, a: &mut Attributes) -> Result<bool, ApiError> {
        dry_run_check(webhook, a)?;
        let Outcome::Allowed(response) = call(webhook, a, &self.dispatcher.stores).await? else {
            return Ok(false);
        };
        let Some(object) = a.object.as_mut() else {
            return Ok(false);
        };
        apply_patch(&response, object).map_err(|e| {
            ApiError::internal_error(format!(
                "failed calling webhook \"{}\": received invalid webhook response: {e}",
                name(webhook)
            ))
        })
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
        for (key, hook) in &hooks {
            if !self.dispatcher.matches(hook, a).await?
                || (is_reinvoke && !state.should_reinvoke(key))
            {
                continue;
            }
            if self.run(hook, a).await? {
                state.require_reinvoking_previously_invoked();
                a.reinvocation.set_should_reinvoke();
            }
            if text(hook, "/reinvocationPolicy") == Some("IfNeeded") {
                state.invoked_reinvocable(key.clone());
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
            dispatcher: Dispatcher::new(stores),
        }
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
        let d = &self.dispatcher;
        let hooks = webhooks(&d.stores, VALIDATING).await?;
        let mut selected = Vec::new();
        for (_, hook) in &hooks {
            if d.should_call(hook, a).await? {
                selected.push(hook);
            }
        }
        let results =
            futures::future::join_all(selected.iter().map(|h| call(h, a, &d.stores))).await;
        // The first refusal in webhook order is the answer.
        for result in results {
            result?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_carry_the_webhook_name_and_at_least_400() {
        let e = denied(
            "deny.example.com",
            Some(&json!({"message": "no pods today", "code": 200})),
        );
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"deny.example.com\" denied the request: no pods today"
        );
        let e = denied("x", Some(&json!({"code": 403, "reason": "Forbidden"})));
        assert_eq!((e.code, e.reason), (403, StatusReason::Forbidden));
        assert_eq!(
            e.message,
            "admission webhook \"x\" denied the request: Forbidden"
        );
        assert_eq!(
            denied("x", None).message,
            "admission webhook \"x\" denied the request without explanation"
        );
    }

    #[test]
    fn json_patches_apply_and_report_changes() {
        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]"#);
        let response = json!({"patchType": "JSONPatch", "patch": patch});
        let mut obj = json!({"metadata": {}});
        assert_eq!(apply_patch(&response, &mut obj), Ok(true));
        assert_eq!(obj["metadata"]["labels"]["a"], "b");
    }
}
