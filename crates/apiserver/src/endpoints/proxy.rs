//! An upgrade-aware HTTP(S) proxy for connect subresources (upstream's
//! `proxy.UpgradeAwareHandler`): a plain request is forwarded and its
//! response body streamed back as it arrives; a request asking for a
//! protocol upgrade (SPDY/3.1, websocket) is forwarded with its `Upgrade`
//! header and, once the backend answers 101, bytes are relayed both ways
//! between the two upgraded connections.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use axum::body::Body;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::request::Parts;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Why a backend could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("error dialing backend: {0}")]
    Dial(#[source] std::io::Error),
    #[error("error dialing backend: dial timeout")]
    DialTimeout,
    #[error("error dialing backend: invalid server name {0:?}")]
    ServerName(String),
    #[error("error trying to reach backend: {0}")]
    Http(#[from] hyper::Error),
    #[error("invalid backend request: {0}")]
    Request(#[from] http::Error),
    #[error("unable to upgrade connection: the client connection cannot be upgraded")]
    NotUpgradable,
}

impl From<ProxyError> for ApiError {
    fn from(e: ProxyError) -> Self {
        ApiError::internal_error(e)
    }
}

/// Where a request is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub https: bool,
    /// A DNS name or an IP address (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// Begins with `/`.
    pub path: String,
    /// The raw query, without `?`.
    pub query: Option<String>,
}

impl Location {
    /// `host:port` as written in a URL or a Host header.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The path and query of the request line.
    pub fn path_and_query(&self) -> String {
        match self.query.as_deref() {
            Some(q) if !q.is_empty() => format!("{}?{q}", self.path),
            _ => self.path.clone(),
        }
    }

    /// The full URL, for messages.
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority(), self.path_and_query())
    }
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// How connections to backends are made: the TLS settings for `https`
/// locations and a bound on dialing (TCP and TLS handshake).
#[derive(Clone)]
pub struct Transport {
    tls: Arc<rustls::ClientConfig>,
    dial_timeout: Duration,
    /// The name the server certificate is checked against, when it is not
    /// the host dialled (an aggregated API server's `<service>.<namespace>.svc`).
    server_name: Option<String>,
}

impl Transport {
    pub fn new(tls: rustls::ClientConfig, dial_timeout: Duration) -> Self {
        Transport {
            tls: Arc::new(tls),
            dial_timeout,
            server_name: None,
        }
    }

    /// Checks server certificates against `name` whatever host is dialled
    /// (client-go's `TLSClientConfig.ServerName`).
    pub fn with_server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    async fn dial(&self, location: &Location) -> Result<Box<dyn Io>, ProxyError> {
        let tcp = TcpStream::connect((location.host.as_str(), location.port))
            .await
            .map_err(ProxyError::Dial)?;
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "setting TCP_NODELAY on a backend connection failed");
        }
        if !location.https {
            return Ok(Box::new(tcp));
        }
        let host = self.server_name.as_ref().unwrap_or(&location.host);
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|_| ProxyError::ServerName(host.clone()))?;
        let tls = TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(ProxyError::Dial)?;
        Ok(Box::new(tls))
    }

    /// An HTTP/1.1 connection to the location, driven in the background.
    async fn connect(&self, location: &Location) -> Result<SendRequest<Body>, ProxyError> {
        let io = tokio::time::timeout(self.dial_timeout, self.dial(location))
            .await
            .map_err(|_| ProxyError::DialTimeout)??;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.with_upgrades().await {
                tracing::debug!(error = %e, "backend connection ended with an error");
            }
        });
        Ok(sender)
    }

    /// Sends a GET of the location (upstream's `LocationStreamer`): the
    /// response body is left for the caller to stream.
    pub async fn get(&self, location: &Location) -> Result<Response<Incoming>, ProxyError> {
        let mut sender = self.connect(location).await?;
        let request = Request::get(location.path_and_query())
            .header(header::HOST, location.authority())
            .body(Body::empty())?;
        Ok(sender.send_request(request).await?)
    }
}

/// Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1),
/// and credentials meant for this server only.
const NOT_FORWARDED: &[HeaderName] = &[
    header::CONNECTION,
    header::UPGRADE,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::PROXY_AUTHORIZATION,
    header::PROXY_AUTHENTICATE,
    header::AUTHORIZATION,
];

