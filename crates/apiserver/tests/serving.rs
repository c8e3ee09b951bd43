//! End-to-end tests of secure serving: real TLS handshakes and HTTP/1.1 and
//! HTTP/2 requests against `serving::serve` on 127.0.0.1.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apiserver::authentication::client_cert::ClientCert;
use apiserver::authentication::x509::ClientCa;
use apiserver::serving::{
    serve, ServeError, ServeOptions, ServerTls, SniCertKey, TlsConfigError, TlsOptions, TlsVersion,
};
use axum::extract::{ConnectInfo, Request};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, SupportedProtocolVersion};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// A CA with a serving certificate for localhost and one client certificate.
struct Pki {
    dir: tempfile::TempDir,
    ca_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
    client: Identity,
    /// A client certificate from a CA the server does not trust.
    stranger: Identity,
}

fn ca(name: &str) -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    (cert, Issuer::new(params, key))
}

/// A certificate and its PKCS#8 key, as DER and PEM.
struct Identity {
    cert: CertificateDer<'static>,
    key: Vec<u8>,
    cert_pem: String,
    key_pem: String,
}

fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    cn: &str,
    org: Option<&str>,
    sans: &[&str],
    eku: ExtendedKeyUsagePurpose,
) -> Identity {
    let key = KeyPair::generate().unwrap();
    let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
    let mut params = CertificateParams::new(sans).unwrap();
    params.distinguished_name = DistinguishedName::new();
    if let Some(org) = org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![eku];
    let cert = params.signed_by(&key, issuer).unwrap();
    Identity {
        cert: cert.der().clone(),
        key: key.serialize_der(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let (ca_cert, issuer) = ca("test-ca");
    let server = leaf(
        &issuer,
        "kube-apiserver",
        None,
        &["localhost", "127.0.0.1"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let client = leaf(
        &issuer,
        "alice",
        Some("devs"),
        &[],
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let (_, other_issuer) = ca("other-ca");
    let stranger = leaf(
        &other_issuer,
        "mallory",
        None,
        &[],
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    std::fs::write(dir.path().join("ca.crt"), ca_cert.pem()).unwrap();
    std::fs::write(dir.path().join("tls.crt"), &server.cert_pem).unwrap();
    std::fs::write(dir.path().join("tls.key"), &server.key_pem).unwrap();
    Pki {
        dir,
        ca_der: ca_cert.der().clone(),
        issuer,
        client,
        stranger,
    }
}

impl Pki {
    fn tls_options(&self) -> TlsOptions {
        TlsOptions {
            cert_file: self.dir.path().join("tls.crt"),
            key_file: self.dir.path().join("tls.key"),
            client_cas: vec![ClientCa::load(&self.dir.path().join("ca.crt")).unwrap()],
            min_version: TlsVersion::Tls12,
            cipher_suites: Vec::new(),
            http2: true,
            sni_cert_keys: Vec::new(),
        }
    }
}

/// Reports who the request is from, how it arrived, and where from.
async fn whoami(request: Request) -> String {
    let user = match request
        .extensions()
        .get::<ClientCert>()
        .map(ClientCert::user)
    {
        Some(Ok(user)) => format!("{} {:?}", user.name, user.groups),
        Some(Err(err)) => format!("error: {err}"),
        None => "anonymous".to_string(),
    };
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip().to_string())
        .unwrap_or_default();
    format!("{user} {:?} {peer}", request.version())
}

async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_millis(700)).await;
    "done"
}

struct Server {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), ServeError>>,
}

async fn start(tls: TlsOptions, options: ServeOptions) -> Server {
    start_with(tls.server_config().unwrap().into(), options).await
}

async fn start_with(config: ServerTls, options: ServeOptions) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let router = Router::new()
        .route("/whoami", get(whoami))
        .route("/slow", get(slow));
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        serve(listener, config, router, shutdown, &options).await
    });
    Server { addr, stop, task }
}

