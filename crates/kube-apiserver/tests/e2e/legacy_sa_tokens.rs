//! Legacy service-account tokens end to end: a `kubernetes.io/service-account-token`
//! secret created with kubectl gets its token, CA and namespace from the
//! in-process tokens controller; the token authenticates as the service
//! account and stamps the secret's last-used label; a secret marked
//! invalid, or deleted, no longer authenticates; deleting the account
//! deletes its token secrets.

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

use crate::harness::TestServer;
use crate::support::kubectl::with_token;

fn secret_yaml(name: &str, account: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: {name}
  namespace: default
  annotations:
    kubernetes.io/service-account.name: {account}
  labels: {{{labels}}}
type: kubernetes.io/service-account-token
"
    )
}

fn secret(server: &TestServer, name: &str) -> Value {
    let out = server.ok(&["get", "secret", name, "-o", "json"]);
    serde_json::from_str(&out).expect("secret json")
}

fn decoded(secret: &Value, key: &str) -> String {
    let encoded = secret["data"][key].as_str().unwrap_or("");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .expect("base64 data");
    String::from_utf8(bytes).expect("utf-8 data")
}

/// Waits for the tokens controller to fill the secret's token.
fn wait_token(server: &TestServer, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = secret(server, name);
        if s["data"]["token"].is_string() {
            return s;
        }
        assert!(Instant::now() < deadline, "no token in {name}: {s}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn whoami(server: &TestServer, token: &str) -> Result<Value, String> {
    let out = with_token(server, Some(token), &["auth", "whoami", "-o", "json"]);
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("whoami json"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn secret_tokens_are_filled_used_tracked_and_revoked(server: &TestServer) {
    server.ok(&["create", "serviceaccount", "builder"]);
    server.apply_yaml(&secret_yaml("builder-token", "builder", ""));
    let filled = wait_token(server, "builder-token");
    assert_eq!(decoded(&filled, "namespace"), "default");
    let ca = std::fs::read_to_string(server.dir.path().join("pki").join("ca.crt")).expect("ca");
    assert_eq!(decoded(&filled, "ca.crt"), ca);
    let sa = server.ok(&["get", "sa", "builder", "-o", "jsonpath={.metadata.uid}"]);
    assert_eq!(
        filled["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        sa.as_str()
    );
    let token = decoded(&filled, "token");

    let who = whoami(server, &token).expect("the token authenticates");
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:builder"
    );
    assert_eq!(who["status"]["userInfo"]["uid"], sa.as_str());
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let labels = &secret(server, "builder-token")["metadata"]["labels"];
    assert_eq!(
        labels["kubernetes.io/legacy-token-last-used"],
        today.as_str()
    );

    // A secret marked invalid refuses its token until the label goes.
    server.apply_yaml(&secret_yaml(
        "marked-token",
        "builder",
        "kubernetes.io/legacy-token-invalid-since: \"2024-01-01\"",
    ));
    let marked = decoded(&wait_token(server, "marked-token"), "token");
    let refused = whoami(server, &marked).expect_err("a marked token is refused");
    assert!(refused.contains("Unauthorized"), "{refused}");
    server.ok(&[
        "label",
        "secret",
        "marked-token",
        "kubernetes.io/legacy-token-invalid-since-",
    ]);
    whoami(server, &marked).expect("unmarked, the token works again");

    // Deleting the secret revokes the token once the success cache (10s,
    // as upstream) has expired.
    server.ok(&["delete", "secret", "builder-token"]);
    std::thread::sleep(Duration::from_secs(11));
    let refused = whoami(server, &token).expect_err("a deleted secret's token is refused");
    assert!(refused.contains("Unauthorized"), "{refused}");

    // Deleting the account deletes its remaining token secrets.
    server.ok(&["delete", "serviceaccount", "builder"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server
        .kubectl(&["get", "secret", "marked-token"])
        .status
        .success()
    {
        assert!(
            Instant::now() < deadline,
            "the token secret outlived its account"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn token_secrets_of_missing_accounts_are_deleted(server: &TestServer) {
    server.apply_yaml(&secret_yaml("orphan-token", "nobody", ""));
    let deadline = Instant::now() + Duration::from_secs(20);
    while server
        .kubectl(&["get", "secret", "orphan-token"])
        .status
        .success()
    {
        assert!(
            Instant::now() < deadline,
            "the orphan token secret was kept"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

crate::harness::on_both_backends!(
    secret_tokens_are_filled_used_tracked_and_revoked,
    token_secrets_of_missing_accounts_are_deleted
);
