//! `--authorization-config` reloaded while the server runs: a webhook added
//! to the file starts deciding within seconds, a file dropping a type the
//! server started with is refused and the running chain stays, and the
//! reloads are counted in upstream's metrics.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use crate::authentication::https_server;
use crate::harness::{Backend, TestServer};
use crate::support::wait::eventually;

/// How long the server's background work may take here.
const WAIT: Duration = Duration::from_secs(30);

fn as_alice(server: &TestServer, args: &[&str]) -> Output {
    let ca = server.dir.path().join("pki").join("ca.crt");
    let flags = [
        "--kubeconfig=/dev/null".to_owned(),
        format!("--server=https://127.0.0.1:{}", server.port),
        format!("--certificate-authority={}", ca.display()),
        "--token=alice-token".to_owned(),
    ];
    let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
    all.extend_from_slice(args);
    server.kubectl(&all)
}

/// A SubjectAccessReview webhook allowing alice everything.
fn webhook_kubeconfig(dir: &Path) -> PathBuf {
    let (port, ca, _) = https_server::start(Arc::new(|_, body| {
        let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let allowed = review["spec"]["user"] == "alice";
        json!({"apiVersion": review["apiVersion"], "kind": "SubjectAccessReview",
            "status": {"allowed": allowed, "reason": "alice may"}})
    }));
    let b64 = base64::engine::general_purpose::STANDARD.encode(ca);
    let path = dir.join("hook.kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: https://127.0.0.1:{port}/authorize\n    certificate-authority-data: {b64}\nusers:\n- name: apiserver\n  user: {{}}\ncontexts:\n- name: hook\n  context: {{cluster: hook, user: apiserver}}\ncurrent-context: hook\n"
    );
    std::fs::write(&path, text).expect("kubeconfig");
    path
}

const HEAD: &str =
    "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n";

fn webhook_entry(kubeconfig: &Path) -> String {
    format!(
        "- type: Webhook\n  name: hook\n  webhook:\n    timeout: 5s\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: NoOpinion\n    connectionInfo: {{type: KubeConfigFile, kubeConfigFile: {}}}\n",
        kubeconfig.display()
    )
}

const RBAC: &str = "- type: RBAC\n  name: rbac\n";

fn reloads(server: &TestServer, status: &str) -> u64 {
    let metrics = server.ok(&["get", "--raw", "/metrics"]);
    let prefix = format!(
        "apiserver_authorization_config_controller_automatic_reloads_total{{status=\"{status}\""
    );
    metrics
        .lines()
        .find(|l| l.starts_with(&prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn authorization_config_changes_apply_without_a_restart(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let tokens = files.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,1\n").expect("token file");
    let config = files.path().join("authz.yaml");
    std::fs::write(&config, format!("{HEAD}{RBAC}")).expect("config");
    let server = backend.start_with(&[
        &format!("--authorization-config={}", config.display()),
        &format!("--token-auth-file={}", tokens.display()),
    ]);
    let refused = as_alice(&server, &["get", "configmaps"]);
    assert!(!refused.status.success(), "RBAC grants alice nothing");
    eventually("the initial load was not counted", WAIT, || {
        reloads(&server, "success") == 1
    });

    // A webhook put ahead of RBAC decides for alice once the file is read.
    let hook = webhook_kubeconfig(files.path());
    std::fs::write(&config, format!("{HEAD}{}{RBAC}", webhook_entry(&hook))).expect("config");
    eventually("the webhook was not picked up", WAIT, || {
        as_alice(&server, &["get", "configmaps"]).status.success()
    });
    assert_eq!(reloads(&server, "success"), 2);

    // Dropping RBAC, which the server started with, is refused: the
    // running chain stays and the failure is counted.
    std::fs::write(&config, format!("{HEAD}{}", webhook_entry(&hook))).expect("config");
    eventually("the refused reload was not counted", WAIT, || {
        reloads(&server, "failure") == 1
    });
    assert!(as_alice(&server, &["get", "configmaps"]).status.success());

    // Back to RBAC alone: alice is refused again, until a binding (read
    // by the RBAC authorizer the server started with) lets her in.
    std::fs::write(&config, format!("{HEAD}{RBAC}")).expect("config");
    eventually("the webhook was not dropped", WAIT, || {
        !as_alice(&server, &["get", "configmaps"]).status.success()
    });
    server.ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
    ]);
    assert!(as_alice(&server, &["get", "configmaps"]).status.success());
}

crate::harness::on_both_backends!(backend: authorization_config_changes_apply_without_a_restart);
