//! The bootstrap RBAC policy reconciled at every start, as upstream's
//! `rbac/bootstrap-roles` hook does: rules, labels and binding subjects the
//! administrator removed come back after a restart, unless the object is
//! annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`.

use crate::harness::{Backend, TestServer};

fn json_patch(s: &TestServer, kind: &str, name: &str, patch: &str) {
    s.ok(&["patch", kind, name, "--type=json", "-p", patch]);
}

fn get(s: &TestServer, kind: &str, name: &str, path: &str) -> String {
    s.ok(&["get", kind, name, "-o", &format!("jsonpath={path}")])
}

fn removed_policy_comes_back(backend: Backend) {
    let mut served = backend.start();
    let one_rule = r#"[{"op":"replace","path":"/rules","value":[{"verbs":["get"],"nonResourceURLs":["/api"]}]}]"#;
    json_patch(&served, "clusterrole", "system:discovery", one_rule);
    served.ok(&[
        "label",
        "clusterrole",
        "system:discovery",
        "kubernetes.io/bootstrapping-",
    ]);
    let no_subjects = r#"[{"op":"replace","path":"/subjects","value":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"jane"}]}]"#;
    json_patch(
        &served,
        "clusterrolebinding",
        "system:basic-user",
        no_subjects,
    );
    // Opted out: stays as the administrator left it.
    let annotation = "rbac.authorization.kubernetes.io/autoupdate=false";
    served.ok(&[
        "annotate",
        "--overwrite",
        "clusterrole",
        "system:public-info-viewer",
        annotation,
    ]);
    let healthz = r#"[{"op":"replace","path":"/rules","value":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}]}]"#;
    json_patch(&served, "clusterrole", "system:public-info-viewer", healthz);
    assert_eq!(
        get(
            &served,
            "clusterrole",
            "system:discovery",
            "{.rules[*].nonResourceURLs}"
        ),
        r#"["/api"]"#
    );

    served.server.restart();
    let s = &served.server;
    let urls = get(
        s,
        "clusterrole",
        "system:discovery",
        "{.rules[*].nonResourceURLs}",
    );
    for url in [
        "/api", "/api/*", "/apis", "/apis/*", "/version", "/healthz", "/readyz",
    ] {
        assert!(
            urls.contains(&format!("\"{url}\"")),
            "{url} not back: {urls}"
        );
    }
    let label = get(s, "clusterrole", "system:discovery", "{.metadata.labels}");
    assert!(
        label.contains(r#""kubernetes.io/bootstrapping":"rbac-defaults""#),
        "{label}"
    );
    let subjects = get(
        s,
        "clusterrolebinding",
        "system:basic-user",
        "{.subjects[*].name}",
    );
    assert_eq!(subjects, "jane system:authenticated");
    let kept = get(
        s,
        "clusterrole",
        "system:public-info-viewer",
        "{.rules[*].nonResourceURLs}",
    );
    assert_eq!(kept, r#"["/healthz"]"#);
}

crate::harness::on_both_backends!(backend: removed_policy_comes_back);