fn strip_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    let saved = keep_upgrade.then(|| headers.get(header::UPGRADE).cloned());
    for name in NOT_FORWARDED.iter().chain(&named) {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
    if let Some(Some(upgrade)) = saved {
        headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        headers.insert(header::UPGRADE, upgrade);
    }
}

/// Whether a request asks for a protocol upgrade (`Connection: Upgrade`
/// with an `Upgrade` header), as SPDY and websocket clients send.
pub fn is_upgrade_request(headers: &HeaderMap) -> bool {
    let connection_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    connection_upgrade && headers.contains_key(header::UPGRADE)
}

/// Forwards a request to `location` and answers with the backend's
/// response. With `upgrade_required`, a request that does not ask for an
/// upgrade is refused as upstream refuses it (400).
pub async fn forward(
    transport: &Transport,
    location: &Location,
    mut parts: Parts,
    body: Body,
    upgrade_required: bool,
) -> Result<Response<Body>, ApiError> {
    let upgrade = is_upgrade_request(&parts.headers);
    if upgrade_required && !upgrade {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    let client_upgrade = if upgrade {
        Some(
            parts
                .extensions
                .remove::<OnUpgrade>()
                .ok_or(ProxyError::NotUpgradable)?,
        )
    } else {
        None
    };
    let mut headers = std::mem::take(&mut parts.headers);
    strip_hop_by_hop(&mut headers, upgrade);
    if let Ok(host) = HeaderValue::from_str(&location.authority()) {
        headers.insert(header::HOST, host);
    }
    let mut request = Request::builder()
        .method(parts.method)
        .uri(location.path_and_query())
        .body(body)
        .map_err(ProxyError::from)?;
    *request.headers_mut() = headers;
    let mut sender = transport.connect(location).await?;
    let mut response = sender
        .send_request(request)
        .await
        .map_err(ProxyError::from)?;
    match client_upgrade {
        Some(client) if response.status() == StatusCode::SWITCHING_PROTOCOLS => {
            let backend = hyper::upgrade::on(&mut response);
            tokio::spawn(relay(client, backend));
            let (parts, _) = response.into_parts();
            Ok(Response::from_parts(parts, Body::empty()))
        }
        _ => {
            strip_hop_by_hop(response.headers_mut(), false);
            Ok(response.map(Body::new))
        }
    }
}

/// Copies bytes both ways between the upgraded client and backend
/// connections until either side closes.
async fn relay(client: OnUpgrade, backend: OnUpgrade) {
    let (client, backend) = match tokio::try_join!(client, backend) {
        Ok(pair) => pair,
        Err(e) => {
            tracing::debug!(error = %e, "upgrading a proxied connection failed");
            return;
        }
    };
    let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
    if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
        tracing::debug!(error = %e, "relaying an upgraded connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn upgrade_requests_are_recognised() {
        let spdy = headers(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
        assert!(is_upgrade_request(&spdy));
        let ws = headers(&[
            ("connection", "keep-alive, upgrade"),
            ("upgrade", "websocket"),
        ]);
        assert!(is_upgrade_request(&ws));
        assert!(!is_upgrade_request(&headers(&[("upgrade", "websocket")])));
        assert!(!is_upgrade_request(&headers(&[("connection", "close")])));
    }

    #[test]
    fn hop_by_hop_headers_and_credentials_are_not_forwarded() {
        let mut h = headers(&[
            ("connection", "Upgrade, x-private"),
            ("upgrade", "SPDY/3.1"),
            ("x-private", "1"),
            ("authorization", "Bearer secret"),
            ("x-stream-protocol-version", "v4.channel.k8s.io"),
        ]);
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h.get("upgrade").unwrap(), "SPDY/3.1");
        assert_eq!(h.get("connection").unwrap(), "Upgrade");
        assert!(h.get("x-private").is_none());
        assert!(h.get("authorization").is_none());
        assert!(h.get("x-stream-protocol-version").is_some());
        strip_hop_by_hop(&mut h, false);
        assert!(h.get("upgrade").is_none() && h.get("connection").is_none());
    }

    #[test]
    fn locations_render_as_urls() {
        let loc = Location {
            https: true,
            host: "fd00::2".into(),
            port: 10250,
            path: "/containerLogs/ns/p/c".into(),
            query: Some("tailLines=2".into()),
        };
        assert_eq!(
            loc.url(),
            "https://[fd00::2]:10250/containerLogs/ns/p/c?tailLines=2"
        );
    }
}
