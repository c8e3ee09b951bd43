//! One JSON request over HTTPS (HTTP/1.1, rustls), for what asks other
//! services: kubeconfig-described webhooks and OpenID Connect providers.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Upstream's limit on a response body.
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// An HTTPS URL split for connecting.
pub struct Url {
    pub host: String,
    pub port: u16,
    /// Path and query.
    pub path: String,
    /// As given, for messages.
    pub text: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        let uri: http::Uri = text.parse().map_err(|e| format!("{text:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!("{text:?}: only https is supported"));
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("{text:?} has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        Ok(Url {
            host,
            port: uri.port_u16().unwrap_or(443),
            path: uri
                .path_and_query()
                .map_or("/".to_owned(), ToString::to_string),
            text: text.to_owned(),
        })
    }
}

/// A rustls client configuration trusting `ca_pem` (PEM certificates).
pub fn client_config(ca_pem: Option<&[u8]>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.unwrap_or_default()) {
        let cert = cert.map_err(|e| e.to_string())?;
        roots.add(cert).map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Sends a GET (no body) or a POST of `body`; returns the JSON answer of
/// a 2xx response.
pub async fn call(
    tls: &Arc<rustls::ClientConfig>,
    url: &Url,
    body: Option<&Value>,
    bearer: Option<&str>,
) -> Result<Value, String> {
    let server_name =
        rustls::pki_types::ServerName::try_from(url.host.clone()).map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect((url.host.as_str(), url.port))
        .await
        .map_err(|e| e.to_string())?;
    let stream = TlsConnector::from(tls.clone())
        .connect(server_name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let method = if body.is_some() {
        http::Method::POST
    } else {
        http::Method::GET
    };
    let mut request = http::Request::builder()
        .method(method)
        .uri(&url.path)
        .header(http::header::HOST, &url.host)
        .header(http::header::ACCEPT, "application/json");
    if body.is_some() {
        request = request.header(http::header::CONTENT_TYPE, "application/json");
    }
    if let Some(token) = bearer {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let payload = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    let request = request
        .body(Full::new(payload))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if !status.is_success() {
        return Err(format!(
            "the server responded with status {}",
            status.as_u16()
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}
