//! The webhook backend (`--audit-webhook-config-file`, upstream's
//! `plugin/pkg/audit/webhook`): events are POSTed as an audit.k8s.io/v1
//! `EventList` to the server named by a kubeconfig file (its cluster's
//! `server`, CA and the user's client certificate or token). In batch mode
//! (the default) a background task sends up to `max_batch_size` events at
//! once, at least every `max_batch_wait`, throttled to the configured rate,
//! and drops events when its buffer is full; failed sends are retried with
//! backoff starting at `--audit-webhook-initial-backoff`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use bytes::Bytes;
use http::{Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::event::Event;
use super::metrics;
use super::truncate::{self, Truncation};
use super::{Backend, BatchConfig, Mode};

/// How many times a batch is sent before it is given up.
const ATTEMPTS: u32 = 3;
/// How long one POST may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the webhook cannot be configured or reached.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("reading {0}: {1}")]
    Read(String, std::io::Error),
    #[error("invalid webhook kubeconfig: {0}")]
    Config(String),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("sending audit events: {0}")]
    Send(String),
}

#[derive(Debug, Default, Deserialize)]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    users: Vec<Named<User>>,
    #[serde(default)]
    contexts: Vec<Named<Context>>,
    #[serde(default, rename = "current-context")]
    current_context: String,
}

#[derive(Debug, Default, Deserialize)]
struct Named<T> {
    #[serde(default)]
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    #[serde(default)]
    server: String,
    #[serde(default)]
    certificate_authority: String,
    #[serde(default)]
    certificate_authority_data: String,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct User {
    #[serde(default)]
    client_certificate: String,
    #[serde(default)]
    client_certificate_data: String,
    #[serde(default)]
    client_key: String,
    #[serde(default)]
    client_key_data: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    token_file: String,
}

#[derive(Debug, Default, Deserialize)]
struct Context {
    #[serde(default)]
    cluster: String,
    #[serde(default)]
    user: String,
}

/// Where events are posted and how.
struct Client {
    uri: Uri,
    tls: Option<tokio_rustls::TlsConnector>,
    token: Option<String>,
}

fn read_pem(path: &str, data: &str, base: &Path) -> Result<Option<Vec<u8>>, WebhookError> {
    if !data.is_empty() {
        return base64::engine::general_purpose::STANDARD
            .decode(data)
            .map(Some)
            .map_err(|e| WebhookError::Config(e.to_string()));
    }
    if path.is_empty() {
        return Ok(None);
    }
    let full = base.join(path);
    std::fs::read(&full)
        .map(Some)
        .map_err(|e| WebhookError::Read(full.display().to_string(), e))
}

fn pick<'a, T>(list: &'a [Named<T>], name: &str) -> Option<&'a T> {
    list.iter()
        .find(|n| n.name == name)
        .or_else(|| list.first())
        .map(|n| &n.value)
}

