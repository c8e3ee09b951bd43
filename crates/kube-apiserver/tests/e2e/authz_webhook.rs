//! The authorization webhook end to end: a small HTTPS SubjectAccessReview
//! service in the test answers for `--authorization-mode=Webhook` and for
//! `--authorization-config` entries (match conditions, failure policy
//! Deny against an unreachable webhook); bad configuration files and
//! conflicting flags stop startup with upstream's messages.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use base64::Engine;

use crate::authentication::https_server;
use serde_json::{json, Value};

use crate::harness::{Backend, TestServer};
use crate::support::kubectl::stderr;

/// alice, bob and carol, each with a bearer token.
fn token_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.csv");
    let lines = "alice-token,alice,1\nbob-token,bob,2\ncarol-token,carol,3\n";
    std::fs::write(&path, lines).expect("token file");
    path
}

fn as_user(server: &TestServer, user: &str, args: &[&str]) -> Output {
    let ca = server.dir.path().join("pki").join("ca.crt");
    let flags = [
        "--kubeconfig=/dev/null".to_owned(),
        format!("--server=https://127.0.0.1:{}", server.port),
        format!("--certificate-authority={}", ca.display()),
        format!("--token={user}-token"),
    ];
    let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
    all.extend_from_slice(args);
    server.kubectl(&all)
}

fn assert_ok(out: &Output) {
    assert!(out.status.success(), "kubectl failed: {}", stderr(out));
}

fn assert_refused(out: &Output, text: &str) {
    assert!(!out.status.success(), "kubectl succeeded");
    assert!(
        stderr(out).contains(text),
        "{text:?} not in {}",
        stderr(out)
    );
}

/// The webhook: alice may read configmaps, bob is denied secrets, the
/// rest is no opinion. Every review it gets is kept.
fn start_webhook() -> (
    u16,
    String,
    Arc<std::sync::atomic::AtomicUsize>,
    Arc<Mutex<Vec<Value>>>,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    let (port, ca, calls) = https_server::start(Arc::new(move |_, body| {
        let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        if let Ok(mut seen) = kept.lock() {
            seen.push(review.clone());
        }
        let spec = &review["spec"];
        let resource = &spec["resourceAttributes"]["resource"];
        let status = match (spec["user"].as_str(), resource.as_str()) {
            (Some("alice"), Some("configmaps")) => {
                json!({"allowed": true, "reason": "alice reads configmaps"})
            }
            (Some("bob"), Some("secrets")) => {
                json!({"allowed": false, "denied": true, "reason": "bob may not"})
            }
            _ => json!({"allowed": false}),
        };
        json!({"apiVersion": review["apiVersion"], "kind": "SubjectAccessReview", "status": status})
    }));
    (port, ca, calls, seen)
}

fn kubeconfig(dir: &Path, port: u16, ca: &str) -> PathBuf {
    let b64 = base64::engine::general_purpose::STANDARD.encode(ca);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: https://127.0.0.1:{port}/authorize\n    certificate-authority-data: {b64}\nusers:\n- name: apiserver\n  user: {{}}\ncontexts:\n- name: hook\n  context: {{cluster: hook, user: apiserver}}\ncurrent-context: hook\n"
    );
    let path = dir.join(format!("hook-{port}.kubeconfig"));
    std::fs::write(&path, text).expect("kubeconfig");
    path
}

