//! The webhook authorizer (`--authorization-mode=Webhook` and `type:
//! Webhook` entries of `--authorization-config`; upstream's
//! `k8s.io/apiserver/plugin/pkg/authorizer/webhook`): the request's attributes go to an HTTPS
//! service as a SubjectAccessReview, whose `allowed`/`denied` answer is the
//! decision. Answers are cached (allowed and not allowed for their own
//! TTLs); a failed call gives the failure policy's decision with the error.
//! CEL match conditions over the review's spec skip the call when false.
//! The request's field and label selectors go along as requirements.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use apimachinery::fields::{FieldOperator, FieldSelector};
use apimachinery::labels::{Operator, Selector};
use async_trait::async_trait;
use kube_cel::Expression;
use serde_json::{json, Map, Value};

use crate::authentication::user::UserInfo;
use crate::authorization::authorizer::{Attributes, Authorizer, Decision, Outcome, Rules};
use crate::util::webhook::Endpoint;

/// Upstream's bound on the response cache.
const CACHE_ENTRIES: usize = 8192;
/// Requests whose attributes are longer than this are not cached.
const MAX_CACHED_ATTRIBUTES: usize = 10_000;

/// What a failed call decides (`failurePolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    NoOpinion,
    Deny,
}

/// How the webhook is called and its answers kept.
pub struct WebhookSettings {
    /// The authorizer's name, for messages.
    pub name: String,
    /// `v1` or `v1beta1`.
    pub version: String,
    pub timeout: Duration,
    /// TTL of allowed answers; `None` keeps none.
    pub authorized_ttl: Option<Duration>,
    /// TTL of answers that do not allow; `None` keeps none.
    pub unauthorized_ttl: Option<Duration>,
    pub failure_policy: FailurePolicy,
    /// Compiled `matchConditions` (all must be true to call the webhook).
    pub match_conditions: Vec<Expression>,
}

/// A cached answer: allowed, denied, reason.
#[derive(Clone)]
struct Answer {
    allowed: bool,
    denied: bool,
    reason: String,
}

pub struct WebhookAuthorizer {
    endpoint: Endpoint,
    settings: WebhookSettings,
    cache: Mutex<HashMap<String, (Instant, Answer)>>,
}

/// The SubjectAccessReview spec of a request, in `authorization.k8s.io/v1`
/// shape (upstream omits empty fields).
pub fn review_spec(attrs: &Attributes<'_>) -> Value {
    let mut spec = Map::new();
    let user = attrs.user;
    let put = |map: &mut Map<String, Value>, key: &str, value: &str| {
        if !value.is_empty() {
            map.insert(key.into(), Value::from(value));
        }
    };
    if attrs.is_resource_request {
        let mut ra = Map::new();
        put(&mut ra, "namespace", attrs.namespace);
        put(&mut ra, "verb", attrs.verb);
        put(&mut ra, "group", attrs.api_group);
        put(&mut ra, "version", attrs.api_version);
        put(&mut ra, "resource", attrs.resource);
        put(&mut ra, "subresource", attrs.subresource);
        put(&mut ra, "name", attrs.name);
        add_selectors(&mut ra, attrs);
        spec.insert("resourceAttributes".into(), Value::Object(ra));
    } else {
        let mut nra = Map::new();
        put(&mut nra, "path", attrs.path);
        put(&mut nra, "verb", attrs.verb);
        spec.insert("nonResourceAttributes".into(), Value::Object(nra));
    }
    put(&mut spec, "user", &user.name);
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
    put(&mut spec, "uid", &user.uid);
    Value::Object(spec)
}

/// The request's selectors as SubjectAccessReview requirements (upstream
/// sends only the terms it can express and nothing for a selector that
/// does not parse).
fn add_selectors(ra: &mut Map<String, Value>, attrs: &Attributes<'_>) {
    if let Ok(selector) = FieldSelector::parse(attrs.field_selector) {
        let terms: Vec<Value> = selector
            .requirements()
            .iter()
            .map(|r| {
                let operator = match r.operator {
                    FieldOperator::Equals => "In",
                    FieldOperator::NotEquals => "NotIn",
                };
                json!({"key": r.field, "operator": operator, "values": [r.value]})
            })
            .collect();
        if !terms.is_empty() {
            ra.insert("fieldSelector".into(), json!({ "requirements": terms }));
        }
    }
    if let Ok(selector) = Selector::parse(attrs.label_selector) {
        let terms: Vec<Value> = selector
            .requirements()
            .iter()
            .filter_map(|r| {
                let operator = match r.operator() {
                    Operator::In | Operator::Equals | Operator::DoubleEquals => "In",
                    Operator::NotIn | Operator::NotEquals => "NotIn",
                    Operator::Exists => "Exists",
                    Operator::DoesNotExist => "DoesNotExist",
                    Operator::GreaterThan | Operator::LessThan => return None,
                };
                let mut term = json!({"key": r.key(), "operator": operator});
                if !r.values().is_empty() {
                    term["values"] = json!(r.values());
                }
                Some(term)
            })
            .collect();
        if !terms.is_empty() {
            ra.insert("labelSelector".into(), json!({ "requirements": terms }));
        }
    }
}

