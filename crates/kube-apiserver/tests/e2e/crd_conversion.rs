//! A CRD with conversion strategy Webhook: a small HTTPS conversion webhook
//! in the test (rustls, rcgen) renames a field between versions; objects
//! stored at v1 read at v2 and back, and a failing webhook answers a clear
//! 500 without changing what is stored.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Value};

use crate::authentication::https_server;
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

fn review(body: &[u8], fail: bool) -> Value {
    let review: Value = serde_json::from_slice(body).unwrap_or_default();
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
pub(crate) fn start_webhook() -> (SocketAddr, String, Arc<AtomicBool>) {
    let fail = Arc::new(AtomicBool::new(false));
    let switch = fail.clone();
    let (port, ca, _) = https_server::start(Arc::new(move |_: &str, body: &[u8]| {
        review(body, fail.load(Ordering::SeqCst))
    }));
    (SocketAddr::from(([127, 0, 0, 1], port)), ca, switch)
}

/// Creates the Gadget CRD converted by the webhook at `addr` and waits
/// until it is established.
pub(crate) fn install_crd(s: &TestServer, addr: SocketAddr, ca: &str) {
    s.apply_yaml(&crd(addr, ca));
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/gadgets.example.com",
    ]);
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
    install_crd(&s, addr, &ca);
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
