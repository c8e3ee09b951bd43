//! Webhook token authentication: a small HTTPS TokenReview webhook in the
//! test (rustls, rcgen) accepts one token; the server asks it through the
//! kubeconfig of `--authentication-token-webhook-config-file` and caches
//! its answers.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Value};

use super::{https_server, json_of, stderr, with_token};
use crate::harness::Backend;

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

fn webhook_tokens_authenticate_and_answers_are_cached(backend: Backend) {
    let (port, ca, calls) = https_server::start(Arc::new(|_, body| answer(body)));
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
    let server = backend.start_with(&[&flag, "--authentication-token-webhook-version=v1"]);

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

crate::harness::on_both_backends!(
    backend: webhook_tokens_authenticate_and_answers_are_cached
);