fn client_config(
    pki: &Pki,
    identity: Option<&Identity>,
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[u8],
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(pki.ca_der.clone()).unwrap();
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
    let mut config = match identity {
        Some(identity) => builder
            .with_client_auth_cert(
                vec![identity.cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(identity.key.clone())),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(config)
}

async fn connect(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
) -> std::io::Result<TlsStream<TcpStream>> {
    connect_as(addr, config, "localhost").await
}

async fn connect_as(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    server_name: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(server_name.to_owned()).unwrap();
    TlsConnector::from(config).connect(name, tcp).await
}

/// GET `path` over HTTP/1.1 or HTTP/2 (by the negotiated ALPN); returns the body.
async fn get_body(tls: TlsStream<TcpStream>, path: &str) -> String {
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let io = TokioIo::new(tls);
    let request = http::Request::get(format!("https://localhost{path}"))
        .header(http::header::HOST, "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = if h2 {
        let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .unwrap();
        tokio::spawn(conn);
        sender.send_request(request).await.unwrap()
    } else {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
        tokio::spawn(conn);
        sender.send_request(request).await.unwrap()
    };
    assert_eq!(response.status(), http::StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

const BOTH: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13, &rustls::version::TLS12];

#[tokio::test]
async fn http1_without_client_certificate_is_anonymous() {
    let pki = pki();
    let server = start(pki.tls_options(), ServeOptions::default()).await;
    let tls = connect(server.addr, client_config(&pki, None, BOTH, b"http/1.1"))
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(
        get_body(tls, "/whoami").await,
        "anonymous HTTP/1.1 127.0.0.1"
    );
}

#[tokio::test]
async fn http2_with_client_certificate_carries_the_user() {
    let pki = pki();
    let server = start(pki.tls_options(), ServeOptions::default()).await;
    let tls = connect(
        server.addr,
        client_config(&pki, Some(&pki.client), BOTH, b"h2"),
    )
    .await
    .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    assert_eq!(
        get_body(tls, "/whoami").await,
        r#"alice ["devs"] HTTP/2.0 127.0.0.1"#
    );
}

#[tokio::test]
async fn client_certificate_user_over_http1() {
    let pki = pki();
    let server = start(pki.tls_options(), ServeOptions::default()).await;
    let config = client_config(
        &pki,
        Some(&pki.client),
        &[&rustls::version::TLS12],
        b"http/1.1",
    );
    let tls = connect(server.addr, config).await.unwrap();
    assert_eq!(
        get_body(tls, "/whoami").await,
        r#"alice ["devs"] HTTP/1.1 127.0.0.1"#
    );
}

#[tokio::test]
async fn untrusted_client_certificate_is_left_to_the_authenticator() {
    // As Go's RequestClientCert: the handshake succeeds and the x509
    // authenticator (not this layer) refuses the chain, answering 401.
    let pki = pki();
    let server = start(pki.tls_options(), ServeOptions::default()).await;
    let config = client_config(&pki, Some(&pki.stranger), BOTH, b"http/1.1");
    let tls = connect(server.addr, config).await.unwrap();
    assert_eq!(
        get_body(tls, "/whoami").await,
        r#"mallory [] HTTP/1.1 127.0.0.1"#
    );
}

#[tokio::test]
async fn tls12_is_refused_when_minimum_is_tls13() {
    let pki = pki();
    let mut tls = pki.tls_options();
    tls.min_version = TlsVersion::Tls13;
    let server = start(tls, ServeOptions::default()).await;
    let only12 = client_config(&pki, None, &[&rustls::version::TLS12], b"http/1.1");
    assert!(connect(server.addr, only12).await.is_err());
    let only13 = client_config(&pki, None, &[&rustls::version::TLS13], b"http/1.1");
    let tls = connect(server.addr, only13).await.unwrap();
    assert_eq!(
        tls.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
}

#[tokio::test]
async fn cipher_suite_restriction_applies_to_tls12() {
    let pki = pki();
    let mut tls = pki.tls_options();
    // The server key is ECDSA: an RSA-only TLS 1.2 suite leaves nothing usable.
    tls.cipher_suites = vec!["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into()];
    let server = start(tls, ServeOptions::default()).await;
    let only12 = client_config(&pki, None, &[&rustls::version::TLS12], b"http/1.1");
    assert!(connect(server.addr, only12).await.is_err());
    let only13 = client_config(&pki, None, &[&rustls::version::TLS13], b"http/1.1");
    assert!(connect(server.addr, only13).await.is_ok());
}

/// A client offering only `suites`, in that order.
fn offering(pki: &Pki, suites: &[rustls::SupportedCipherSuite]) -> Arc<ClientConfig> {
    let provider = rustls::crypto::CryptoProvider {
        cipher_suites: suites.to_vec(),
        ..rustls::crypto::ring::default_provider()
    };
    let mut roots = RootCertStore::empty();
    roots.add(pki.ca_der.clone()).unwrap();
    let config = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// As Go's server: the server's order decides, AES-128-GCM first for a
/// client that prefers AES-GCM, ChaCha20 first for one that does not.
#[tokio::test]
async fn the_server_chooses_the_cipher_suite_in_gos_order() {
    use rustls::crypto::ring::cipher_suite::*;
    let pki = pki();
    let server = start(pki.tls_options(), ServeOptions::default()).await;
    // Go prefers ChaCha20 always on a machine without AES hardware.
    let aes_hardware =
        apiserver::serving::aes_gcm_preferred(&[rustls::CipherSuite::TLS13_AES_128_GCM_SHA256]);
    let chacha_first = [TLS13_CHACHA20_POLY1305_SHA256, TLS13_AES_128_GCM_SHA256];
    let cases = [
        (
            vec![
                TLS13_AES_256_GCM_SHA384,
                TLS13_AES_128_GCM_SHA256,
                TLS13_CHACHA20_POLY1305_SHA256,
            ],
            if aes_hardware {
                TLS13_AES_128_GCM_SHA256
            } else {
                TLS13_CHACHA20_POLY1305_SHA256
            },
        ),
        (chacha_first.to_vec(), TLS13_CHACHA20_POLY1305_SHA256),
        (
            vec![
                TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
                TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            ],
            if aes_hardware {
                TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            } else {
                TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
            },
        ),
    ];
    for (offered, chosen) in cases {
        let tls = connect(server.addr, offering(&pki, &offered))
            .await
            .unwrap();
        assert_eq!(
            tls.get_ref().1.negotiated_cipher_suite().map(|s| s.suite()),
            Some(chosen.suite()),
            "offered {offered:?}"
        );
    }
}

#[tokio::test]
async fn unknown_cipher_suite_is_a_config_error() {
    let pki = pki();
    let mut tls = pki.tls_options();
    tls.cipher_suites = vec!["TLS_NOT_A_SUITE".into()];
    assert!(matches!(
        tls.server_config(),
        Err(TlsConfigError::CipherSuite(_))
    ));
}

#[tokio::test]
async fn missing_key_file_is_a_config_error() {
    let pki = pki();
    let mut tls = pki.tls_options();
    tls.key_file = pki.dir.path().join("absent.key");
    assert!(matches!(
        tls.server_config(),
        Err(TlsConfigError::Pem { .. })
    ));
}

#[tokio::test]
async fn graceful_shutdown_lets_in_flight_requests_finish() {
    let pki = pki();
    let server = start(pki.tls_options(), ServeOptions::default()).await;
    let h1 = connect(server.addr, client_config(&pki, None, BOTH, b"http/1.1"))
        .await
        .unwrap();
    let h2 = connect(server.addr, client_config(&pki, None, BOTH, b"h2"))
        .await
        .unwrap();
    let slow_h1 = tokio::spawn(get_body(h1, "/slow"));
    let slow_h2 = tokio::spawn(get_body(h2, "/slow"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.stop.send(()).unwrap();

    assert_eq!(slow_h1.await.unwrap(), "done");
    assert_eq!(slow_h2.await.unwrap(), "done");
    server.task.await.unwrap().unwrap();
    // The listener is closed: nothing is accepted any more.
    assert!(TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test]
async fn shutdown_deadline_aborts_stragglers() {
    let pki = pki();
    let options = ServeOptions {
        shutdown_timeout: Duration::from_millis(100),
        ..ServeOptions::default()
    };
    let server = start(pki.tls_options(), options).await;
    let tls = connect(server.addr, client_config(&pki, None, BOTH, b"http/1.1"))
        .await
        .unwrap();
    let request = tokio::spawn(get_body(tls, "/slow"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.stop.send(()).unwrap();
    let result = server.task.await.unwrap();
    assert!(
        matches!(result, Err(ServeError::ShutdownTimedOut { remaining: 1 })),
        "{result:?}"
    );
    // The aborted connection is cut at once and never delivers the response.
    let outcome = tokio::time::timeout(Duration::from_millis(300), request).await;
    assert!(matches!(outcome, Ok(Err(_))), "{outcome:?}");
}

/// Sends `count` concurrent GET /slow requests on one HTTP/2 connection and
/// returns how long they took together.
async fn concurrent_slow_h2(tls: TlsStream<TcpStream>, count: usize) -> Duration {
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    // A first exchange makes sure the server's SETTINGS (with its stream
    // limit) have arrived; before that the client assumes no limit and a
    // stream over it would be refused rather than queued.
    let warm_up = http::Request::get("https://localhost/whoami")
        .body(Empty::<Bytes>::new())
        .unwrap();
    sender.clone().send_request(warm_up).await.unwrap();
    let started = std::time::Instant::now();
    let requests = (0..count).map(|_| {
        let mut sender = sender.clone();
        async move {
            let request = http::Request::get("https://localhost/slow")
                .body(Empty::<Bytes>::new())
                .unwrap();
            let response = sender.send_request(request).await.unwrap();
            response.into_body().collect().await.unwrap().to_bytes()
        }
    });
    for body in futures::future::join_all(requests).await {
        assert_eq!(body, "done");
    }
    started.elapsed()
}

#[tokio::test]
async fn http2_stream_limit_is_advertised_per_connection() {
    let pki = pki();
    let one_stream = ServeOptions {
        http2_max_streams_per_connection: 1,
        ..ServeOptions::default()
    };
    let limited = start(pki.tls_options(), one_stream).await;
    let tls = connect(limited.addr, client_config(&pki, None, BOTH, b"h2"))
        .await
        .unwrap();
    // One stream at a time: the second request waits for the first.
    assert!(concurrent_slow_h2(tls, 2).await >= Duration::from_millis(1300));

    let default = start(pki.tls_options(), ServeOptions::default()).await;
    let tls = connect(default.addr, client_config(&pki, None, BOTH, b"h2"))
        .await
        .unwrap();
    assert!(concurrent_slow_h2(tls, 2).await < Duration::from_millis(1300));
}

#[tokio::test]
async fn idle_connections_are_closed_but_busy_ones_are_not() {
    let pki = pki();
    let options = ServeOptions {
        idle_timeout: Duration::from_millis(300),
        ..ServeOptions::default()
    };
    let server = start(pki.tls_options(), options).await;

    // A request slower than the idle timeout completes on its connection.
    let tls = connect(server.addr, client_config(&pki, None, BOTH, b"h2"))
        .await
        .unwrap();
    assert_eq!(get_body(tls, "/slow").await, "done");

    // An idle HTTP/2 connection is told to go away.
    let tls = connect(server.addr, client_config(&pki, None, BOTH, b"h2"))
        .await
        .unwrap();
    let (_sender, conn) = hyper::client::conn::http2::handshake::<_, _, Empty<Bytes>>(
        TokioExecutor::new(),
        TokioIo::new(tls),
    )
    .await
    .unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(5), conn).await;
    assert!(matches!(closed, Ok(Ok(()))), "{closed:?}");
}

/// The leaf certificate the server presented on `tls`.
fn server_leaf(tls: &TlsStream<TcpStream>) -> CertificateDer<'static> {
    tls.get_ref().1.peer_certificates().unwrap()[0].clone()
}

#[tokio::test]
async fn rotated_certificates_reach_new_connections() {
    let pki = pki();
    let latest = pki
        .tls_options()
        .reloading(Duration::from_millis(50))
        .await
        .unwrap();
    let server = start_with(latest.into(), ServeOptions::default()).await;
    let anonymous = client_config(&pki, None, BOTH, b"http/1.1");
    let original = server_leaf(&connect(server.addr, anonymous.clone()).await.unwrap());

    // A client of a CA added to the bundle below.
    let (new_ca, new_issuer) = ca("rotated-ca");
    let bob = leaf(
        &new_issuer,
        "bob",
        None,
        &[],
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let bob_config = client_config(&pki, Some(&bob), BOTH, b"http/1.1");

    // Rotate the serving certificate and add the new CA to the client bundle.
    let rotated = leaf(
        &pki.issuer,
        "rotated",
        None,
        &["localhost"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let dir = pki.dir.path();
    std::fs::write(dir.join("tls.key"), &rotated.key_pem).unwrap();
    std::fs::write(dir.join("tls.crt"), &rotated.cert_pem).unwrap();
    let bundle = std::fs::read_to_string(dir.join("ca.crt")).unwrap() + &new_ca.pem();
    std::fs::write(dir.join("ca.crt"), bundle).unwrap();

    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let tls = connect(server.addr, anonymous.clone()).await.unwrap();
        if server_leaf(&tls) == rotated.cert {
            break;
        }
        assert_eq!(server_leaf(&tls), original);
        assert!(
            std::time::Instant::now() < deadline,
            "rotation not picked up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tls = connect(server.addr, bob_config).await.unwrap();
    assert_eq!(get_body(tls, "/whoami").await, "bob [] HTTP/1.1 127.0.0.1");

    // A broken update keeps the last good configuration.
    std::fs::write(dir.join("tls.crt"), "garbage").unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let tls = connect(server.addr, anonymous).await.unwrap();
    assert_eq!(server_leaf(&tls), rotated.cert);
}

#[tokio::test]
async fn sni_certificate_is_chosen_by_server_name() {
    let pki = pki();
    let named = leaf(
        &pki.issuer,
        "named",
        None,
        &["api.example.test"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let dir = pki.dir.path();
    std::fs::write(dir.join("named.crt"), &named.cert_pem).unwrap();
    std::fs::write(dir.join("named.key"), &named.key_pem).unwrap();
    let mut tls = pki.tls_options();
    tls.sni_cert_keys = vec![SniCertKey {
        cert_file: dir.join("named.crt"),
        key_file: dir.join("named.key"),
        names: Vec::new(),
    }];
    let server = start(tls, ServeOptions::default()).await;
    let config = client_config(&pki, None, BOTH, b"http/1.1");

    let by_name = connect_as(server.addr, config.clone(), "api.example.test")
        .await
        .unwrap();
    assert_eq!(server_leaf(&by_name), named.cert);
    let default = connect(server.addr, config).await.unwrap();
    assert_ne!(server_leaf(&default), named.cert);
}
