//! Deleting a namespace: it turns Terminating, its content is deleted, then
//! it goes; a namespace created again under the same name starts empty.

use crate::harness::TestServer;

fn deleting_a_namespace_deletes_its_content_first(s: &TestServer) {
    s.ok(&["create", "namespace", "team"]);
    s.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=a=b",
    ]);
    s.ok(&["create", "deployment", "web", "-n", "team", "--image=nginx"]);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "token",
        "-n",
        "team",
        "--from-literal=a=b",
    ]);
    // kubectl waits until the namespace is gone.
    s.ok(&["delete", "namespace", "team", "--timeout=30s"]);
    let err = s.fails(&["get", "namespace", "team"]);
    assert!(err.contains("namespaces \"team\" not found"), "{err}");
    s.ok(&["create", "namespace", "team"]);
    let left = s.ok(&[
        "get",
        "configmaps,deployments,secrets",
        "-n",
        "team",
        "-o",
        "name",
    ]);
    // The new namespace gets its `kube-root-ca.crt` published again.
    let left: Vec<&str> = left
        .lines()
        .filter(|l| *l != "configmap/kube-root-ca.crt")
        .collect();
    assert!(left.is_empty(), "content survived the namespace: {left:?}");
}

fn a_terminating_namespace_shows_its_phase_while_content_is_held(s: &TestServer) {
    s.ok(&["create", "namespace", "slow"]);
    s.apply_yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: slow, finalizers: [example.com/hold]}\n",
    );
    s.ok(&["delete", "namespace", "slow", "--wait=false"]);
    let phase = ["get", "namespace", "slow", "-o", "jsonpath={.status.phase}"];
    assert_eq!(s.ok(&phase), "Terminating");
    // NamespaceLifecycle answers before ServiceAccount looks for the
    // namespace's (deleted) default account.
    let err = s.fails(&["run", "late", "-n", "slow", "--image=nginx"]);
    assert!(
        err.contains("pods \"late\" is forbidden: unable to create new content in namespace slow because it is being terminated"),
        "{err}"
    );
    s.ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "slow",
        "--type=merge",
        "-p",
        "{\"metadata\":{\"finalizers\":null}}",
    ]);
    s.ok(&["wait", "--for=delete", "namespace/slow", "--timeout=30s"]);
}

/// Content for a namespace that does not exist is refused with 404 by
/// NamespaceLifecycle, the first mutating plugin.
fn content_of_a_missing_namespace_is_not_found(s: &TestServer) {
    let err = s.fails(&["run", "lost", "-n", "nowhere", "--image=nginx"]);
    assert!(
        err.contains("Error from server (NotFound): namespaces \"nowhere\" not found"),
        "{err}"
    );
    let err = s.fails(&["create", "serviceaccount", "robot", "-n", "nowhere"]);
    assert!(err.contains("namespaces \"nowhere\" not found"), "{err}");
}

/// Upstream labels every namespace with its name, and keeps the label.
fn namespaces_carry_their_name_label(s: &TestServer) {
    let label = |ns: &str| {
        s.ok(&[
            "get",
            "ns",
            ns,
            "-o",
            "jsonpath={.metadata.labels.kubernetes\\.io/metadata\\.name}",
        ])
    };
    assert_eq!(label("default"), "default");
    assert_eq!(label("kube-system"), "kube-system");
    s.ok(&["create", "namespace", "labelled"]);
    assert_eq!(label("labelled"), "labelled");
    s.ok(&[
        "label",
        "namespace",
        "labelled",
        "kubernetes.io/metadata.name-",
    ]);
    assert_eq!(label("labelled"), "labelled");
    let selected = s.ok(&[
        "get",
        "ns",
        "-l",
        "kubernetes.io/metadata.name=labelled",
        "-o",
        "name",
    ]);
    assert_eq!(selected.trim(), "namespace/labelled");
}

crate::harness::on_both_backends!(
    namespaces_carry_their_name_label,
    content_of_a_missing_namespace_is_not_found,
    deleting_a_namespace_deletes_its_content_first,
    a_terminating_namespace_shows_its_phase_while_content_is_held
);
