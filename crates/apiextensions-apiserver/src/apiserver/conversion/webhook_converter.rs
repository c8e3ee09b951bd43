//! Conversion webhooks (upstream's `conversion/webhook_converter.go`): a
//! `ConversionReview` (apiextensions.k8s.io/v1) POSTed over HTTPS to the
//! CRD's `clientConfig` (url, or service host `<name>.<namespace>.svc`)
//! trusting its `caBundle`; the converted objects are checked (count,
//! apiVersion, kind) and keep their original metadata apart from labels and
//! annotations, as upstream restores it. The call runs in upstream's
//! `Call conversion webhook` span (`custom-resource-definition`,
//! `desired-api-version`, `object-count`, `UID`; `Request completed`
//! event) with otelhttp's client span `HTTP POST` inside it, whose trace
//! context the webhook gets.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use component_base::tracing::{self as tracing_ctx, Attribute, ClientSpan};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::WebhookClientConfig;
use serde_json::{json, Value};
use tokio::net::TcpStream;

/// Upstream's conversion webhook timeout.
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("invalid client config: {0}")]
    Config(String),
    #[error("{0}")]
    Call(String),
    #[error("conversion webhook response was invalid: {0}")]
    Response(String),
}

/// Where and how to call one CRD's conversion webhook.
pub struct WebhookConverter {
    /// `<group>, Kind=<kind>` for messages.
    kind: String,
    /// The CRD's name, for the span.
    crd_name: String,
    host: String,
    port: u16,
    path: String,
    tls: tokio_rustls::TlsConnector,
}

fn call_error(e: impl std::fmt::Display) -> WebhookError {
    WebhookError::Call(e.to_string())
}

/// Splits `https://host[:port][/path]`.
fn parse_url(url: &str) -> Result<(String, u16, String), WebhookError> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| WebhookError::Config(format!("url {url:?} is not https")))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            let port = p
                .parse()
                .map_err(|_| WebhookError::Config(format!("invalid port in {url:?}")))?;
            (h, port)
        }
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_owned(), port, path))
}

impl WebhookConverter {
    pub fn new(
        config: &WebhookClientConfig,
        kind: String,
        crd_name: String,
    ) -> Result<Self, WebhookError> {
        let (host, port, path) = match (&config.url, &config.service) {
            (Some(url), _) => parse_url(url)?,
            (None, Some(svc)) => (
                format!("{}.{}.svc", svc.name, svc.namespace),
                u16::try_from(svc.port.unwrap_or(443))
                    .map_err(|_| WebhookError::Config("invalid service port".into()))?,
                svc.path.clone().unwrap_or_else(|| "/".into()),
            ),
            (None, None) => {
                return Err(WebhookError::Config(
                    "neither url nor service is set".into(),
                ))
            }
        };
        let mut roots = rustls::RootCertStore::empty();
        if let Some(ca) = &config.ca_bundle {
            for cert in rustls_pemfile::certs(&mut ca.0.as_slice()) {
                let cert = cert.map_err(|e| WebhookError::Config(format!("caBundle: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| WebhookError::Config(format!("caBundle: {e}")))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| WebhookError::Config(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(WebhookConverter {
            kind,
            crd_name,
            host,
            port,
            path,
            tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
        })
    }

    /// Converts `objects` to `api_version` through the webhook.
    pub async fn convert(
        &self,
        objects: Vec<Value>,
        api_version: &str,
    ) -> Result<Vec<Value>, String> {
        let failed = |e: WebhookError| {
            format!(
                "conversion webhook for {}, Kind={} failed: {e}",
                api_version, self.kind
            )
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objects},
        });
        let attributes = || {
            vec![
                Attribute::new("custom-resource-definition", self.crd_name.clone()),
                Attribute::new("desired-api-version", api_version.to_owned()),
                Attribute::new("object-count", i64::try_from(objects.len()).unwrap_or(0)),
                Attribute::new("UID", uid.clone()),
            ]
        };
        let calling = async {
            let reply = tokio::time::timeout(TIMEOUT, self.post(&review))
                .await
                .map_err(|_| call_error("timeout awaiting response headers"))??;
            tracing_ctx::add_event("Request completed", Vec::new());
            Ok(reply)
        };
        let reply = tracing_ctx::in_span("Call conversion webhook", attributes, calling)
            .await
            .map_err(failed)?;
        converted(&objects, reply, &uid, api_version).map_err(failed)
    }

    async fn post(&self, review: &Value) -> Result<Value, WebhookError> {
        let url = format!("https://{}:{}{}", self.host, self.port, self.path);
        let post = |e: &dyn std::fmt::Display| call_error(format!("Post \"{url}\": {e}"));
        let body = Bytes::from(serde_json::to_vec(review).map_err(|e| post(&e))?);
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| post(&e))?;
        let name =
            rustls::pki_types::ServerName::try_from(self.host.clone()).map_err(|e| post(&e))?;
        let stream = self.tls.connect(name, tcp).await.map_err(|e| post(&e))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| post(&e))?;
        tokio::spawn(conn);
        let host = if self.port == 443 {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        };
        let mut req = http::Request::post(&self.path)
            .header(http::header::HOST, host)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(body))
            .map_err(|e| post(&e))?;
        // otelhttp's client span, whose trace context the call carries.
        let uri: http::Uri = url.parse().map_err(|e| post(&e))?;
        let span = ClientSpan::start(&http::Method::POST, &uri, req.headers_mut());
        let resp = match sender.send_request(req).await {
            Ok(resp) => resp,
            Err(e) => {
                span.failed(&e);
                return Err(post(&e));
            }
        };
        let status = resp.status();
        span.response(status);
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| post(&e))?
            .to_bytes();
        if !status.is_success() {
            return Err(call_error(format!(
                "the server responded with status {}: {}",
                status.as_u16(),
                String::from_utf8_lossy(&bytes)
            )));
        }
        serde_json::from_slice(&bytes).map_err(|e| WebhookError::Response(e.to_string()))
    }
}

