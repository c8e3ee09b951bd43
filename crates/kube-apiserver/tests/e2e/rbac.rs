//! `--authorization-mode=RBAC`: the admin (group system:masters) may do
//! everything through the bootstrap cluster-admin binding; a user with a
//! client certificate of the cluster CA and no binding is refused with
//! upstream's message until a RoleBinding grants him a Role; a matrix of
//! users × verbs × resources × namespaces (bindings of view, edit, admin, a
//! Role and an aggregated ClusterRole) answered by SubjectAccessReviews and
//! by the requests themselves, and escalation attempts through bindings
//! and roles.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use base64::Engine;
use rcgen::{CertificateParams, DistinguishedName, DnType, Issuer, KeyPair};

use crate::harness::{Backend, TestServer};

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

fn admin_is_allowed_everything(backend: Backend) {
    let server = backend.start_with(&["--authorization-mode=RBAC"]);
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

fn aggregated_roles_follow_the_roles_they_select(backend: Backend) {
    let server = backend.start_with(&["--authorization-mode=RBAC"]);
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

fn a_user_needs_a_binding(backend: Backend) {
    let server = backend.start_with(&["--authorization-mode=RBAC"]);
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

/// The users of the matrix; `fay` is asked about as a member of `auditors`.
const USERS: [&str; 6] = ["ann", "ben", "cat", "dan", "eve", "fay"];
const VERBS: [&str; 5] = ["get", "list", "watch", "create", "delete"];
/// (API group, resource).
const RESOURCES: [(&str, &str); 5] = [
    ("", "pods"),
    ("", "configmaps"),
    ("", "secrets"),
    ("apps", "deployments"),
    ("rbac.authorization.k8s.io", "roles"),
];
const NAMESPACES: [&str; 2] = ["alpha", "beta"];

/// Who may do what after [`MATRIX_GRANTS`]: view cluster-wide (ann), edit
/// in alpha (ben), admin in beta (cat), a Role reading configmaps in alpha
/// (dan), nothing (eve), and an aggregated ClusterRole reading secrets
/// bound to the group auditors (fay).
fn expected(user: &str, verb: &str, resource: &str, namespace: &str) -> bool {
    let read = matches!(verb, "get" | "list" | "watch");
    match user {
        "ann" => read && !matches!(resource, "secrets" | "roles"),
        "ben" => namespace == "alpha" && resource != "roles",
        "cat" => namespace == "beta",
        "dan" => namespace == "alpha" && resource == "configmaps" && matches!(verb, "get" | "list"),
        "fay" => resource == "secrets" && matches!(verb, "get" | "list"),
        _ => false,
    }
}

const MATRIX_GRANTS: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: alpha}
- apiVersion: v1
  kind: Namespace
  metadata: {name: beta}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRoleBinding
  metadata: {name: ann-view}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ann}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: ben-edit, namespace: alpha}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ben}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: cat-admin, namespace: beta}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: cat}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: Role
  metadata: {name: cm-reader, namespace: alpha}
  rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: dan-reads, namespace: alpha}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: dan}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata: {name: auditor}
  aggregationRule:
    clusterRoleSelectors: [{matchLabels: {example.com/aggregate-to-auditor: "true"}}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata:
    name: auditor-secrets
    labels: {example.com/aggregate-to-auditor: "true"}
  rules: [{apiGroups: [""], resources: [secrets], verbs: [get, list]}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRoleBinding
  metadata: {name: auditors}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: auditor}
  subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: auditors}]
"#;

/// One SubjectAccessReview per cell, in `cells` order.
fn reviews(cells: &[(&str, &str, (&str, &str), &str)]) -> String {
    let items: Vec<serde_json::Value> = cells
        .iter()
        .map(|&(user, verb, (group, resource), namespace)| {
            let groups: &[&str] = if user == "fay" { &["auditors"] } else { &[] };
            serde_json::json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": user,
                    "groups": groups,
                    "resourceAttributes": {
                        "namespace": namespace, "verb": verb,
                        "group": group, "resource": resource,
                    },
                },
            })
        })
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// Asks the server about every cell at once; its answers in order.
fn decisions(server: &TestServer, cells: &[(&str, &str, (&str, &str), &str)]) -> Vec<bool> {
    let out = server.kubectl_stdin(&["create", "-f", "-", "-o", "json"], &reviews(cells));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // kubectl prints the created reviews one after another.
    let items: Vec<serde_json::Value> = serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("json");
    assert_eq!(items.len(), cells.len(), "one answer per review");
    items
        .iter()
        .map(|review| review["status"]["allowed"] == true)
        .collect()
}

