//! Secure by default: started without flags the server authorizes with
//! Node,RBAC, so anonymous requests reach only what upstream's bootstrap
//! role `system:public-info-viewer` grants and service accounts only what
//! they are bound to; `--anonymous-auth` and `--authorization-mode` still
//! take explicit values; the data directory, keys and admin kubeconfig are
//! private to their owner; startup states the effective configuration.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::harness::{Backend, TestServer};

const FORBIDDEN_ANONYMOUS: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"kind":"namespaces"},"code":403}"#;
const FORBIDDEN_SECRETS: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets is forbidden: User \"system:serviceaccount:default:default\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\"","reason":"Forbidden","details":{"kind":"secrets"},"code":403}"#;
const UNAUTHORIZED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;
const PUBLIC_INFO: [&str; 4] = ["/healthz", "/livez", "/readyz", "/version"];

/// GETs `path` over TLS trusting the server's CA, without a client
/// certificate; `token` is sent as a bearer token. Returns code and body.
fn get(s: &TestServer, path: &str, token: Option<&str>) -> (u16, String) {
    let ca = s.dir.path().join("pki").join("ca.crt");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--cacert"])
        .arg(ca)
        .args(["-w", "\n%{http_code}"]);
    if let Some(token) = token {
        cmd.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    let out = cmd
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.trim().to_owned())
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn server_log(s: &TestServer) -> String {
    std::fs::read_to_string(s.dir.path().join("server.log")).expect("server log")
}

fn anonymous_reaches_only_public_info(s: &TestServer) {
    let (code, body) = get(s, "/api/v1/namespaces", None);
    assert_eq!((code, body.as_str()), (403, FORBIDDEN_ANONYMOUS));
    for path in PUBLIC_INFO {
        let (code, body) = get(s, path, None);
        assert_eq!(code, 200, "{path}: {body}");
    }
    let (code, body) = get(s, "/apis", None);
    assert_eq!(code, 403, "discovery is for authenticated users: {body}");
}

fn service_accounts_cannot_read_secrets(s: &TestServer) {
    s.ok(&[
        "create",
        "secret",
        "generic",
        "db",
        "--from-literal=password=x",
    ]);
    // The default service account is created by a controller.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let token = loop {
        let out = s.kubectl(&["create", "token", "default"]);
        if out.status.success() || std::time::Instant::now() > deadline {
            break String::from_utf8_lossy(&out.stdout).trim().to_owned();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(!token.is_empty(), "kubectl create token default failed");
    let (code, body) = get(s, "/api/v1/namespaces/default/secrets", Some(&token));
    assert_eq!((code, body.as_str()), (403, FORBIDDEN_SECRETS));
    // Authenticated, it may still read the public information.
    assert_eq!(get(s, "/version", Some(&token)).0, 200);
    assert!(s
        .ok(&["get", "secrets", "-o", "name"])
        .contains("secret/db"));
}

/// Loosened modes are tightened again at startup, which names the
/// effective security configuration.
fn files_are_private_and_startup_says_so(backend: Backend) {
    let mut s = backend.start();
    let dir = s.dir.path().to_path_buf();
    let pki = dir.join("pki");
    let loosen = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    loosen(&dir, 0o755);
    loosen(&pki, 0o755);
    loosen(&s.kubeconfig, 0o644);
    loosen(&pki.join("admin.key"), 0o644);
    s.restart();
    assert_eq!(mode(&dir), 0o700, "data dir");
    assert_eq!(mode(&pki), 0o700, "pki dir");
    assert_eq!(mode(&s.kubeconfig), 0o600, "admin kubeconfig");
    for key in ["ca.key", "apiserver.key", "admin.key", "sa.key"] {
        assert_eq!(mode(&pki.join(key)), 0o600, "{key}");
    }
    let line = format!(
        "Security: listening on 127.0.0.1:{}; authorization-mode=Node,RBAC; anonymous-auth=true; \
         client-ca-file={}; admin kubeconfig={} (user kubernetes-admin, group system:masters)",
        s.port,
        pki.join("ca.crt").display(),
        s.kubeconfig.display()
    );
    let log = server_log(&s);
    assert!(
        log.lines().any(|l| l == line),
        "{line:?} missing from:\n{log}"
    );
}

fn explicit_flags_are_honoured(backend: Backend) {
    let closed = backend.start_with(&["--anonymous-auth=false"]);
    let (code, body) = get(&closed, "/api/v1/namespaces", None);
    assert_eq!((code, body.as_str()), (401, UNAUTHORIZED));
    assert_eq!(get(&closed, "/healthz", None).0, 401);
    assert!(server_log(&closed).contains("; anonymous-auth=false;"));
    drop(closed);

    let open = backend.start_with(&["--authorization-mode=AlwaysAllow"]);
    let (code, body) = get(&open, "/api/v1/namespaces", None);
    assert_eq!(code, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(list["kind"], "NamespaceList", "{body}");
    assert!(server_log(&open).contains("; authorization-mode=AlwaysAllow;"));
}

crate::harness::on_both_backends!(
    anonymous_reaches_only_public_info,
    service_accounts_cannot_read_secrets;
    backend: files_are_private_and_startup_says_so,
    explicit_flags_are_honoured
);