/// Checks a ConversionReview reply and restores metadata.
fn converted(
    originals: &[Value],
    reply: Value,
    uid: &str,
    api_version: &str,
) -> Result<Vec<Value>, WebhookError> {
    let bad = |m: String| WebhookError::Response(m);
    let response = reply
        .get("response")
        .ok_or_else(|| bad("no response provided".into()))?;
    if response.get("uid").and_then(Value::as_str) != Some(uid) {
        return Err(bad(format!(
            "expected response.uid={uid}, got {}",
            response.get("uid").unwrap_or(&Value::Null)
        )));
    }
    let result = response.get("result");
    if result.and_then(|r| r.get("status")).and_then(Value::as_str) != Some("Success") {
        let message = result
            .and_then(|r| r.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(WebhookError::Call(format!(
            "conversion request failed: {message}"
        )));
    }
    let objects = response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if objects.len() != originals.len() {
        return Err(bad(format!(
            "expected {} converted objects, got {}",
            originals.len(),
            objects.len()
        )));
    }
    originals
        .iter()
        .zip(objects)
        .enumerate()
        .map(|(i, (original, mut obj))| {
            if obj.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
                return Err(bad(format!(
                    "invalid apiVersion {} in converted object {i}, expected {api_version}",
                    obj.get("apiVersion").unwrap_or(&Value::Null)
                )));
            }
            if obj.get("kind") != original.get("kind") {
                return Err(bad(format!("converted object {i} changed its kind")));
            }
            restore_metadata(original, &mut obj);
            Ok(obj)
        })
        .collect()
}

/// Keeps the original metadata except labels and annotations.
fn restore_metadata(original: &Value, converted: &mut Value) {
    let mut meta = original
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    for field in ["labels", "annotations"] {
        match converted.pointer(&format!("/metadata/{field}")) {
            Some(v) => meta[field] = v.clone(),
            None => {
                if let Some(m) = meta.as_object_mut() {
                    m.remove(field);
                }
            }
        }
    }
    converted["metadata"] = meta;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path() {
        let p = |u| parse_url(u).map_err(|e| e.to_string());
        assert_eq!(
            p("https://127.0.0.1:8443/convert").ok(),
            Some(("127.0.0.1".into(), 8443, "/convert".into()))
        );
        assert_eq!(
            p("https://example.com").ok(),
            Some(("example.com".into(), 443, "/".into()))
        );
        assert_eq!(
            p("https://[::1]:9443/x").ok(),
            Some(("::1".into(), 9443, "/x".into()))
        );
        assert!(p("http://example.com").is_err());
    }

    #[test]
    fn replies_are_checked_and_metadata_restored() {
        let original = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "a", "uid": "u1", "labels": {"x": "1"}}});
        let good = json!({"response": {"uid": "r1", "result": {"status": "Success"},
            "convertedObjects": [{"apiVersion": "example.com/v2", "kind": "Widget",
                "metadata": {"name": "changed", "labels": {"y": "2"}}, "spec": {"n": 1}}]}});
        let out = converted(
            std::slice::from_ref(&original),
            good,
            "r1",
            "example.com/v2",
        )
        .map_err(|e| e.to_string());
        let out = out.unwrap_or_default();
        assert_eq!(
            out[0]["metadata"],
            json!({"name": "a", "uid": "u1", "labels": {"y": "2"}})
        );
        assert_eq!(out[0]["spec"]["n"], 1);
        let failed =
            json!({"response": {"uid": "r1", "result": {"status": "Failure", "message": "nope"}}});
        let err = converted(
            std::slice::from_ref(&original),
            failed,
            "r1",
            "example.com/v2",
        );
        assert!(err.is_err_and(|e| e.to_string().contains("nope")));
        let wrong_version = json!({"response": {"uid": "r1", "result": {"status": "Success"},
            "convertedObjects": [{"apiVersion": "example.com/v1", "kind": "Widget"}]}});
        assert!(converted(&[original], wrong_version, "r1", "example.com/v2").is_err());
    }
}
