//! HTTPS clients for the abuse tests: TLS with a client certificate over tokio, hyper's
//! HTTP/1.1 and HTTP/2 client connections, raw byte streams for requests a
//! client library would not send, and the server's memory from `/proc`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::harness::TestServer;

/// How to reach one server: its port and TLS settings for the admin.
#[derive(Clone)]
pub struct Client {
    pub port: u16,
    pid: u32,
    h1: TlsConnector,
    h2: TlsConnector,
}

/// Either HTTP version's request sender.
pub enum Conn {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

fn read_file(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Client {
    /// A client holding the admin certificate the server wrote.
    pub fn admin(s: &TestServer) -> Client {
        let pki = s.dir.path().join("pki");
        Self::with_cert(s, &pki.join("admin.crt"), &pki.join("admin.key"))
    }

    /// A client holding the given certificate and key files (e.g. from
    /// [`TestServer::client_cert`]).
    pub fn with_cert(s: &TestServer, cert: &Path, key: &Path) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        let ca = read_file(&s.dir.path().join("pki").join("ca.crt"));
        for cert in rustls_pemfile::certs(&mut &ca[..]) {
            roots.add(cert.expect("CA certificate")).expect("root");
        }
        let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &read_file(cert)[..])
            .map(|c| c.expect("client certificate"))
            .collect();
        let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &read_file(key)[..])
            .expect("client key")
            .expect("a key in the key file");
        let connector = |alpn: &[u8]| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_root_certificates(roots.clone())
                .with_client_auth_cert(chain.clone(), key.clone_key())
                .expect("client config");
            config.alpn_protocols = vec![alpn.to_vec()];
            TlsConnector::from(Arc::new(config))
        };
        Client {
            port: s.port,
            pid: s.pid(),
            h1: connector(b"http/1.1"),
            h2: connector(b"h2"),
        }
    }

    pub async fn tcp(&self) -> TcpStream {
        TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("connect")
    }

    /// A TLS connection offering HTTP/1.1 (or HTTP/2) by ALPN.
    pub async fn tls(&self, http2: bool) -> TlsStream<TcpStream> {
        let connector = if http2 { &self.h2 } else { &self.h1 };
        let name = ServerName::try_from("127.0.0.1").expect("name");
        connector
            .connect(name, self.tcp().await)
            .await
            .expect("TLS handshake")
    }

    /// A client connection over HTTP/1.1 or HTTP/2; its driver runs on the
    /// current runtime until either side closes it. An HTTP/2 connection
    /// sends its first request at once, before the server's SETTINGS (its
    /// 256 KiB frame size) arrive, so a long header block goes in 16 KiB
    /// HEADERS and CONTINUATION frames, as Go's client sends it on a new
    /// connection.
    pub async fn conn(&self, http2: bool) -> Conn {
        let io = TokioIo::new(self.tls(http2).await);
        if http2 {
            let (sender, conn) = http2::handshake(TokioExecutor::new(), io)
                .await
                .expect("HTTP/2 handshake");
            tokio::spawn(conn);
            Conn::H2(sender)
        } else {
            let (sender, conn) = http1::handshake(io).await.expect("HTTP/1.1 handshake");
            tokio::spawn(conn);
            Conn::H1(sender)
        }
    }

    /// One request on a new connection; the status and the whole body.
    pub async fn get(&self, http2: bool, path: &str) -> (StatusCode, Bytes) {
        let mut conn = self.conn(http2).await;
        let response = conn.send("GET", path, Bytes::new()).await;
        read(response).await
    }

    /// How long `path` takes to answer 200 on a new HTTP/2 connection.
    pub async fn timed_ok(&self, path: &str) -> Duration {
        let start = Instant::now();
        let (status, body) = self.get(true, path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body:?}");
        start.elapsed()
    }

    /// `VmRSS` and `VmHWM` of the server process, in bytes.
    pub fn memory(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .expect("server's /proc status");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .map(|kb| kb * 1024)
                .unwrap_or_else(|| panic!("{name} in {status}"))
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// The sum of a metric's series whose labels contain every `labels`
    /// pair, from `/metrics`.
    pub async fn metric(&self, name: &str, labels: &[&str]) -> f64 {
        let (status, body) = self.get(true, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        String::from_utf8_lossy(&body)
            .lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .filter(|l| labels.iter().all(|pair| l.contains(pair)))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

impl Conn {
    /// Sends one request (a path, made absolute for HTTP/2).
    pub async fn send(&mut self, method: &str, path: &str, body: Bytes) -> Response<Incoming> {
        self.send_with(method, path, &[], body).await
    }

    /// Sends one request with extra `headers`.
    pub async fn send_with(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Response<Incoming> {
        let mut builder = Request::builder()
            .method(method)
            .header("content-type", "application/json");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        match self {
            Conn::H1(sender) => {
                let request = builder
                    .uri(path)
                    .header("host", "127.0.0.1")
                    .body(Full::new(body))
                    .expect("request");
                sender.ready().await.expect("connection ready");
                sender.send_request(request).await.expect("response")
            }
            Conn::H2(sender) => {
                let request = builder
                    .uri(format!("https://127.0.0.1{path}"))
                    .body(Full::new(body))
                    .expect("request");
                sender.ready().await.expect("connection ready");
                sender.send_request(request).await.expect("response")
            }
        }
    }
}

/// The status and whole body of a response.
pub async fn read(response: Response<Incoming>) -> (StatusCode, Bytes) {
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    (status, body)
}

/// Writes `request` on a raw TLS (HTTP/1.1) stream while reading whatever
/// the server answers until it closes or `wait` passes; the server may stop
/// reading (and close) before the whole request is written.
pub async fn raw(client: &Client, request: Vec<u8>, wait: Duration) -> String {
    let (mut reader, mut writer) = tokio::io::split(client.tls(false).await);
    let write = tokio::spawn(async move {
        let _ = writer.write_all(&request).await;
        let _ = writer.flush().await;
        writer
    });
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(wait, reader.read_to_end(&mut answer)).await;
    write.abort();
    String::from_utf8_lossy(&answer).into_owned()
}

/// Whether the server has closed `stream` (end of stream or a reset)
/// within `wait`, reading and discarding anything it sends.
pub async fn closed_within<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    wait: Duration,
) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}
