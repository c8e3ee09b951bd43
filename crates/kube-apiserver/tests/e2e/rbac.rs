//! `--authorization-mode=RBAC`: the admin (group system:masters) may do
//! everything through the bootstrap cluster-admin binding; a user with a
//! client certificate of the cluster CA and no binding is refused with
//! upstream's message until a RoleBinding grants him a Role.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use base64::Engine;
use rcgen::{CertificateParams, DistinguishedName, DnType, Issuer, KeyPair};

use crate::harness::TestServer;

/// Issues a client certificate for `user` from the server's CA and writes
/// a kubeconfig like the admin's with it.
fn kubeconfig_for(server: &TestServer, user: &str) -> PathBuf {
    let pki = server.dir.path().join("pki");
    let ca_cert = std::fs::read_to_string(pki.join("ca.crt")).expect("ca.crt");
    let ca_key = std::fs::read_to_string(pki.join("ca.key")).expect("ca.key");
    let issuer = Issuer::from_ca_cert_pem(&ca_cert, KeyPair::from_pem(&ca_key).expect("CA key"))
        .expect("CA");
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, user);
    params.distinguished_name = subject;
    let cert = params.signed_by(&key, &issuer).expect("signed");

    let admin = std::fs::read_to_string(&server.kubeconfig).expect("admin kubeconfig");
    let mut config: serde_yaml::Value = serde_yaml::from_str(&admin).expect("kubeconfig yaml");
    let b64 = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
    let auth = &mut config["users"][0]["user"];
    auth["client-certificate-data"] = b64(cert.pem()).into();
    auth["client-key-data"] = b64(key.serialize_pem()).into();
    let path = server.dir.path().join(format!("{user}.kubeconfig"));
    std::fs::write(&path, serde_yaml::to_string(&config).expect("yaml")).expect("write");
    path
}

fn as_user(server: &TestServer, kubeconfig: &Path, args: &[&str]) -> Output {
    let flag = format!("--kubeconfig={}", kubeconfig.display());
    let mut all = vec![flag.as_str()];
    all.extend_from_slice(args);
    server.kubectl(&all)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn admin_is_allowed_everything() {
    let server = TestServer::start_with(&["--authorization-mode=RBAC"]);
    assert_eq!(server.ok(&["auth", "can-i", "*", "*"]).trim(), "yes");
    assert_eq!(
        server.ok(&["auth", "can-i", "delete", "nodes"]).trim(),
        "yes"
    );
    server.ok(&["create", "configmap", "settings", "--from-literal=a=b"]);
    server.ok(&["get", "configmaps", "settings", "-n", "default"]);
    let roles = server.ok(&["get", "clusterroles", "-o", "name"]);
    for role in ["cluster-admin", "admin", "edit", "view", "system:discovery"] {
        assert!(roles.contains(&format!("clusterrole.rbac.authorization.k8s.io/{role}\n")));
    }
    server.ok(&[
        "get",
        "role",
        "-n",
        "kube-system",
        "extension-apiserver-authentication-reader",
    ]);
    // The bootstrap binding grants system:masters cluster-admin, so the
    // admin's rules are listed (the privileged-group check lists none).
    let subjects = server.ok(&[
        "get",
        "clusterrolebinding",
        "cluster-admin",
        "-o",
        "jsonpath={.subjects[*].name}",
    ]);
    assert_eq!(subjects, "system:masters");
    let rules = server.ok(&["auth", "can-i", "--list"]);
    assert!(rules.contains("*.*"), "{rules}");
}

#[test]
fn aggregated_roles_follow_the_roles_they_select() {
    let server = TestServer::start_with(&["--authorization-mode=RBAC"]);
    server.apply_yaml(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-viewer
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: ["example.com"]
  resources: ["widgets"]
  verbs: ["get", "list"]
"#,
    );
    // view aggregates it; edit aggregates view; admin aggregates edit.
    let deadline = Instant::now() + Duration::from_secs(10);
    for role in ["view", "edit", "admin"] {
        loop {
            let rules = server.ok(&["get", "clusterrole", role, "-o", "jsonpath={.rules}"]);
            if rules.contains("widgets") {
                break;
            }
            assert!(Instant::now() < deadline, "{role} never aggregated widgets");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    server.ok(&["delete", "clusterrole", "widget-viewer"]);
    loop {
        let rules = server.ok(&["get", "clusterrole", "admin", "-o", "jsonpath={.rules}"]);
        if !rules.contains("widgets") {
            break;
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(5),
            "admin kept widgets"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_user_needs_a_binding() {
    let server = TestServer::start_with(&["--authorization-mode=RBAC"]);
    let bob = kubeconfig_for(&server, "bob");

    let refused = as_user(&server, &bob, &["get", "configmaps", "-n", "default"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        ),
        "{stderr}"
    );
    // system:basic-user lets every authenticated user ask.
    let can = as_user(&server, &bob, &["auth", "can-i", "list", "configmaps"]);
    assert_eq!(stdout(&can), "no");
    assert_eq!(
        stdout(&as_user(
            &server,
            &bob,
            &[
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}"
            ]
        )),
        "bob"
    );

    // Discovery is open to every authenticated user, metrics are not.
    let version = as_user(&server, &bob, &["get", "--raw", "/version"]);
    assert!(version.status.success());
    let metrics = as_user(&server, &bob, &["get", "--raw", "/metrics"]);
    let stderr = String::from_utf8_lossy(&metrics.stderr);
    assert!(stderr.contains("Forbidden"), "{stderr}");

    server.ok(&[
        "create",
        "role",
        "cm-reader",
        "--verb=get,list",
        "--resource=configmaps",
    ]);
    server.ok(&[
        "create",
        "rolebinding",
        "bob-reads",
        "--role=cm-reader",
        "--user=bob",
    ]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = as_user(&server, &bob, &["get", "configmaps", "-n", "default"]);
        if out.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the binding never took effect: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let can = as_user(&server, &bob, &["auth", "can-i", "list", "configmaps"]);
    assert_eq!(stdout(&can), "yes");
    // The binding is namespaced and the role read-only.
    let elsewhere = as_user(&server, &bob, &["get", "configmaps", "-n", "kube-system"]);
    assert!(!elsewhere.status.success());
    let write = as_user(
        &server,
        &bob,
        &["create", "configmap", "x", "-n", "default"],
    );
    assert!(!write.status.success());

    // A SubjectAccessReview asks about bob from the admin's side.
    let review = |namespace: &str| {
        let sar = format!(
            r#"{{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {{"user": "bob", "resourceAttributes":
                {{"namespace": "{namespace}", "verb": "list", "resource": "configmaps"}}}}}}"#
        );
        let out = server.kubectl_stdin(
            &[
                "create",
                "--validate=false",
                "-f",
                "-",
                "-o",
                "jsonpath={.status.allowed}",
            ],
            &sar,
        );
        stdout(&out)
    };
    assert_eq!(review("default"), "true");
    assert_eq!(review("kube-system"), "false");
}
