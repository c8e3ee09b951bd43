//! A CRD with conversion strategy Webhook: a small HTTPS conversion webhook
//! in the test (rustls, rcgen) renames a field between versions; objects
//! stored at v1 read at v2 and back, and a failing webhook answers a clear
//! 500 without changing what is stored.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use crate::harness::TestServer;

/// v1 has `spec.replicas`, v2 calls it `spec.size`.
fn convert(mut obj: Value, to: &str) -> Value {
    let spec = obj.get_mut("spec").and_then(Value::as_object_mut);
    if let Some(spec) = spec {
        let (from, into) = if to.ends_with("/v2") {
            ("replicas", "size")
        } else {
            ("size", "replicas")
        };
        if let Some(v) = spec.remove(from) {
            spec.insert(into.to_owned(), v);
        }
    }
    obj["apiVersion"] = json!(to);
    obj
}

fn review(body: Bytes, fail: bool) -> Value {
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    let request = &review["request"];
    let to = request["desiredAPIVersion"].as_str().unwrap_or("");
    let response = if fail {
        json!({"uid": request["uid"], "result": {"status": "Failure", "message": "refused by the test webhook"}})
    } else {
        let objects: Vec<Value> = request["objects"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|o| convert(o, to))
            .collect();
        json!({"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": objects})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response})
}

/// Starts the webhook on a loopback port: its address, CA (PEM) and the
/// switch that makes it refuse.
fn start_webhook() -> (SocketAddr, String, Arc<AtomicBool>) {
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
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    let fail = Arc::new(AtomicBool::new(false));
    let switch = fail.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, fail) = (acceptor.clone(), fail.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let fail = fail.load(Ordering::SeqCst);
                        async move {
                            let body = req.into_body().collect().await.map(|b| b.to_bytes());
                            let out = review(body.unwrap_or_default(), fail);
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
    (addr, ca_cert.pem(), switch)
}

fn crd(addr: SocketAddr, ca: &str) -> String {
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    let version = |name: &str, storage: bool| {
        format!("  - name: {name}\n    served: true\n    storage: {storage}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n")
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: gadgets.example.com}}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {{plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}}\n  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig:\n        url: https://{addr}/convert\n        caBundle: {bundle}\n  versions:\n{}{}",
        version("v1", true),
        version("v2", false)
    )
}

#[test]
fn conversion_webhook_converts_between_versions() {
    let s = TestServer::start();
    let (addr, ca, fail) = start_webhook();
    s.apply_yaml(&crd(addr, &ca));
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/gadgets.example.com",
    ]);
    s.apply_yaml("apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1, labels: {a: b}}\nspec: {replicas: 3}\n");
    let v2 = s.ok(&[
        "get",
        "gadgets.v2.example.com",
        "g1",
        "-o",
        "jsonpath={.apiVersion} {.spec.size} {.metadata.labels.a}",
    ]);
    assert_eq!(v2, "example.com/v2 3 b");
    s.ok(&[
        "patch",
        "gadgets.v2.example.com",
        "g1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":5}}"#,
    ]);
    let v1 = s.ok(&[
        "get",
        "gadgets.v1.example.com",
        "g1",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(v1, "5");
    let list = s.ok(&[
        "get",
        "gadgets.v2.example.com",
        "-o",
        "jsonpath={.items[0].spec.size}",
    ]);
    assert_eq!(list, "5");

    fail.store(true, Ordering::SeqCst);
    let err = s.fails(&["get", "gadgets.v2.example.com", "g1"]);
    assert!(
        err.contains("conversion webhook for example.com/v2, Kind=Gadget failed")
            && err.contains("refused by the test webhook"),
        "{err}"
    );
    let err = s.fails(&[
        "patch",
        "gadgets.v2.example.com",
        "g1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":9}}"#,
    ]);
    assert!(err.contains("conversion webhook"), "{err}");
    // The stored object (v1, no conversion needed) is unchanged.
    let v1 = s.ok(&[
        "get",
        "gadgets.v1.example.com",
        "g1",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(v1, "5");
}