impl Client {
    /// Reads the kubeconfig (blocking file reads; called at startup).
    fn from_kubeconfig(path: &Path) -> Result<Client, WebhookError> {
        let text =
            std::fs::read(path).map_err(|e| WebhookError::Read(path.display().to_string(), e))?;
        let config: Kubeconfig =
            serde_yaml::from_slice(&text).map_err(|e| WebhookError::Config(e.to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let context = pick(&config.contexts, &config.current_context);
        let cluster = pick(&config.clusters, context.map_or("", |c| c.cluster.as_str()))
            .ok_or_else(|| WebhookError::Config("no cluster".into()))?;
        let default_user = User::default();
        let user =
            pick(&config.users, context.map_or("", |c| c.user.as_str())).unwrap_or(&default_user);
        let uri: Uri = cluster
            .server
            .parse()
            .map_err(|e| WebhookError::Config(format!("server {:?}: {e}", cluster.server)))?;
        let tls = match uri.scheme_str() {
            Some("https") => Some(tls_connector(cluster, user, base)?),
            Some("http") => None,
            _ => {
                return Err(WebhookError::Config(format!(
                    "server {:?}: not an http(s) URL",
                    cluster.server
                )))
            }
        };
        let token = if !user.token.is_empty() {
            Some(user.token.clone())
        } else if !user.token_file.is_empty() {
            let full = base.join(&user.token_file);
            let t = std::fs::read_to_string(&full)
                .map_err(|e| WebhookError::Read(full.display().to_string(), e))?;
            Some(t.trim().to_owned())
        } else {
            None
        };
        Ok(Client { uri, tls, token })
    }

    async fn post(&self, body: Bytes) -> Result<(), WebhookError> {
        let host = self.uri.host().unwrap_or_default().to_owned();
        let https = self.tls.is_some();
        let port = self.uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let send = |e: &dyn std::fmt::Display| WebhookError::Send(e.to_string());
        let tcp = TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| send(&e))?;
        let mut req = Request::post(self.uri.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::HOST, host.as_str());
        if let Some(token) = &self.token {
            req = req.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let req = req.body(Full::new(body)).map_err(|e| send(&e))?;
        match &self.tls {
            Some(tls) => {
                let name =
                    rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| send(&e))?;
                let stream = tls.connect(name, tcp).await.map_err(|e| send(&e))?;
                exchange(stream, req).await
            }
            None => exchange(tcp, req).await,
        }
    }
}

async fn exchange<S>(stream: S, req: Request<Full<Bytes>>) -> Result<(), WebhookError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let send = |e: &dyn std::fmt::Display| WebhookError::Send(e.to_string());
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| send(&e))?;
    tokio::spawn(conn);
    let resp = sender.send_request(req).await.map_err(|e| send(&e))?;
    let status = resp.status();
    let body = resp.into_body().collect().await.map_err(|e| send(&e))?;
    if status.is_success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&body.to_bytes()).into_owned();
    Err(WebhookError::Send(format!(
        "the server responded {status}: {text}"
    )))
}

