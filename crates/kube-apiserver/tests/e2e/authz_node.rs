//! The Node authorizer end to end (`--authorization-mode=Node,RBAC`): a
//! kubelet's client certificate (CN `system:node:n1`, O `system:nodes`,
//! signed by the server's CA) reads the secrets of pods bound to n1 but not
//! those of pods on n2, reads and updates its own Node but not another,
//! lists pods only with its node's field selector, and falls through to
//! RBAC for everything else; the `system:node` ClusterRole is bootstrapped
//! and bound to no one. A kubelet also gets the service accounts of its
//! pods by name (KubeletServiceAccountTokenForCredentialProviders, on by
//! default), and no other.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::harness::{Backend, TestServer};
use crate::support::kubectl::stderr;

fn succeeds(out: &Output) -> String {
    assert!(out.status.success(), "kubectl failed: {}", stderr(out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn forbidden(out: &Output, message: &str) {
    assert!(!out.status.success(), "kubectl succeeded");
    assert!(
        stderr(out).contains(&format!("Error from server (Forbidden): {message}")),
        "{}",
        stderr(out)
    );
}

fn objects(node_dir: &Path) -> PathBuf {
    let mut yaml = String::new();
    for node in ["n1", "n2"] {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\n\
             ---\napiVersion: v1\nkind: Secret\nmetadata: {{name: secret-{node}, namespace: default}}\nstringData: {{k: v}}\n\
             ---\napiVersion: v1\nkind: Pod\nmetadata: {{name: pod-{node}, namespace: default}}\n\
             spec:\n  nodeName: {node}\n  containers: [{{name: c, image: busybox}}]\n  volumes: [{{name: s, secret: {{secretName: secret-{node}}}}}]\n"
        ));
    }
    let path = node_dir.join("objects.yaml");
    std::fs::write(&path, yaml).expect("objects");
    path
}

fn kubelets_reach_what_their_pods_use_and_their_own_node(backend: Backend) {
    let server = backend.start_with(&["--authorization-mode=Node,RBAC"]);
    let file = objects(server.dir.path());
    server.ok(&["create", "-f", &file.display().to_string()]);
    let n1 = server.client_cert("system:node:n1", "system:nodes");

    let secret =
        succeeds(&server.kubectl_as_cert(&n1, &["get", "secret", "secret-n1", "-o", "name"]));
    assert_eq!(secret.trim(), "secret/secret-n1");
    forbidden(
        &server.kubectl_as_cert(&n1, &["get", "secret", "secret-n2"]),
        "secrets \"secret-n2\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object",
    );

    succeeds(&server.kubectl_as_cert(&n1, &["label", "node", "n1", "ready=yes"]));
    let labels = server.ok(&[
        "get",
        "node",
        "n1",
        "-o",
        "jsonpath={.metadata.labels.ready}",
    ]);
    assert_eq!(labels, "yes");
    forbidden(
        &server.kubectl_as_cert(&n1, &["label", "node", "n2", "ready=yes"]),
        "nodes \"n2\" is forbidden: User \"system:node:n1\" cannot get resource \"nodes\" in API group \"\" at the cluster scope: node 'n1' cannot read 'n2', only its own Node object",
    );

    let pods = succeeds(&server.kubectl_as_cert(
        &n1,
        &[
            "get",
            "pods",
            "-A",
            "--field-selector=spec.nodeName=n1",
            "-o",
            "name",
        ],
    ));
    assert_eq!(pods.trim(), "pod/pod-n1");
    forbidden(
        &server.kubectl_as_cert(&n1, &["get", "pods", "-A"]),
        "pods is forbidden: User \"system:node:n1\" cannot list resource \"pods\" in API group \"\" at the cluster scope: can only list/watch pods with spec.nodeName field selector",
    );

    // What the Node authorizer has no opinion on, RBAC decides.
    forbidden(
        &server.kubectl_as_cert(&n1, &["get", "deployments"]),
        "deployments.apps is forbidden: User \"system:node:n1\" cannot list resource \"deployments\" in API group \"apps\" in the namespace \"default\"",
    );
    server.ok(&[
        "create",
        "clusterrolebinding",
        "n1-view",
        "--clusterrole=view",
        "--user=system:node:n1",
    ]);
    succeeds(&server.kubectl_as_cert(&n1, &["get", "deployments"]));

    // The bootstrap policy has the node role, bound to no one.
    let role = server.ok(&[
        "get",
        "clusterrolebinding",
        "system:node",
        "-o",
        "jsonpath={.roleRef.name}/{.subjects}",
    ]);
    assert_eq!(role, "system:node/");
    let rules = server.ok(&[
        "get",
        "clusterrole",
        "system:node",
        "-o",
        "jsonpath={.rules[*].resources}",
    ]);
    assert!(rules.contains("\"serviceaccounts/token\""), "{rules}");
}

/// Nodes n1 and n2, each with a pod using its own service account.
fn service_account_objects(dir: &Path) -> PathBuf {
    let mut yaml = String::new();
    for node in ["n1", "n2"] {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\n\
             ---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: sa-{node}, namespace: default}}\n\
             ---\napiVersion: v1\nkind: Pod\nmetadata: {{name: pod-{node}, namespace: default}}\n\
             spec:\n  nodeName: {node}\n  serviceAccountName: sa-{node}\n  containers: [{{name: c, image: busybox}}]\n"
        ));
    }
    let path = dir.join("service-accounts.yaml");
    std::fs::write(&path, yaml).expect("objects");
    path
}

