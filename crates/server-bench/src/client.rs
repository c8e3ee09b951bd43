//! The benchmark's HTTPS client: the server address, CA and admin client
//! certificate read from the generated `admin.kubeconfig`, connections over
//! rustls speaking HTTP/1.1 or HTTP/2 (negotiated by ALPN), and requests
//! whose bodies are drained without being kept.

use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::BenchError;

/// Bytes of an unexpected response's body kept for the error message.
const ERROR_BODY_BYTES: usize = 300;

/// The HTTP version the load is driven with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// HTTP/1.1: one request in flight per connection.
    H1,
    /// HTTP/2: many streams share each connection.
    H2,
}

impl Protocol {
    pub fn label(self) -> &'static str {
        match self {
            Protocol::H1 => "HTTP/1.1",
            Protocol::H2 => "HTTP/2",
        }
    }
}

/// The parts of `admin.kubeconfig` the client needs.
#[derive(Deserialize)]
struct Kubeconfig {
    clusters: Vec<NamedCluster>,
    users: Vec<NamedUser>,
}

#[derive(Deserialize)]
struct NamedCluster {
    cluster: Cluster,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    certificate_authority_data: String,
}

#[derive(Deserialize)]
struct NamedUser {
    user: User,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct User {
    client_certificate_data: String,
    client_key_data: String,
}

/// Connects to one API server as its admin.
#[derive(Clone)]
pub struct Client {
    host: String,
    port: u16,
    server_name: ServerName<'static>,
    authority: HeaderValue,
    h1: TlsConnector,
    h2: TlsConnector,
}

impl Client {
    /// Reads the server URL and credentials of a kubeconfig written by the
    /// server (its first cluster and user).
    pub async fn from_kubeconfig(path: &Path) -> Result<Client, BenchError> {
        let bad = |what: &str| BenchError::Kubeconfig(format!("{}: {what}", path.display()));
        let text = tokio::fs::read_to_string(path).await?;
        let config: Kubeconfig = serde_yaml::from_str(&text).map_err(|e| bad(&e.to_string()))?;
        let cluster = &config
            .clusters
            .first()
            .ok_or_else(|| bad("no cluster"))?
            .cluster;
        let user = &config.users.first().ok_or_else(|| bad("no user"))?.user;
        let (host, port) = split_server(&cluster.server).ok_or_else(|| bad("server URL"))?;
        let pem = |data: &str| STANDARD.decode(data).map_err(|e| bad(&e.to_string()));
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut BufReader::new(
            &pem(&cluster.certificate_authority_data)?[..],
        )) {
            roots.add(cert?)?;
        }
        let chain = rustls_pemfile::certs(&mut BufReader::new(
            &pem(&user.client_certificate_data)?[..],
        ))
        .collect::<Result<Vec<_>, _>>()?;
        let key =
            rustls_pemfile::private_key(&mut BufReader::new(&pem(&user.client_key_data)?[..]))?
                .ok_or_else(|| bad("no client key"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)?;
        let server_name = ServerName::try_from(host.clone()).map_err(|e| bad(&e.to_string()))?;
        let authority = HeaderValue::try_from(authority(&host, port))?;
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let h1 = TlsConnector::from(Arc::new(tls.clone()));
        tls.alpn_protocols = vec![b"h2".to_vec()];
        let h2 = TlsConnector::from(Arc::new(tls));
        Ok(Client {
            host,
            port,
            server_name,
            authority,
            h1,
            h2,
        })
    }

    /// Opens a new connection.
    pub async fn connect(&self, protocol: Protocol) -> Result<Conn, BenchError> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port)).await?;
        // Requests are small and latency-bound: no Nagle delay.
        tcp.set_nodelay(true)?;
        let connector = match protocol {
            Protocol::H1 => &self.h1,
            Protocol::H2 => &self.h2,
        };
        let tls = TokioIo::new(connector.connect(self.server_name.clone(), tcp).await?);
        Ok(match protocol {
            Protocol::H1 => {
                let (sender, conn) = http1::handshake(tls).await?;
                tokio::spawn(conn);
                Conn::H1(sender)
            }
            Protocol::H2 => {
                let (sender, conn) = http2::handshake(TokioExecutor::new(), tls).await?;
                tokio::spawn(conn);
                Conn::H2(sender)
            }
        })
    }

    /// Where requests for `path_and_query` go over `protocol`.
    pub fn target(&self, protocol: Protocol, path_and_query: &str) -> Result<Target, BenchError> {
        let uri = match protocol {
            // HTTP/1.1 sends the origin form with a Host header.
            Protocol::H1 => Uri::try_from(path_and_query)?,
            // HTTP/2 takes :scheme and :authority from an absolute URI.
            Protocol::H2 => Uri::builder()
                .scheme("https")
                .authority(self.authority.as_bytes())
                .path_and_query(path_and_query)
                .build()?,
        };
        Ok(Target {
            uri,
            host: (protocol == Protocol::H1).then(|| self.authority.clone()),
        })
    }
}