/// What match conditions see as `request`: every string field present,
/// even empty ones (upstream's conversion for CEL).
fn condition_input(attrs: &Attributes<'_>) -> Value {
    let user = attrs.user;
    let mut request = json!({
        "user": user.name, "groups": user.groups, "uid": user.uid, "extra": user.extra,
    });
    if attrs.is_resource_request {
        request["resourceAttributes"] = json!({
            "namespace": attrs.namespace, "verb": attrs.verb, "group": attrs.api_group,
            "version": attrs.api_version, "resource": attrs.resource,
            "subresource": attrs.subresource, "name": attrs.name,
        });
        if let Some(ra) = request["resourceAttributes"].as_object_mut() {
            add_selectors(ra, attrs);
        }
    } else {
        request["nonResourceAttributes"] = json!({"verb": attrs.verb, "path": attrs.path});
    }
    request
}

impl WebhookAuthorizer {
    pub fn new(endpoint: Endpoint, settings: WebhookSettings) -> WebhookAuthorizer {
        WebhookAuthorizer {
            endpoint,
            settings,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Whether every match condition holds: a false one wins over errors,
    /// which are otherwise returned joined.
    fn matches(&self, attrs: &Attributes<'_>) -> Result<bool, String> {
        if self.settings.match_conditions.is_empty() {
            return Ok(true);
        }
        let request = condition_input(attrs);
        let mut errors = Vec::new();
        for condition in &self.settings.match_conditions {
            match condition.evaluate(&[("request", &request)]) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => return Ok(false),
                Ok(other) => errors.push(format!("expected a bool result, got {other}")),
                Err(e) => errors.push(e.to_string()),
            }
        }
        match errors.len() {
            0 => Ok(true),
            _ => Err(format!(
                "authorization webhook {} match condition evaluation failed: {}",
                self.settings.name,
                errors.join(", ")
            )),
        }
    }

    fn cached(&self, key: &str) -> Option<Answer> {
        let cache = self.cache.lock().ok()?;
        let (expires, answer) = cache.get(key)?;
        (Instant::now() < *expires).then(|| answer.clone())
    }

    fn remember(&self, key: String, answer: &Answer) {
        let ttl = if answer.allowed {
            self.settings.authorized_ttl
        } else {
            self.settings.unauthorized_ttl
        };
        let (Some(ttl), Ok(mut cache)) = (ttl, self.cache.lock()) else {
            return;
        };
        if cache.len() >= CACHE_ENTRIES {
            let now = Instant::now();
            cache.retain(|_, (expires, _)| *expires > now);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now() + ttl, answer.clone()));
    }

    /// Posts the review and reads its status.
    async fn ask(&self, spec: &Value) -> Result<Answer, String> {
        let mut spec = spec.clone();
        if self.settings.version == "v1beta1" {
            // v1beta1 names the groups `group`.
            if let Some(groups) = spec.as_object_mut().and_then(|s| s.remove("groups")) {
                spec["group"] = groups;
            }
        }
        let review = json!({
            "apiVersion": format!("authorization.k8s.io/{}", self.settings.version),
            "kind": "SubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": {"allowed": false},
        });
        let answer = self.endpoint.post(&review, self.settings.timeout).await?;
        let status = answer.get("status").unwrap_or(&Value::Null);
        let flag = |key: &str| status.get(key).and_then(Value::as_bool).unwrap_or(false);
        Ok(Answer {
            allowed: flag("allowed"),
            denied: flag("denied"),
            reason: status
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        })
    }

    fn failed(&self, error: String) -> Outcome {
        let decision = match self.settings.failure_policy {
            FailurePolicy::NoOpinion => Decision::NoOpinion(String::new()),
            FailurePolicy::Deny => Decision::Deny(String::new()),
        };
        Outcome {
            decision,
            error: Some(error),
        }
    }
}

/// Whether a request's attributes are short enough to cache.
fn cacheable(attrs: &Attributes<'_>) -> bool {
    let size = [
        attrs.namespace,
        attrs.verb,
        attrs.api_group,
        attrs.api_version,
        attrs.resource,
        attrs.subresource,
        attrs.name,
        attrs.path,
    ]
    .iter()
    .map(|s| s.len())
    .sum::<usize>();
    size < MAX_CACHED_ATTRIBUTES
}