/// Creates the objects above; returns n1's client certificate.
fn with_service_accounts(server: &TestServer) -> (PathBuf, PathBuf) {
    let file = service_account_objects(server.dir.path());
    server.ok(&["create", "-f", &file.display().to_string()]);
    server.client_cert("system:node:n1", "system:nodes")
}

const SA_FORBIDDEN: &str = "User \"system:node:n1\" cannot get resource \"serviceaccounts\" in API group \"\" in the namespace \"default\"";

fn kubelets_get_the_service_accounts_of_their_pods(backend: Backend) {
    let server = backend.start_with(&["--authorization-mode=Node,RBAC"]);
    let n1 = with_service_accounts(&server);
    let get =
        |name: &str| server.kubectl_as_cert(&n1, &["get", "serviceaccount", name, "-o", "name"]);
    assert_eq!(succeeds(&get("sa-n1")).trim(), "serviceaccount/sa-n1");
    forbidden(
        &get("sa-n2"),
        &format!("serviceaccounts \"sa-n2\" is forbidden: {SA_FORBIDDEN}: no relationship found between node 'n1' and this object"),
    );
    forbidden(
        &server.kubectl_as_cert(&n1, &["get", "serviceaccounts"]),
        "serviceaccounts is forbidden: User \"system:node:n1\" cannot list resource \"serviceaccounts\" in API group \"\" in the namespace \"default\": can only create tokens for individual service accounts",
    );
}

crate::harness::on_both_backends!(
    backend: kubelets_reach_what_their_pods_use_and_their_own_node,
    kubelets_get_the_service_accounts_of_their_pods
);

/// With both gates off (PodCertificateRequest is off by default) nodes get
/// no service account. The decision does not depend on the storage.
#[test]
fn without_the_gates_kubelets_get_no_service_account() {
    let server = TestServer::start_with(&[
        "--authorization-mode=Node,RBAC",
        "--feature-gates=KubeletServiceAccountTokenForCredentialProviders=false",
    ]);
    let n1 = with_service_accounts(&server);
    forbidden(
        &server.kubectl_as_cert(&n1, &["get", "serviceaccount", "sa-n1"]),
        &format!("serviceaccounts \"sa-n1\" is forbidden: {SA_FORBIDDEN}: not allowed to get service accounts"),
    );
}
