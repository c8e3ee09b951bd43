//! Authentication end to end: static tokens (`--token-auth-file`), bad
//! tokens and `--anonymous-auth=false` refused with 401, service-account
//! tokens from `kubectl create token` (used, reviewed, refused by RBAC with
//! the service account's name), the issuer discovery documents,
//! impersonation with `--as`, bootstrap tokens; the token webhook, OIDC
//! and front proxies in their own modules.

mod front_proxy;
pub(crate) mod https_server;
mod oidc;
mod webhook;

use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine;
use serde_json::{json, Value};

use crate::harness::{Backend, Served};
use crate::support::kubectl::{stderr, stdout, with_token};

const ALICE_TOKEN: &str = "alice-token-0123456789";
const BOOTSTRAP_TOKEN: &str = "abcdef.0123456789abcdef";

fn json_of(out: &Output) -> Value {
    assert!(out.status.success(), "kubectl failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout).expect("json output")
}

/// A token file with alice (groups dev, ops) beside the server's data.
fn token_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.csv");
    let line = format!("{ALICE_TOKEN},alice,1001,\"dev,ops\"\n");
    std::fs::write(&path, line).expect("token file");
    path
}

fn start_rbac_server(backend: Backend, files: &tempfile::TempDir) -> Served {
    let tokens = token_file(files.path());
    let flag = format!("--token-auth-file={}", tokens.display());
    backend.start_with(&[
        "--authorization-mode=RBAC",
        "--enable-bootstrap-token-auth",
        &flag,
    ])
}