fn tls_connector(
    cluster: &Cluster,
    user: &User,
    base: &Path,
) -> Result<tokio_rustls::TlsConnector, WebhookError> {
    let tls = |e: &dyn std::fmt::Display| WebhookError::Tls(e.to_string());
    if cluster.insecure_skip_tls_verify {
        return Err(WebhookError::Config(
            "insecure-skip-tls-verify is not supported; give certificate-authority".into(),
        ));
    }
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = read_pem(
        &cluster.certificate_authority,
        &cluster.certificate_authority_data,
        base,
    )? {
        for cert in rustls_pemfile::certs(&mut ca.as_slice()) {
            roots.add(cert.map_err(|e| tls(&e))?).map_err(|e| tls(&e))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(&e))?
        .with_root_certificates(roots);
    let cert = read_pem(
        &user.client_certificate,
        &user.client_certificate_data,
        base,
    )?;
    let key = read_pem(&user.client_key, &user.client_key_data, base)?;
    let config = match (cert, key) {
        (Some(cert), Some(key)) => {
            let chain = rustls_pemfile::certs(&mut cert.as_slice())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| tls(&e))?;
            let key = rustls_pemfile::private_key(&mut key.as_slice())
                .map_err(|e| tls(&e))?
                .ok_or_else(|| WebhookError::Tls("no private key in client-key".into()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| tls(&e))?
        }
        _ => builder.with_no_client_auth(),
    };
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// An `EventList` of already encoded events.
fn event_list(items: &[Vec<u8>]) -> Bytes {
    let head = br#"{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":["#;
    let len = head.len() + items.iter().map(|i| i.len() + 1).sum::<usize>() + 2;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(head);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.extend_from_slice(b"]}");
    Bytes::from(out)
}

/// Sends one batch, retrying with doubling backoff.
async fn send_with_retry(client: &Client, body: Bytes, initial_backoff: Duration) -> bool {
    let mut backoff = initial_backoff;
    for attempt in 1..=ATTEMPTS {
        match tokio::time::timeout(REQUEST_TIMEOUT, client.post(body.clone())).await {
            Ok(Ok(())) => return true,
            Ok(Err(e)) => tracing::warn!(error = %e, attempt, "audit webhook failed"),
            Err(_) => tracing::warn!(attempt, "audit webhook timed out"),
        }
        if attempt < ATTEMPTS {
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
        }
    }
    false
}

/// `--audit-webhook-batch-throttle-qps` and `-burst`: batches are sent at
/// most `qps` per second, with up to `burst` at once after a quiet spell.
struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: tokio::time::Instant,
}

impl TokenBucket {
    async fn take(&mut self) {
        let now = tokio::time::Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.qps;
        self.tokens = (self.tokens + refill).min(self.burst);
        self.last = now;
        if self.tokens < 1.0 {
            let wait = Duration::from_secs_f64((1.0 - self.tokens) / self.qps);
            tokio::time::sleep(wait).await;
            self.tokens = 1.0;
            self.last = tokio::time::Instant::now();
        }
        self.tokens -= 1.0;
    }
}

/// The webhook backend; see the module doc.
pub struct WebhookBackend {
    client: Arc<Client>,
    mode: Mode,
    initial_backoff: Duration,
    truncate: Option<Truncation>,
    batches: Option<mpsc::Sender<Vec<u8>>>,
}

impl WebhookBackend {
    /// Reads the kubeconfig and, in batch mode, starts the sending task.
    pub fn start(
        kubeconfig: &Path,
        mode: Mode,
        initial_backoff: Duration,
        truncate: Option<Truncation>,
    ) -> Result<Self, WebhookError> {
        let client = Arc::new(Client::from_kubeconfig(kubeconfig)?);
        let batches = match mode {
            Mode::Batch(config) => {
                let (tx, rx) = mpsc::channel(config.buffer_size.max(1));
                let max_bytes = truncate.map_or(usize::MAX, |t| t.max_batch_size);
                let sender = Sender {
                    client: client.clone(),
                    backoff: initial_backoff,
                    max_bytes,
                };
                tokio::spawn(batch_loop(rx, sender, config));
                Some(tx)
            }
            _ => None,
        };
        Ok(WebhookBackend {
            client,
            mode,
            initial_backoff,
            truncate,
            batches,
        })
    }
}

/// Where the batch task sends its batches.
struct Sender {
    client: Arc<Client>,
    backoff: Duration,
    /// `--audit-webhook-truncate-max-batch-size` when truncating.
    max_bytes: usize,
}

async fn batch_loop(mut rx: mpsc::Receiver<Vec<u8>>, sender: Sender, config: BatchConfig) {
    let max = config.max_batch_size.max(1);
    let mut bucket = config
        .throttle
        .filter(|(qps, _)| *qps > 0.0)
        .map(|(qps, burst)| TokenBucket {
            qps: f64::from(qps),
            burst: burst.max(1) as f64,
            tokens: burst.max(1) as f64,
            last: tokio::time::Instant::now(),
        });
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + config.max_batch_wait;
        while batch.len() < max {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(ev)) => batch.push(ev),
                Ok(None) | Err(_) => break,
            }
        }
        if let Some(bucket) = bucket.as_mut() {
            bucket.take().await;
        }
        for run in truncate::split(&batch, sender.max_bytes) {
            if !send_with_retry(&sender.client, event_list(run), sender.backoff).await {
                metrics::global().plugin_error("webhook", run.len() as u64);
                tracing::error!(
                    events = run.len(),
                    "audit webhook: batch dropped after retries"
                );
            }
        }
    }
}

#[async_trait]
impl Backend for WebhookBackend {
    async fn process(&self, event: &Event) -> bool {
        let encoded = match truncate::encode(event, self.truncate) {
            Ok(v) => v,
            Err(e) => {
                metrics::global().plugin_error(e.plugin("webhook"), 1);
                tracing::error!(error = %e, "encoding an audit event failed");
                return self.mode.result(false);
            }
        };
        if let Some(tx) = &self.batches {
            if tx.try_send(encoded).is_err() {
                metrics::global().plugin_error("buffered", 1);
                tracing::warn!(audit_id = %event.audit_id, "audit webhook buffer full; event dropped");
                return false;
            }
            return true;
        }
        let ok = send_with_retry(&self.client, event_list(&[encoded]), self.initial_backoff).await;
        if !ok {
            metrics::global().plugin_error("webhook", 1);
        }
        self.mode.result(ok)
    }

    fn name(&self) -> &'static str {
        "webhook"
    }
}

#[cfg(test)]
#[path = "webhook_tests.rs"]
mod tests;
