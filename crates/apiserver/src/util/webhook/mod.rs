//! Calling a webhook described by a kubeconfig-format file (upstream's
//! `k8s.io/apiserver/pkg/util/webhook`, `GenericWebhook`): the current
//! context's cluster gives the HTTPS URL and CA, its user the client
//! certificate or bearer token. The token authenticator, the authorization
//! webhook and kube-apiserver's ImagePolicyWebhook admission plugin post
//! their reviews through [`Endpoint::post`], which retries with upstream's
//! backoff.

pub mod https;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use self::https::Url;

/// Upstream's retry backoff: 500ms growing by half, five attempts.
const ATTEMPTS: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
}

/// Where and how to call a webhook.
pub struct Endpoint {
    pub url: Url,
    tls: Arc<rustls::ClientConfig>,
    /// A bearer token the webhook wants from the API server.
    pub token: Option<String>,
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

impl Endpoint {
    /// Reads a kubeconfig-format file (blocking file I/O); relative file
    /// names in it are relative to its directory.
    pub fn load(path: &Path) -> Result<Endpoint, KubeconfigError> {
        let invalid = |problem: String| KubeconfigError::Invalid {
            path: path.to_owned(),
            problem,
        };
        let text = std::fs::read_to_string(path).map_err(|source| KubeconfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        let config: serde_yaml::Value =
            serde_yaml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Endpoint::from_config(&config, base).map_err(invalid)
    }

    /// The endpoint of a parsed kubeconfig.
    pub fn from_config(config: &serde_yaml::Value, base: &Path) -> Result<Endpoint, String> {
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

    /// Posts `body`, each call limited to `timeout`, retrying transient
    /// failures with upstream's backoff; the error names the URL like Go's
    /// client.
    pub async fn post(&self, body: &Value, timeout: Duration) -> Result<Value, String> {
        self.post_with_backoff(body, timeout, FIRST_BACKOFF).await
    }

    /// [`Endpoint::post`] with the first retry after `first_backoff`
    /// (configurable for the ImagePolicyWebhook admission plugin).
    pub async fn post_with_backoff(
        &self,
        body: &Value,
        timeout: Duration,
        first_backoff: Duration,
    ) -> Result<Value, String> {
        let mut backoff = first_backoff;
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(backoff).await;
                backoff = backoff.mul_f64(1.5);
            }
            let call = https::call(&self.tls, &self.url, Some(body), self.token.as_deref());
            match tokio::time::timeout(timeout, call).await {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(e)) => last = e,
                Err(_) => last = "context deadline exceeded".into(),
            }
            if !transient(&last) {
                break;
            }
        }
        Err(format!("Post \"{}\": {last}", self.url.text))
    }
}

/// Whether a failed call is worth retrying (upstream's
/// `DefaultShouldRetry`): a reset connection, or the service answering
/// 500, 504 or 429.
fn transient(error: &str) -> bool {
    const RETRIED_STATUSES: [&str; 3] = ["500", "504", "429"];
    error.contains("Connection reset")
        || error
            .strip_prefix("the server responded with status ")
            .is_some_and(|code| RETRIED_STATUSES.contains(&code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_failures_are_retried() {
        assert!(transient("the server responded with status 500"));
        assert!(transient("the server responded with status 429"));
        assert!(transient("Connection reset by peer (os error 104)"));
        assert!(!transient("the server responded with status 403"));
        assert!(!transient("Connection refused (os error 111)"));
        assert!(!transient("context deadline exceeded"));
    }

    #[test]
    fn the_current_context_picks_cluster_and_user() {
        let config: serde_yaml::Value = serde_yaml::from_str(
            "clusters:\n- name: a\n  cluster: {server: 'https://a:1/x'}\n- name: b\n  cluster: {server: 'https://b:2/y'}\n\
             users:\n- name: u\n  user: {token: t}\n\
             contexts:\n- name: c\n  context: {cluster: b, user: u}\n\
             current-context: c\n",
        )
        .unwrap();
        let e = Endpoint::from_config(&config, Path::new(".")).unwrap();
        assert_eq!(
            (e.url.host.as_str(), e.url.port, e.url.path.as_str()),
            ("b", 2, "/y")
        );
        assert_eq!(e.token.as_deref(), Some("t"));
        let plain: serde_yaml::Value =
            serde_yaml::from_str("clusters:\n- name: a\n  cluster: {server: 'http://a'}\n")
                .unwrap();
        assert!(Endpoint::from_config(&plain, Path::new(".")).is_err());
    }
}