/// Runs kubectl as `user` (impersonated by the admin; fay in auditors).
fn as_impersonated(server: &TestServer, user: &str, args: &[&str]) -> Output {
    let flag = format!("--as={user}");
    let mut all = vec![flag.as_str()];
    if user == "fay" {
        all.push("--as-group=auditors");
    }
    all.extend_from_slice(args);
    server.kubectl(&all)
}

fn authorization_matrix_of_users_verbs_resources_and_namespaces(backend: Backend) {
    let server = backend.start_with(&["--authorization-mode=RBAC"]);
    server.apply_yaml(MATRIX_GRANTS);
    let mut cells = Vec::new();
    for user in USERS {
        for verb in VERBS {
            for resource in RESOURCES {
                for namespace in NAMESPACES {
                    cells.push((user, verb, resource, namespace));
                }
            }
        }
    }
    // The aggregated role is filled in by a controller: wait for it.
    let probe = [("fay", "get", ("", "secrets"), "alpha")];
    let deadline = Instant::now() + Duration::from_secs(10);
    while decisions(&server, &probe) != [true] {
        assert!(Instant::now() < deadline, "auditor never aggregated");
        std::thread::sleep(Duration::from_millis(100));
    }
    let wrong: Vec<String> = cells
        .iter()
        .zip(decisions(&server, &cells))
        .filter(|(&(user, verb, (_, resource), ns), got)| {
            *got != expected(user, verb, resource, ns)
        })
        .map(|((user, verb, (_, resource), ns), got)| {
            format!("{user} {verb} {resource} in {ns}: allowed={got}")
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");

    // Requests themselves are decided the same way.
    for user in USERS {
        for (args, verb, resource, ns) in [
            (
                &["get", "configmaps", "-n", "alpha"][..],
                "list",
                "configmaps",
                "alpha",
            ),
            (&["get", "secrets", "-n", "beta"], "list", "secrets", "beta"),
            (
                &["create", "configmap", "by-user", "-n", "beta"],
                "create",
                "configmaps",
                "beta",
            ),
            (&["get", "roles", "-n", "beta"], "list", "roles", "beta"),
        ] {
            let out = as_impersonated(&server, user, args);
            let want = expected(user, verb, resource, ns);
            assert_eq!(
                out.status.success(),
                want,
                "{user} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if !want {
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(stderr.contains("is forbidden: User \""), "{stderr}");
            }
            if want && verb == "create" {
                server.ok(&["delete", "configmap", "by-user", "-n", "beta"]);
            }
        }
    }
    escalation_attempts(&server);
}

/// cat (admin in beta) may grant what he holds there and nothing more.
fn escalation_attempts(server: &TestServer) {
    let cat = |args: &[&str]| as_impersonated(server, "cat", args);
    let refused = |out: Output, text: &str| {
        assert!(!out.status.success(), "{text}: allowed");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(stderr.contains(text), "{stderr}");
    };
    let escalation = "is attempting to grant RBAC permissions not currently held";
    let bind = |name: &str, role: &str, ns: &str| {
        cat(&[
            "create",
            "rolebinding",
            name,
            &format!("--clusterrole={role}"),
            "--user=eve",
            "-n",
            ns,
        ])
    };
    refused(bind("eve-root", "cluster-admin", "beta"), escalation);
    refused(
        bind("eve-edit", "edit", "alpha"),
        "User \"cat\" cannot create resource \"rolebindings\"",
    );
    refused(
        cat(&[
            "create",
            "role",
            "everything",
            "--verb=*",
            "--resource=*",
            "-n",
            "beta",
        ]),
        escalation,
    );
    refused(
        cat(&[
            "create",
            "clusterrolebinding",
            "eve-view",
            "--clusterrole=view",
            "--user=eve",
        ]),
        "User \"cat\" cannot create resource \"clusterrolebindings\"",
    );
    // Within what he holds: a role, a binding of it and of admin itself.
    assert!(cat(&[
        "create",
        "role",
        "cm-writer",
        "--verb=create",
        "--resource=configmaps",
        "-n",
        "beta"
    ])
    .status
    .success());
    let granted = bind("eve-admin", "admin", "beta");
    assert!(
        granted.status.success(),
        "{}",
        String::from_utf8_lossy(&granted.stderr)
    );
    let now = [
        ("eve", "create", ("", "secrets"), "beta"),
        ("eve", "create", ("", "secrets"), "alpha"),
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    while decisions(server, &now) != [true, false] {
        assert!(Instant::now() < deadline, "eve's binding never took effect");
        std::thread::sleep(Duration::from_millis(100));
    }
}

crate::harness::on_both_backends!(
    backend: admin_is_allowed_everything,
    aggregated_roles_follow_the_roles_they_select,
    a_user_needs_a_binding,
    authorization_matrix_of_users_verbs_resources_and_namespaces
);