#[async_trait]
impl Authorizer for WebhookAuthorizer {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        self.evaluate(attrs).await.decision
    }

    async fn evaluate(&self, attrs: &Attributes<'_>) -> Outcome {
        match self.matches(attrs) {
            Ok(true) => {}
            Ok(false) => {
                return Outcome {
                    decision: Decision::NoOpinion(String::new()),
                    error: None,
                }
            }
            Err(e) => return self.failed(e),
        }
        let spec = review_spec(attrs);
        let key = spec.to_string();
        let answer = match self.cached(&key) {
            Some(answer) => answer,
            None => match self.ask(&spec).await {
                Ok(answer) => {
                    if cacheable(attrs) {
                        self.remember(key, &answer);
                    }
                    answer
                }
                Err(e) => {
                    tracing::warn!("Failed to make webhook authorizer request: {e}");
                    return self.failed(e);
                }
            },
        };
        let (decision, error) = match (answer.allowed, answer.denied) {
            (true, true) => (
                Decision::Deny(answer.reason),
                Some("webhook subject access review returned both allow and deny response".into()),
            ),
            (_, true) => (Decision::Deny(answer.reason), None),
            (true, false) => (Decision::Allow(answer.reason), None),
            (false, false) => (Decision::NoOpinion(answer.reason), None),
        };
        Outcome { decision, error }
    }

    async fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules {
            incomplete: true,
            errors: vec!["webhook authorizer does not support user rule resolution".into()],
            ..Rules::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs<'a>(user: &'a UserInfo, resource: &'a str) -> Attributes<'a> {
        Attributes {
            user,
            verb: "get",
            is_resource_request: !resource.is_empty(),
            namespace: "",
            api_group: "",
            api_version: "v1",
            resource,
            subresource: "",
            name: "",
            path: "/healthz",
            field_selector: "",
            label_selector: "",
        }
    }

    fn authorizer(conditions: &[&str]) -> WebhookAuthorizer {
        let config =
            serde_yaml::from_str("clusters:\n- cluster: {server: 'https://127.0.0.1:9/'}\n")
                .unwrap();
        let endpoint = Endpoint::from_config(&config, std::path::Path::new(".")).unwrap();
        let match_conditions = conditions
            .iter()
            .map(|c| Expression::compile(c, &["request"]).unwrap())
            .collect();
        WebhookAuthorizer::new(
            endpoint,
            WebhookSettings {
                name: "hook".into(),
                version: "v1".into(),
                timeout: Duration::from_secs(1),
                authorized_ttl: None,
                unauthorized_ttl: None,
                failure_policy: FailurePolicy::Deny,
                match_conditions,
            },
        )
    }

    #[test]
    fn the_review_spec_omits_empty_fields() {
        let bob = UserInfo {
            name: "bob".into(),
            groups: vec!["dev".into()],
            ..UserInfo::default()
        };
        assert_eq!(
            review_spec(&attrs(&bob, "pods")),
            json!({"user": "bob", "groups": ["dev"],
                   "resourceAttributes": {"verb": "get", "version": "v1", "resource": "pods"}})
        );
        let mut selected = attrs(&bob, "pods");
        selected.field_selector = "spec.nodeName=n1,metadata.name!=x";
        selected.label_selector = "app in (web),!legacy";
        assert_eq!(
            review_spec(&selected)["resourceAttributes"],
            json!({"verb": "get", "version": "v1", "resource": "pods",
                   "fieldSelector": {"requirements": [
                       {"key": "metadata.name", "operator": "NotIn", "values": ["x"]},
                       {"key": "spec.nodeName", "operator": "In", "values": ["n1"]}]},
                   "labelSelector": {"requirements": [
                       {"key": "app", "operator": "In", "values": ["web"]},
                       {"key": "legacy", "operator": "DoesNotExist"}]}})
        );
        assert_eq!(
            review_spec(&attrs(&bob, "")),
            json!({"user": "bob", "groups": ["dev"],
                   "nonResourceAttributes": {"verb": "get", "path": "/healthz"}})
        );
    }

    #[tokio::test]
    async fn match_conditions_skip_the_webhook_or_fail_by_policy() {
        let bob = UserInfo {
            name: "bob".into(),
            ..UserInfo::default()
        };
        // Empty fields are present for conditions, so this is false, not an error.
        let skip = authorizer(&["request.resourceAttributes.namespace != ''"]);
        let outcome = skip.evaluate(&attrs(&bob, "pods")).await;
        assert_eq!(outcome.decision, Decision::NoOpinion(String::new()));
        assert_eq!(outcome.error, None);
        let broken = authorizer(&["request.resourceAttributes.verb == 'get'"]);
        let outcome = broken.evaluate(&attrs(&bob, "")).await;
        assert_eq!(outcome.decision, Decision::Deny(String::new()));
        assert!(outcome
            .error
            .unwrap()
            .starts_with("authorization webhook hook match condition evaluation failed"));
    }
}
