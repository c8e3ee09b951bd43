//! Webhook token authentication (`--authentication-token-webhook-config-file`,
//! upstream's webhook token authenticator): a bearer token is sent in a
//! TokenReview (`--authentication-token-webhook-version`, v1beta1 or v1) to
//! the HTTPS service a kubeconfig-format file names, and its answer —
//! authenticated or not — is cached for `--authentication-token-webhook-cache-ttl`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use apiserver::authentication::cache::TokenCache;
use apiserver::authentication::{AuthError, TokenAuthenticator, TokenResponse, UserInfo};
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};

use super::https::{self, Url};
/// How long one call may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Upstream's retry backoff: 500ms growing by half, five attempts.
const ATTEMPTS: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub enum WebhookConfigError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
}

/// Where and how to call the webhook.
struct Endpoint {
    url: Url,
    tls: Arc<rustls::ClientConfig>,
    /// A bearer token the webhook wants from the API server.
    token: Option<String>,
}

pub struct WebhookTokenAuthenticator {
    endpoint: Endpoint,
    /// `authentication.k8s.io/v1` or `…/v1beta1`.
    api_version: String,
    /// `--api-audiences`: what a review without audiences answered for.
    implicit_audiences: Vec<String>,
    /// Answers, successful or not (`None`), by token and audiences.
    cache: Option<TokenCache<Option<TokenResponse>>>,
}

/// The entry of a named list of a kubeconfig (`clusters`, `users`) chosen
/// by the current context, else the first.
fn entry<'a>(
    config: &'a serde_yaml::Value,
    list: &str,
    context_key: &str,
) -> Option<&'a serde_yaml::Value> {
    let items = config.get(list)?.as_sequence()?;
    let current = config.get("current-context").and_then(|c| c.as_str());
    let wanted = current.and_then(|name| {
        config
            .get("contexts")?
            .as_sequence()?
            .iter()
            .find(|c| c.get("name").and_then(|n| n.as_str()) == Some(name))?
            .get("context")?
            .get(context_key)?
            .as_str()
    });
    let chosen = match wanted {
        Some(name) => items
            .iter()
            .find(|i| i.get("name").and_then(|n| n.as_str()) == Some(name)),
        None => items.first(),
    };
    chosen.and_then(|c| c.get(list.trim_end_matches('s')))
}

/// A PEM field given inline (`<key>-data`, base64) or as a file.
fn pem_field(
    section: Option<&serde_yaml::Value>,
    key: &str,
    base: &Path,
) -> Result<Option<Vec<u8>>, String> {
    let Some(section) = section else {
        return Ok(None);
    };
    if let Some(data) = section.get(format!("{key}-data")).and_then(|v| v.as_str()) {
        return STANDARD
            .decode(data)
            .map(Some)
            .map_err(|e| format!("{key}-data: {e}"));
    }
    match section.get(key).and_then(|v| v.as_str()) {
        Some(file) => std::fs::read(base.join(file))
            .map(Some)
            .map_err(|e| format!("{key} {file}: {e}")),
        None => Ok(None),
    }
}

fn tls_config(
    cluster: &serde_yaml::Value,
    user: Option<&serde_yaml::Value>,
    base: &Path,
) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = pem_field(Some(cluster), "certificate-authority", base)? {
        for cert in rustls_pemfile::certs(&mut ca.as_slice()) {
            let cert = cert.map_err(|e| format!("certificate-authority: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("certificate-authority: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let cert = pem_field(user, "client-certificate", base)?;
    let key = pem_field(user, "client-key", base)?;
    match (cert, key) {
        (Some(cert), Some(key)) => {
            let chain = rustls_pemfile::certs(&mut cert.as_slice())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("client-certificate: {e}"))?;
            let key = rustls_pemfile::private_key(&mut key.as_slice())
                .map_err(|e| format!("client-key: {e}"))?
                .ok_or("client-key: no private key")?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate: {e}"))
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

fn endpoint(config: &serde_yaml::Value, base: &Path) -> Result<Endpoint, String> {
    let cluster = entry(config, "clusters", "cluster").ok_or("no cluster")?;
    let user = entry(config, "users", "user");
    let server = cluster
        .get("server")
        .and_then(|s| s.as_str())
        .ok_or("the cluster has no server")?;
    Ok(Endpoint {
        url: Url::parse(server).map_err(|e| format!("server {e}"))?,
        tls: Arc::new(tls_config(cluster, user, base)?),
        token: user
            .and_then(|u| u.get("token"))
            .and_then(|t| t.as_str())
            .map(str::to_owned),
    })
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
        let text = std::fs::read_to_string(path).map_err(|source| WebhookConfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        let config: serde_yaml::Value =
            serde_yaml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let api_version = match version {
            "v1" | "v1beta1" => format!("authentication.k8s.io/{version}"),
            other => {
                return Err(invalid(format!(
                    "unsupported authentication webhook version {other:?}, supported versions are \"v1\", \"v1beta1\""
                )))
            }
        };
        Ok(WebhookTokenAuthenticator {
            endpoint: endpoint(&config, base).map_err(invalid)?,
            api_version,
            implicit_audiences,
            cache: (!cache_ttl.is_zero()).then(|| TokenCache::new(cache_ttl)),
        })
    }

    /// Posts the review, retrying failed calls with upstream's backoff.
    async fn review(&self, review: &Value) -> Result<Value, AuthError> {
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(backoff).await;
                backoff = backoff.mul_f64(1.5);
            }
            let e = &self.endpoint;
            let call = https::call(&e.tls, &e.url, Some(review), e.token.as_deref());
            match tokio::time::timeout(TIMEOUT, call).await {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(e)) => last = e,
                Err(_) => last = "context deadline exceeded".into(),
            }
        }
        Err(AuthError::Token(format!(
            "Post \"{}\": {last}",
            self.endpoint.url.text
        )))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_context_picks_cluster_and_user() {
        let config: serde_yaml::Value = serde_yaml::from_str(
            "clusters:\n- name: a\n  cluster: {server: 'https://a:1/x'}\n- name: b\n  cluster: {server: 'https://b:2/y'}\n\
             users:\n- name: u\n  user: {token: t}\n\
             contexts:\n- name: c\n  context: {cluster: b, user: u}\n\
             current-context: c\n",
        )
        .unwrap();
        let e = endpoint(&config, Path::new(".")).unwrap();
        assert_eq!(
            (e.url.host.as_str(), e.url.port, e.url.path.as_str()),
            ("b", 2, "/y")
        );
        assert_eq!(e.token.as_deref(), Some("t"));
        let plain: serde_yaml::Value =
            serde_yaml::from_str("clusters:\n- name: a\n  cluster: {server: 'http://a'}\n")
                .unwrap();
        assert!(endpoint(&plain, Path::new(".")).is_err());
    }
}
