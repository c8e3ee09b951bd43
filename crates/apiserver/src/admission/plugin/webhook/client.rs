//! Calling a webhook: one HTTPS POST of an AdmissionReview to its URL or
//! service (resolved to the service's ClusterIP), trusting its `caBundle`,
//! within its timeout (upstream's `k8s.io/apiserver/pkg/util/webhook` and
//! the `webhook/config` client manager).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use component_base::tracing::ClientSpan;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::admission::initializer::{text, Stores};

/// Upstream's limit on a webhook response body.
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// Why a webhook could not be called or answered unusably; shown after
/// `failed calling webhook "<name>": ` as upstream's `ErrCallingWebhook`.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("could not get REST client: {0}")]
    Config(String),
    #[error("could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)")]
    NoKnownVersion,
    #[error("failed to call webhook: Post \"{url}\": {message}")]
    Transport { url: String, message: String },
    #[error("failed to call webhook: Post \"{url}\": the server responded with status {code}")]
    Status { url: String, code: u16 },
    #[error("failed to call webhook: Post \"{url}\": context deadline exceeded")]
    Timeout { url: String },
    #[error("received invalid webhook response: {0}")]
    Response(String),
    #[error("received undecodable patch in webhook response: {0}")]
    UndecodablePatch(String),
    #[error("unsupported patch type {0:?}")]
    UnsupportedPatchType(String),
}

impl CallError {
    /// The HTTP code of the failure as upstream's webhook metrics record
    /// it: the webhook's own answer when it sent an error status, else the
    /// code of the status error upstream's dispatchers build (mutating and
    /// validating ones differ for an unreachable webhook).
    pub fn code(&self, mutating: bool) -> u16 {
        match self {
            CallError::Status { code, .. } => *code,
            CallError::Config(_) if mutating => 500,
            CallError::Transport { .. } | CallError::Timeout { .. } if mutating => 503,
            CallError::Response(_) | CallError::UndecodablePatch(_) => 503,
            CallError::Config(_)
            | CallError::NoKnownVersion
            | CallError::Transport { .. }
            | CallError::Timeout { .. }
            | CallError::UnsupportedPatchType(_) => 400,
        }
    }
}

/// Where to send the request.
struct Target {
    /// Host to connect to and the port.
    connect: (String, u16),
    /// Name the server certificate must carry.
    server_name: String,
    /// Path and query.
    path: String,
    /// For messages: the URL as upstream prints it.
    url: String,
}

async fn target(config: &Value, stores: &Stores) -> Result<Target, CallError> {
    if let Some(url) = text(config, "/url") {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| CallError::Config(format!("invalid webhook url {url:?}: {e}")))?;
        let host = uri
            .host()
            .ok_or_else(|| CallError::Config(format!("webhook url {url:?} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(443);
        let path = uri
            .path_and_query()
            .map_or("/".to_owned(), ToString::to_string);
        return Ok(Target {
            connect: (host.clone(), port),
            server_name: host,
            path,
            url: url.to_owned(),
        });
    }
    let svc = config
        .get("service")
        .ok_or_else(|| CallError::Config("webhook has neither url nor service".into()))?;
    let name = text(svc, "/name").unwrap_or_default();
    let namespace = text(svc, "/namespace").unwrap_or_default();
    let port = svc
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(443);
    let path = text(svc, "/path").unwrap_or("/").to_owned();
    let host = format!("{name}.{namespace}.svc");
    let url = format!("https://{host}:{port}{path}");
    let service = stores
        .get("", "services", Some(namespace), name)
        .await
        .map_err(|e| CallError::Transport {
            url: url.clone(),
            message: e.message,
        })?
        .ok_or_else(|| CallError::Transport {
            url: url.clone(),
            message: format!("service \"{name}\" not found"),
        })?;
    let ip = text(&service, "/spec/clusterIP")
        .filter(|ip| !ip.is_empty() && *ip != "None")
        .ok_or_else(|| CallError::Transport {
            url: url.clone(),
            message: format!("service {namespace}/{name} has no cluster IP"),
        })?;
    Ok(Target {
        connect: (ip.to_owned(), port),
        server_name: host,
        path,
        url,
    })
}

fn tls_config(config: &Value) -> Result<rustls::ClientConfig, CallError> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(bundle) = text(config, "/caBundle") {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(bundle)
            .map_err(|e| CallError::Config(format!("invalid caBundle: {e}")))?;
        for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
            let cert = cert.map_err(|e| CallError::Config(format!("invalid caBundle: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| CallError::Config(format!("invalid caBundle: {e}")))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| CallError::Config(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Posts `review` and returns the AdmissionReview the webhook answered,
/// in a client span (upstream's webhook transport is wrapped with
/// `tracing.WrapperFor`).
pub async fn call(
    client_config: &Value,
    stores: &Stores,
    review: &Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    let mut target = target(client_config, stores).await?;
    // Upstream tells the webhook how long it has.
    let sep = if target.path.contains('?') { '&' } else { '?' };
    let param = format!("{sep}timeout={}s", timeout.as_secs());
    target.path.push_str(&param);
    target.url.push_str(&param);
    let url = target.url.clone();
    let mut trace_headers = http::HeaderMap::new();
    let span = url
        .parse::<http::Uri>()
        .ok()
        .map(|uri| ClientSpan::start(&http::Method::POST, &uri, &mut trace_headers));
    let posting = post(
        client_config,
        &target,
        review,
        (trace_headers, span.as_ref()),
    );
    let result = match tokio::time::timeout(timeout, posting).await {
        Ok(result) => result,
        Err(_) => Err(CallError::Timeout { url }),
    };
    if let (Some(span), Err(e @ (CallError::Transport { .. } | CallError::Timeout { .. }))) =
        (&span, &result)
    {
        span.failed(e);
    }
    result
}

/// The POST itself; `trace` is the headers carrying the call's trace
/// context and the span that records the answer's status.
async fn post(
    client_config: &Value,
    target: &Target,
    review: &Value,
    trace: (http::HeaderMap, Option<&ClientSpan>),
) -> Result<Value, CallError> {
    let transport = |e: &dyn std::fmt::Display| CallError::Transport {
        url: target.url.clone(),
        message: e.to_string(),
    };
    let tls = TlsConnector::from(Arc::new(tls_config(client_config)?));
    let server_name = rustls::pki_types::ServerName::try_from(target.server_name.clone())
        .map_err(|e| CallError::Config(e.to_string()))?;
    let tcp = TcpStream::connect((target.connect.0.as_str(), target.connect.1))
        .await
        .map_err(|e| transport(&e))?;
    let stream = tls
        .connect(server_name, tcp)
        .await
        .map_err(|e| transport(&e))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| transport(&e))?;
    tokio::spawn(conn);
    let body = serde_json::to_vec(review).map_err(|e| CallError::Config(e.to_string()))?;
    let mut request = http::Request::post(&target.path)
        .header(http::header::HOST, &target.server_name)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| CallError::Config(e.to_string()))?;
    // The call's trace context (W3C `traceparent`).
    request.headers_mut().extend(trace.0);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| transport(&e))?;
    let status = response.status();
    if let Some(span) = trace.1 {
        span.response(status);
    }
    let limited = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE_BYTES);
    let bytes = limited
        .collect()
        .await
        .map_err(|e| transport(&e))?
        .to_bytes();
    if !status.is_success() {
        return Err(CallError::Status {
            url: target.url.clone(),
            code: status.as_u16(),
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| CallError::Response(e.to_string()))
}