/// `host:port` as a URL authority, bracketing IPv6 literals.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `https://host:port` into its host (without brackets) and port.
fn split_server(url: &str) -> Option<(String, u16)> {
    let rest = url.strip_prefix("https://")?.trim_end_matches('/');
    let (host, port) = rest.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_string(), port.parse().ok()?))
}

/// One request line, prepared once and cloned per request.
#[derive(Clone)]
pub struct Target {
    uri: Uri,
    host: Option<HeaderValue>,
}

impl Target {
    /// A request to this target; `accept` and `body` as given.
    pub fn request(
        &self,
        method: Method,
        accept: &'static str,
        body: Option<Bytes>,
    ) -> Result<Request<Full<Bytes>>, BenchError> {
        let mut builder = Request::builder()
            .method(method)
            .uri(self.uri.clone())
            .header(http::header::ACCEPT, accept);
        if let Some(host) = &self.host {
            builder = builder.header(HOST, host.clone());
        }
        let request = match body {
            Some(body) => builder
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Full::new(body))?,
            None => builder.body(Full::new(Bytes::new()))?,
        };
        Ok(request)
    }
}

/// A connection's request sender; HTTP/2 senders are shared by cloning.
pub enum Conn {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Conn {
    /// Another sender on the same connection (HTTP/2 only).
    pub fn share(&self) -> Option<Conn> {
        match self {
            Conn::H1(_) => None,
            Conn::H2(sender) => Some(Conn::H2(sender.clone())),
        }
    }

    /// Sends a request and returns the response with its body unread.
    pub async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<http::Response<Incoming>, hyper::Error> {
        match self {
            Conn::H1(sender) => {
                sender.ready().await?;
                sender.send_request(request).await
            }
            Conn::H2(sender) => {
                sender.ready().await?;
                sender.send_request(request).await
            }
        }
    }

    /// Sends a request and reads its whole body; a status other than
    /// `expect` is an error carrying the start of the body.
    pub async fn call(
        &mut self,
        request: Request<Full<Bytes>>,
        expect: StatusCode,
    ) -> Result<Outcome, BenchError> {
        let response = self.send(request).await?;
        let status = response.status();
        let mut body = response.into_body();
        if status != expect {
            let mut text = Vec::new();
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame?.into_data() {
                    let room = ERROR_BODY_BYTES.saturating_sub(text.len());
                    text.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            return Err(BenchError::Status {
                status,
                body: String::from_utf8_lossy(&text).into_owned(),
            });
        }
        // Counted, not kept: a 1,000-object list is a megabyte.
        let mut bytes = 0;
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                bytes += data.len();
            }
        }
        Ok(Outcome { bytes })
    }

    /// Sends a request expecting 200 and returns its body.
    pub async fn get_body(&mut self, request: Request<Full<Bytes>>) -> Result<Bytes, BenchError> {
        let response = self.send(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if status != StatusCode::OK {
            let end = body.len().min(ERROR_BODY_BYTES);
            return Err(BenchError::Status {
                status,
                body: String::from_utf8_lossy(&body[..end]).into_owned(),
            });
        }
        Ok(body)
    }
}

/// A successful response.
pub struct Outcome {
    /// Length of its body.
    pub bytes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_server_urls() {
        assert_eq!(
            split_server("https://127.0.0.1:6443"),
            Some(("127.0.0.1".to_string(), 6443))
        );
        assert_eq!(
            split_server("https://[::1]:443/"),
            Some(("::1".to_string(), 443))
        );
        assert_eq!(split_server("http://127.0.0.1:80"), None);
        assert_eq!(split_server("https://host"), None);
    }

    #[test]
    fn authorities_bracket_ipv6() {
        assert_eq!(authority("::1", 6443), "[::1]:6443");
        assert_eq!(authority("127.0.0.1", 6443), "127.0.0.1:6443");
    }
}
