//! A small HTTPS server in the test (rustls, rcgen) answering JSON, for
//! the services authenticators call: token webhooks and OIDC providers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// Answers a request from its path and body.
pub type Handler = Arc<dyn Fn(&str, &[u8]) -> Value + Send + Sync>;

/// Starts the server on a free loopback port; returns the port, its CA
/// (PEM) and a count of requests.
pub fn start(handler: Handler) -> (u16, String, Arc<AtomicUsize>) {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("cert");
    let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], private)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, counter, handler) =
                    (acceptor.clone(), counter.clone(), handler.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let handler = handler.clone();
                        async move {
                            let path = req.uri().path().to_owned();
                            let body = req.into_body().collect().await.map(|b| b.to_bytes());
                            let out = handler(&path, &body.unwrap_or_default());
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                Bytes::from(out.to_string()),
                            )))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
    });
    (port, ca_cert.pem(), calls)
}