fn webhook_mode_allows_denies_and_caches(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let (port, ca, calls, seen) = start_webhook();
    let config = kubeconfig(files.path(), port, &ca);
    let server = backend.start_with(&[
        "--authorization-mode=Webhook,RBAC",
        &format!("--authorization-webhook-config-file={}", config.display()),
        "--authorization-webhook-version=v1",
        &format!("--token-auth-file={}", token_file(files.path()).display()),
    ]);

    assert_ok(&as_user(&server, "alice", &["get", "configmaps"]));
    let review = seen
        .lock()
        .expect("reviews")
        .last()
        .cloned()
        .expect("a review");
    assert_eq!(review["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(
        review["spec"]["resourceAttributes"],
        json!({"namespace": "default", "verb": "list", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(review["spec"]["user"], "alice");

    assert_refused(
        &as_user(&server, "bob", &["get", "secrets"]),
        "Error from server (Forbidden): secrets is forbidden: User \"bob\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\": bob may not",
    );
    // No opinion from the webhook: RBAC decides, and binds bob to nothing.
    assert_refused(
        &as_user(&server, "bob", &["get", "configmaps"]),
        "Error from server (Forbidden): configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\"",
    );
    server.ok(&[
        "create",
        "rolebinding",
        "bob-view",
        "--clusterrole=view",
        "--user=bob",
    ]);
    assert_ok(&as_user(&server, "bob", &["get", "configmaps"]));

    // Answers are cached: the same requests do not call the webhook again.
    let before = calls.load(Ordering::SeqCst);
    assert_ok(&as_user(&server, "alice", &["get", "configmaps"]));
    assert_refused(&as_user(&server, "bob", &["get", "secrets"]), "bob may not");
    assert_eq!(calls.load(Ordering::SeqCst), before);
}

fn authorization_config_chains_match_conditions_and_failure_policies(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let (port, ca, calls, _) = start_webhook();
    let hook = kubeconfig(files.path(), port, &ca);
    // Port 1 on loopback refuses connections.
    let dead = kubeconfig(files.path(), 1, &ca);
    let config = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n\
         - type: Webhook\n  name: hook\n  webhook:\n    timeout: 5s\n    subjectAccessReviewVersion: v1beta1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: NoOpinion\n    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {}}}\n    matchConditions:\n    - expression: has(request.resourceAttributes) && request.resourceAttributes.namespace == 'hooked'\n\
         - type: Webhook\n  name: dead\n  webhook:\n    timeout: 1s\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {}}}\n    matchConditions:\n    - expression: request.user == 'bob'\n\
         - type: RBAC\n  name: rbac\n",
        hook.display(),
        dead.display()
    );
    let path = files.path().join("authz.yaml");
    std::fs::write(&path, config).expect("config");
    let server = backend.start_with(&[
        &format!("--authorization-config={}", path.display()),
        &format!("--token-auth-file={}", token_file(files.path()).display()),
    ]);
    server.ok(&["create", "namespace", "hooked"]);
    server.ok(&[
        "create",
        "rolebinding",
        "view",
        "--clusterrole=view",
        "--user=bob",
        "--user=carol",
    ]);

    // Only requests in "hooked" reach the first webhook.
    assert_ok(&as_user(
        &server,
        "alice",
        &["get", "configmaps", "-n", "hooked"],
    ));
    let before = calls.load(Ordering::SeqCst);
    assert_refused(
        &as_user(&server, "alice", &["get", "configmaps"]),
        "Error from server (Forbidden)",
    );
    assert_eq!(calls.load(Ordering::SeqCst), before);

    // carol is not matched by the unreachable webhook: RBAC allows her.
    assert_ok(&as_user(&server, "carol", &["get", "configmaps"]));
    // bob is: its failure policy Deny stops the chain with the error.
    assert_refused(
        &as_user(&server, "bob", &["get", "configmaps"]),
        "InternalError",
    );
    // An access review reports the failure beside the decision.
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "pods"}}});
    let out = server.kubectl_stdin(&["create", "-f", "-", "-o", "json"], &review.to_string());
    assert_ok(&out);
    let status = serde_json::from_slice::<Value>(&out.stdout).expect("json")["status"].clone();
    assert_eq!(status["denied"], true);
    assert!(
        status["evaluationError"]
            .as_str()
            .is_some_and(|e| e.starts_with("Post \"https://127.0.0.1:1/authorize\"")),
        "{status}"
    );
}

/// Runs the binary to its startup error; returns stderr.
fn startup_error(args: &[&str]) -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let out = std::process::Command::new(crate::harness::binary())
        .args(args)
        .arg(format!("--secure-port={port}"))
        .arg("--bind-address=127.0.0.1")
        .output()
        .expect("binary runs");
    assert!(!out.status.success(), "started with {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_authorization_configuration_stops_startup() {
    let files = tempfile::tempdir().expect("temp dir");
    let data_dir = format!("--data-dir={}", files.path().display());
    let path = files.path().join("authz.yaml");
    std::fs::write(
        &path,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n\
         - type: Webhook\n  name: w\n  webhook:\n    timeout: 45s\n    subjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    connectionInfo: {type: KubeConfigFile, kubeConfigFile: /nonexistent}\n\
         - type: RBAC\n  name: policy\n",
    )
    .expect("config");
    let flag = format!("--authorization-config={}", path.display());
    let stderr = startup_error(&[&data_dir, &flag]);
    assert!(
        stderr.contains(
            "authorizers[0].webhook.timeout: Invalid value: \"45s\": must be > 0s and <= 30s"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: \"/nonexistent\": error loading file"),
        "{stderr}"
    );

    let stderr = startup_error(&[&data_dir, &flag, "--authorization-mode=RBAC"]);
    assert!(
        stderr.contains("--authorization-config: can not be specified when --authorization-mode or --authorization-webhook-* flags are defined"),
        "{stderr}"
    );
    let stderr = startup_error(&[&data_dir, &flag, "--authorization-webhook-version=v1"]);
    assert!(stderr.contains("can not be specified when"), "{stderr}");
}

crate::harness::on_both_backends!(
    backend: webhook_mode_allows_denies_and_caches,
    authorization_config_chains_match_conditions_and_failure_policies
);
