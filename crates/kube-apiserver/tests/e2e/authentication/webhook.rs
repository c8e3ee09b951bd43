//! Webhook token authentication: a small HTTPS TokenReview webhook in the
//! test (rustls, rcgen) accepts one token; the server asks it through the
//! kubeconfig of `--authentication-token-webhook-config-file` and caches
//! its answers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use super::{json_of, stderr, with_token};
use crate::harness::TestServer;

/// The webhook's answer to a TokenReview.
fn answer(body: &[u8]) -> Value {
    let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let status = if review["spec"]["token"] == "hook-token" {
        json!({"authenticated": true, "user": {"username": "hooked", "uid": "7", "groups": ["webhook-users"]}})
    } else {
        json!({"authenticated": false})
    };
    json!({"apiVersion": review["apiVersion"], "kind": "TokenReview", "status": status})
}

/// Starts the webhook; returns its port, CA and a count of calls.
fn start_webhook() -> (u16, String, Arc<AtomicUsize>) {
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
                let (acceptor, counter) = (acceptor.clone(), counter.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        counter.fetch_add(1, Ordering::SeqCst);
                        async move {
                            let body = req.into_body().collect().await.map(|b| b.to_bytes());
                            let out = answer(&body.unwrap_or_default());
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

#[test]
fn webhook_tokens_authenticate_and_answers_are_cached() {
    let (port, ca, calls) = start_webhook();
    let files = tempfile::tempdir().expect("temp dir");
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: https://127.0.0.1:{port}/authenticate\n    certificate-authority-data: {}\nusers:\n- name: apiserver\n  user: {{}}\ncontexts:\n- name: hook\n  context: {{cluster: hook, user: apiserver}}\ncurrent-context: hook\n",
        b64(&ca)
    );
    let path = files.path().join("webhook.kubeconfig");
    std::fs::write(&path, kubeconfig).expect("kubeconfig");
    let flag = format!(
        "--authentication-token-webhook-config-file={}",
        path.display()
    );
    let server = TestServer::start_with(&[&flag, "--authentication-token-webhook-version=v1"]);

    let whoami = json_of(&with_token(
        &server,
        Some("hook-token"),
        &["auth", "whoami", "-o", "json"],
    ));
    assert_eq!(
        whoami["status"]["userInfo"],
        json!({"username": "hooked", "uid": "7", "groups": ["webhook-users", "system:authenticated"]})
    );
    let refused = with_token(&server, Some("other-token"), &["auth", "whoami"]);
    assert!(
        stderr(&refused).contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        stderr(&refused)
    );
    // Both answers are cached: asking again calls the webhook no more.
    let before = calls.load(Ordering::SeqCst);
    with_token(&server, Some("hook-token"), &["auth", "whoami"]);
    with_token(&server, Some("other-token"), &["auth", "whoami"]);
    assert_eq!(calls.load(Ordering::SeqCst), before);
}