fn static_tokens_bad_tokens_and_impersonation(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let server = start_rbac_server(backend, &files);
    let whoami = json_of(&with_token(
        &server,
        Some(ALICE_TOKEN),
        &["auth", "whoami", "-o", "json"],
    ));
    assert_eq!(
        whoami["status"]["userInfo"],
        json!({"username": "alice", "uid": "1001", "groups": ["dev", "ops", "system:authenticated"]})
    );
    // A token nobody knows is 401, not anonymous.
    let bad = with_token(&server, Some("not-a-token"), &["auth", "whoami"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        stderr(&bad)
    );
    // The admin may impersonate; alice may not.
    let as_jane = server.ok(&[
        "auth",
        "whoami",
        "--as=jane",
        "--as-group=dev",
        "-o",
        "json",
    ]);
    let as_jane: Value = serde_json::from_str(&as_jane).expect("json");
    assert_eq!(
        as_jane["status"]["userInfo"],
        json!({"username": "jane", "groups": ["dev", "system:authenticated"]})
    );
    // (Raw, since kubectl's discovery would be refused first.)
    let pods = "/api/v1/namespaces/default/pods";
    let refused = with_token(
        &server,
        Some(ALICE_TOKEN),
        &["get", "--raw", pods, "--as=jane"],
    );
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains(
            "users \"jane\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        ),
        "{}",
        stderr(&refused)
    );
    // Anonymous requests are allowed by default (and RBAC decides).
    // (Basic credentials, which no authenticator reads, keep kubectl from
    // prompting for a user name.)
    let basic = ["--username=nobody", "--password=x"];
    let anonymous = with_token(
        &server,
        None,
        &[&basic[..], &["get", "--raw", "/version"]].concat(),
    );
    assert!(anonymous.status.success(), "{}", stderr(&anonymous));
}

fn anonymous_auth_false_refuses_requests_without_credentials(backend: Backend) {
    let server = backend.start_with(&["--anonymous-auth=false"]);
    // Basic credentials, which no authenticator reads, keep kubectl from
    // prompting for a user name.
    let out = with_token(
        &server,
        None,
        &["--username=nobody", "--password=x", "auth", "whoami"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        stderr(&out)
    );
    // The admin's certificate still works.
    server.ok(&["get", "namespaces"]);
}

/// The claims of a JWT, unverified.
fn jwt_part(token: &str, index: usize) -> Value {
    let part = token.split('.').nth(index).expect("jwt part");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("json")
}

fn service_account_tokens_from_kubectl_create_token(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let server = start_rbac_server(backend, &files);
    // No controller creates the default service account here.
    let _ = server.kubectl(&["create", "serviceaccount", "default", "-n", "default"]);
    let token = server.ok(&["create", "token", "default", "-n", "default"]);
    let token = token.trim();
    let claims = jwt_part(token, 1);
    assert_eq!(claims["sub"], "system:serviceaccount:default:default");
    assert_eq!(
        claims["iss"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(claims["kubernetes.io"]["namespace"], "default");
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 3600);

    let whoami = json_of(&with_token(
        &server,
        Some(token),
        &["auth", "whoami", "-o", "json"],
    ));
    let user = &whoami["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:default");
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let denied = with_token(&server, Some(token), &["get", "pods", "-n", "default"]);
    assert!(
        stderr(&denied).contains(
            "pods is forbidden: User \"system:serviceaccount:default:default\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
        ),
        "{}",
        stderr(&denied)
    );

    // TokenReview sees the same user; a tampered token is not authenticated.
    let review = |t: &str| {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": t}});
        let out = server.kubectl_stdin(
            &["create", "--validate=false", "-f", "-", "-o", "json"],
            &body.to_string(),
        );
        json_of(&out)
    };
    let status = review(token)["status"].clone();
    assert_eq!(status["authenticated"], true);
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:default"
    );
    assert_eq!(
        status["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let tampered = format!("{}x", token);
    let status = review(&tampered)["status"].clone();
    assert!(status.get("authenticated").is_none_or(|a| a == false));
    assert!(status["error"].as_str().is_some_and(|e| !e.is_empty()));

    // Deleting the service account invalidates its tokens (after the
    // success cache of up to ten seconds).
    server.ok(&["delete", "serviceaccount", "default", "-n", "default"]);
    std::thread::sleep(std::time::Duration::from_secs(11));
    let gone = with_token(&server, Some(token), &["auth", "whoami"]);
    assert!(stderr(&gone).contains("Unauthorized"), "{}", stderr(&gone));
}

fn issuer_discovery_documents_publish_the_signing_key(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let server = start_rbac_server(backend, &files);
    let config: Value =
        serde_json::from_str(&server.ok(&["get", "--raw", "/.well-known/openid-configuration"]))
            .expect("json");
    assert_eq!(
        config["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert!(config["jwks_uri"]
        .as_str()
        .is_some_and(|u| u.starts_with("https://") && u.ends_with("/openid/v1/jwks")));
    assert_eq!(config["response_types_supported"], json!(["id_token"]));
    assert_eq!(config["subject_types_supported"], json!(["public"]));
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );

    let jwks: Value =
        serde_json::from_str(&server.ok(&["get", "--raw", "/openid/v1/jwks"])).expect("json");
    let key = &jwks["keys"][0];
    assert_eq!(key["kty"], "EC");
    assert_eq!(key["crv"], "P-256");
    assert_eq!(key["use"], "sig");
    // Tokens name the published key.
    let _ = server.kubectl(&["create", "serviceaccount", "reader", "-n", "default"]);
    let token = server.ok(&["create", "token", "reader", "-n", "default"]);
    assert_eq!(jwt_part(token.trim(), 0)["kid"], key["kid"]);
    // Service accounts may read the documents (system:service-account-issuer-discovery).
    let out = with_token(
        &server,
        Some(token.trim()),
        &["get", "--raw", "/openid/v1/jwks"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).expect("json"),
        jwks
    );
}

fn bootstrap_tokens_authenticate_while_their_secret_allows(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let server = start_rbac_server(backend, &files);
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
        "data": {
            "token-id": b64("abcdef"),
            "token-secret": b64("0123456789abcdef"),
            "usage-bootstrap-authentication": b64("true"),
            "auth-extra-groups": b64("system:bootstrappers:kubeadm:default-node-token"),
        },
    });
    server.apply_yaml(&secret.to_string());
    let whoami = json_of(&with_token(
        &server,
        Some(BOOTSTRAP_TOKEN),
        &["auth", "whoami", "-o", "json"],
    ));
    assert_eq!(
        whoami["status"]["userInfo"],
        json!({"username": "system:bootstrap:abcdef", "groups": [
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
            "system:authenticated",
        ]})
    );
    // The wrong secret half is refused.
    let wrong = with_token(
        &server,
        Some("abcdef.ffffffffffffffff"),
        &["auth", "whoami"],
    );
    assert!(
        stderr(&wrong).contains("Unauthorized"),
        "{}",
        stderr(&wrong)
    );
    assert!(stdout(&wrong).is_empty());
}

crate::harness::on_both_backends!(
    backend: anonymous_auth_false_refuses_requests_without_credentials,
    static_tokens_bad_tokens_and_impersonation,
    service_account_tokens_from_kubectl_create_token,
    issuer_discovery_documents_publish_the_signing_key,
    bootstrap_tokens_authenticate_while_their_secret_allows
);
