//! Authorization end to end under `--authorization-mode=RBAC`: escalation
//! prevention on RBAC writes (403 with upstream's message, lifted by the
//! `bind` verb), and ClusterRole aggregation extending `view`. Users are
//! impersonated by the admin (`--as`).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Backend, Served, TestServer};

const WRITER: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: rbac-writer
rules:
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["rolebindings", "clusterrolebindings", "clusterroles"]
  verbs: ["create", "get", "list"]
"#;

const BIND_ADMIN: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: bind-cluster-admin
rules:
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["clusterroles"]
  resourceNames: ["cluster-admin"]
  verbs: ["bind"]
"#;

const VIEW_SECRETS: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: view-secrets
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
"#;

fn rbac_server(backend: Backend) -> Served {
    backend.start_with(&["--authorization-mode=RBAC"])
}

fn escalation_is_refused_unless_held_or_bindable(backend: Backend) {
    let s = rbac_server(backend);
    s.apply_yaml(WRITER);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "bob-writer",
        "--clusterrole=rbac-writer",
        "--user=bob",
    ]);
    s.ok(&[
        "create",
        "rolebinding",
        "bob-edit",
        "--clusterrole=edit",
        "--user=bob",
        "-n",
        "default",
    ]);

    // Bob holds edit in default, so he may grant it there, not admin.
    let as_bob = "--as=bob";
    s.ok(&[
        "create",
        "rolebinding",
        "carol-edit",
        "--clusterrole=edit",
        "--user=carol",
        "-n",
        "default",
        as_bob,
    ]);
    let err = s.fails(&[
        "create",
        "rolebinding",
        "carol-admin",
        "--clusterrole=admin",
        "--user=carol",
        "-n",
        "default",
        as_bob,
    ]);
    assert!(
        err.contains("is attempting to grant RBAC permissions"),
        "{err}"
    );

    let create_admin_binding = [
        "create",
        "clusterrolebinding",
        "bob-admin",
        "--clusterrole=cluster-admin",
        "--user=bob",
        as_bob,
    ];
    let err = s.fails(&create_admin_binding);
    assert!(
        err.contains(
            "clusterrolebindings.rbac.authorization.k8s.io \"bob-admin\" is forbidden: \
             user \"bob\" (groups="
        ),
        "{err}"
    );
    assert!(
        err.contains("is attempting to grant RBAC permissions not currently held:\n"),
        "{err}"
    );
    assert!(
        err.contains("{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"),
        "{err}"
    );

    // A ClusterRole with rules bob lacks is refused the same way.
    let err = s.fails(&[
        "create",
        "clusterrole",
        "node-deleter",
        "--verb=delete",
        "--resource=nodes",
        as_bob,
    ]);
    assert!(
        err.contains("{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"delete\"]}"),
        "{err}"
    );

    // The bind verb on cluster-admin lifts the check for bindings.
    s.apply_yaml(BIND_ADMIN);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "bob-bind",
        "--clusterrole=bind-cluster-admin",
        "--user=bob",
    ]);
    s.ok(&create_admin_binding);
}

fn view_has_secrets(s: &TestServer) -> bool {
    let out = s.ok(&["get", "clusterrole", "view", "-o", "json"]);
    let view: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    view["rules"]
        .as_array()
        .is_some_and(|rules| rules.iter().any(|r| r["resources"][0] == "secrets"))
}

fn aggregation_extends_view_with_labelled_roles(backend: Backend) {
    let s = rbac_server(backend);
    s.ok(&[
        "create",
        "rolebinding",
        "bob-view",
        "--clusterrole=view",
        "--user=bob",
        "-n",
        "default",
    ]);
    let can_i = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-n", "default", "--as=bob"]);
        String::from_utf8_lossy(&s.kubectl(&all).stdout)
            .trim()
            .to_owned()
    };
    assert_eq!(can_i(&["list", "pods"]), "yes");
    assert_eq!(can_i(&["delete", "pods"]), "no");
    assert_eq!(can_i(&["list", "secrets"]), "no");
    assert!(!view_has_secrets(&s));

    s.apply_yaml(VIEW_SECRETS);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !view_has_secrets(&s) {
        assert!(
            Instant::now() < deadline,
            "view never aggregated the secrets rule"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(can_i(&["list", "secrets"]), "yes");

    // Removing the label takes the rules away again.
    s.ok(&[
        "label",
        "clusterrole",
        "view-secrets",
        "rbac.authorization.k8s.io/aggregate-to-view-",
    ]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while view_has_secrets(&s) {
        assert!(Instant::now() < deadline, "view kept the secrets rule");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(can_i(&["list", "secrets"]), "no");
}

crate::harness::on_both_backends!(
    backend: escalation_is_refused_unless_held_or_bindable,
    aggregation_extends_view_with_labelled_roles
);
