//! Webhook token authentication (`--authentication-token-webhook-config-file`,
//! upstream's
//! `k8s.io/apiserver/plugin/pkg/authenticator/token/webhook`): a bearer token is sent in a
//! TokenReview (`--authentication-token-webhook-version`, v1beta1 or v1) to
//! the HTTPS service a kubeconfig-format file names, and its answer —
//! authenticated or not — is cached for `--authentication-token-webhook-cache-ttl`.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::authentication::cache::TokenCache;
use crate::authentication::user::UserInfo;
use crate::authentication::{AuthError, TokenAuthenticator, TokenResponse};
use crate::util::webhook::Endpoint;
pub use crate::util::webhook::KubeconfigError as WebhookConfigError;

/// How long one call may take.
const TIMEOUT: Duration = Duration::from_secs(30);

pub struct WebhookTokenAuthenticator {
    endpoint: Endpoint,
    /// `authentication.k8s.io/v1` or `…/v1beta1`.
    api_version: String,
    /// `--api-audiences`: what a review without audiences answered for.
    implicit_audiences: Vec<String>,
    /// Answers, successful or not (`None`), by token and audiences.
    cache: Option<TokenCache<Option<TokenResponse>>>,
}

impl WebhookTokenAuthenticator {
    /// Reads the kubeconfig-format file (blocking file I/O).
    pub fn load(
        path: &Path,
        version: &str,
        cache_ttl: Duration,
        implicit_audiences: Vec<String>,
    ) -> Result<Self, WebhookConfigError> {
        let invalid = |problem: String| WebhookConfigError::Invalid {
            path: path.to_owned(),
            problem,
        };
        let api_version = match version {
            "v1" | "v1beta1" => format!("authentication.k8s.io/{version}"),
            other => {
                return Err(invalid(format!(
                    "unsupported authentication webhook version {other:?}, supported versions are \"v1\", \"v1beta1\""
                )))
            }
        };
        Ok(WebhookTokenAuthenticator {
            endpoint: Endpoint::load(path)?,
            api_version,
            implicit_audiences,
            cache: (!cache_ttl.is_zero()).then(|| TokenCache::new(cache_ttl)),
        })
    }

    /// Posts the review, retrying failed calls with upstream's backoff.
    async fn review(&self, review: &Value) -> Result<Value, AuthError> {
        self.endpoint
            .post(review, TIMEOUT)
            .await
            .map_err(AuthError::Token)
    }

    /// The webhook's answer for a token.
    async fn ask(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        let mut spec = json!({"token": token});
        if !audiences.is_empty() {
            spec["audiences"] = json!(audiences);
        }
        let request = json!({"apiVersion": self.api_version, "kind": "TokenReview", "spec": spec});
        let answer = self.review(&request).await?;
        let status = answer.get("status").cloned().unwrap_or(Value::Null);
        if status.get("authenticated").and_then(Value::as_bool) != Some(true) {
            return match status.get("error").and_then(Value::as_str) {
                Some(e) if !e.is_empty() => Err(AuthError::Token(e.to_owned())),
                _ => Ok(None),
            };
        }
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        };
        let mut answered = strings(status.get("audiences"));
        if answered.is_empty() {
            answered.clone_from(&self.implicit_audiences);
        }
        let common: Vec<String> = if audiences.is_empty() {
            answered
        } else {
            audiences
                .iter()
                .filter(|a| answered.contains(a))
                .cloned()
                .collect()
        };
        if !audiences.is_empty() && common.is_empty() {
            return Ok(None);
        }
        let user = status.get("user").cloned().unwrap_or(Value::Null);
        let extra = user
            .get("extra")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), strings(Some(v))))
            .collect();
        Ok(Some(TokenResponse {
            user: UserInfo {
                name: user
                    .get("username")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                uid: user
                    .get("uid")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                groups: strings(user.get("groups")),
                extra,
            },
            audiences: common,
        }))
    }
}

#[async_trait]
impl TokenAuthenticator for WebhookTokenAuthenticator {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        if let Some(hit) = self.cache.as_ref().and_then(|c| c.get(token, audiences)) {
            return Ok(hit);
        }
        let answer = self.ask(token, audiences).await?;
        if let Some(cache) = &self.cache {
            cache.insert(token, audiences, answer.clone());
        }
        Ok(answer)
    }
}
