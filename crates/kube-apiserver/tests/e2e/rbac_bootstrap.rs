//! The bootstrap RBAC policy reconciled at every start, as upstream's
//! `rbac/bootstrap-roles` hook does: rules, labels and binding subjects the
//! administrator removed come back after a restart, unless the object is
//! annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`; and
//! the rules reviews (`kubectl auth can-i --list`) built from that policy.

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

/// `kubectl auth can-i --list` rows, whitespace-normalised.
fn can_i_list(s: &TestServer, args: &[&str]) -> Vec<String> {
    let mut all = vec!["auth", "can-i", "--list"];
    all.extend_from_slice(args);
    let table = s.ok(&all);
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn rules_review(s: &TestServer, args: &[&str]) -> serde_json::Value {
    let body = r#"{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","spec":{"namespace":"p1"}}"#;
    let mut all = vec![
        "create",
        "--raw",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        "-f",
        "-",
    ];
    all.extend_from_slice(args);
    let out = s.kubectl_stdin(&all, body);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()["status"].take()
}

fn rules_reviews_list_bound_rules(backend: Backend) {
    let s = backend.start_with(&["--authorization-mode=Node,RBAC"]);
    s.ok(&["create", "namespace", "p1"]);
    s.ok(&[
        "-n",
        "p1",
        "create",
        "role",
        "r",
        "--verb=get,list",
        "--resource=pods",
        "--resource-name=x",
    ]);
    s.ok(&[
        "-n",
        "p1",
        "create",
        "rolebinding",
        "b",
        "--role=r",
        "--user=jane",
    ]);
    let rows = can_i_list(&s, &["--as", "jane", "-n", "p1"]);
    for row in [
        "Resources Non-Resource URLs Resource Names Verbs",
        "selfsubjectrulesreviews.authorization.k8s.io [] [] [create]",
        "pods [] [x] [get list]",
        "[/apis/*] [] [get]",
        "[/version] [] [get]",
    ] {
        assert!(
            rows.iter().any(|r| r == row),
            "{row:?} missing from {rows:#?}"
        );
    }
    let elsewhere = can_i_list(&s, &["--as", "jane", "-n", "default"]);
    assert!(
        !elsewhere.iter().any(|r| r.starts_with("pods")),
        "{elsewhere:#?}"
    );

    // RBAC alone lists every rule: complete, even when a binding names a
    // missing role (an evaluation error).
    let status = rules_review(&s, &["--as", "jane"]);
    assert_eq!(status["incomplete"], false, "{status}");
    assert!(status.get("evaluationError").is_none(), "{status}");
    s.ok(&[
        "-n",
        "p1",
        "create",
        "rolebinding",
        "b2",
        "--role=gone",
        "--user=jane",
    ]);
    s.ok(&[
        "-n",
        "p1",
        "create",
        "rolebinding",
        "b3",
        "--clusterrole=gone",
        "--user=jane",
    ]);
    let status = rules_review(&s, &["--as", "jane"]);
    assert_eq!(status["incomplete"], false, "{status}");
    assert_eq!(
        status["evaluationError"],
        r#"[role.rbac.authorization.k8s.io "gone" not found, clusterrole.rbac.authorization.k8s.io "gone" not found]"#
    );
    // The Node authorizer cannot list a node's rules.
    let node = ["--as", "system:node:n1", "--as-group", "system:nodes"];
    let status = rules_review(&s, &node);
    assert_eq!(status["incomplete"], true, "{status}");
    assert_eq!(
        status["evaluationError"],
        "node authorizer does not support user rule resolution"
    );
}

/// `kubectl auth can-i <query> --as <user>` as a yes or no (kubectl exits
/// non-zero on "no").
fn can_i(s: &TestServer, user: &[&str], query: &[&str]) -> bool {
    let mut args = vec!["auth", "can-i"];
    args.extend_from_slice(query);
    args.extend_from_slice(user);
    let out = s.kubectl(&args);
    let answer = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(answer == "yes" || answer == "no", "{args:?}: {answer:?}");
    out.status.success()
}

/// The component identities get what upstream's bootstrap policy grants
/// them, and no more.
fn component_identities_have_upstreams_access(backend: Backend) {
    let s = backend.start_with(&["--authorization-mode=Node,RBAC"]);
    let names = s.ok(&["get", "clusterroles", "-o", "name"]);
    for role in [
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:node-proxier",
        "system:volume-scheduler",
        "system:certificates.k8s.io:kubelet-serving-approver",
        "system:heapster",
    ] {
        let line = format!("clusterrole.rbac.authorization.k8s.io/{role}");
        assert!(names.lines().any(|l| l == line), "{role} missing: {names}");
    }
    let scheduler = ["--as", "system:kube-scheduler"];
    assert!(can_i(&s, &scheduler, &["create", "bindings"]));
    assert!(can_i(&s, &scheduler, &["update", "persistentvolumes"]));
    assert!(!can_i(&s, &scheduler, &["create", "pods"]));
    let proxy = ["--as", "system:kube-proxy"];
    assert!(can_i(
        &s,
        &proxy,
        &["list", "endpointslices.discovery.k8s.io"]
    ));
    assert!(!can_i(&s, &proxy, &["get", "secrets"]));
    let dns = ["--as", "system:serviceaccount:kube-system:kube-dns"];
    assert!(can_i(&s, &dns, &["list", "services", "-A"]));
    assert!(!can_i(&s, &dns, &["delete", "services"]));
    let kcm = ["--as", "system:kube-controller-manager"];
    assert!(can_i(&s, &kcm, &["watch", "deployments.apps", "-A"]));
    assert!(can_i(&s, &kcm, &["create", "serviceaccounts/token"]));
    assert!(!can_i(&s, &kcm, &["delete", "pods"]));
}

/// The kube-system Roles leader election and extension API servers use.
fn namespace_policy_grants_leader_locking(backend: Backend) {
    let s = backend.start_with(&["--authorization-mode=Node,RBAC"]);
    let roles = s.ok(&["-n", "kube-system", "get", "roles", "-o", "name"]);
    for role in [
        "extension-apiserver-authentication-reader",
        "system::leader-locking-kube-controller-manager",
        "system::leader-locking-kube-scheduler",
        "system:controller:bootstrap-signer",
        "system:controller:cloud-provider",
        "system:controller:token-cleaner",
    ] {
        let line = format!("role.rbac.authorization.k8s.io/{role}");
        assert!(roles.lines().any(|l| l == line), "{role} missing: {roles}");
    }
    let public = s.ok(&["-n", "kube-public", "get", "rolebindings", "-o", "name"]);
    assert!(
        public.contains("rolebinding.rbac.authorization.k8s.io/system:controller:bootstrap-signer")
    );
    let in_system = ["-n", "kube-system"];
    let scheduler = ["--as", "system:kube-scheduler"];
    let mut query = vec!["update", "leases.coordination.k8s.io/some-lock"];
    query.extend_from_slice(&in_system);
    assert!(can_i(&s, &scheduler, &query));
    // Only in kube-system, and only with the lease named after it elsewhere.
    let elsewhere = [
        "update",
        "leases.coordination.k8s.io/some-lock",
        "-n",
        "default",
    ];
    assert!(!can_i(&s, &scheduler, &elsewhere));
    let sa = [
        "--as",
        "system:serviceaccount:kube-system:leader-election-controller",
    ];
    // LeaseCandidates are not served by default, so kubectl cannot ask
    // about them: ask about the leases the same Role grants.
    let mut query = vec!["create", "leases.coordination.k8s.io"];
    query.extend_from_slice(&in_system);
    assert!(can_i(&s, &sa, &query));
    let signer = ["--as", "system:serviceaccount:kube-system:bootstrap-signer"];
    let cluster_info = ["update", "configmaps/cluster-info", "-n", "kube-public"];
    assert!(can_i(&s, &signer, &cluster_info));
    assert!(!can_i(
        &s,
        &signer,
        &["update", "configmaps/other", "-n", "kube-public"]
    ));
}

/// What upstream's user-facing, kubelet API, monitoring, scheduler and
/// proxy roles grant beyond their long-standing rules: leases and DRA
/// claims to editors, the kubelet's fine-grained subresources (and not
/// nodes/spec) to the kubelet API admin, the component pages to monitoring.
fn policy_grants_upstreams_newer_rules(backend: Backend) {
    let s = backend.start_with(&["--authorization-mode=Node,RBAC"]);
    user_roles_grant_leases_and_claims(&s);
    component_roles_grant_newer_rules(&s);
}

fn user_roles_grant_leases_and_claims(s: &TestServer) {
    s.ok(&["create", "namespace", "p1"]);
    for (name, role) in [("alice", "edit"), ("victor", "view")] {
        let user = format!("--user={name}");
        let role = format!("--clusterrole={role}");
        s.ok(&["create", "rolebinding", name, &role, &user, "-n", "p1"]);
    }
    let alice = ["--as", "alice"];
    let in_p1 = |verb: &'static str, resource: &'static str| [verb, resource, "-n", "p1"];
    assert!(can_i(
        s,
        &alice,
        &in_p1("create", "leases.coordination.k8s.io")
    ));
    assert!(can_i(
        s,
        &alice,
        &in_p1("delete", "resourceclaims.resource.k8s.io")
    ));
    assert!(!can_i(s, &alice, &in_p1("create", "rolebindings")));
    let victor = ["--as", "victor"];
    assert!(can_i(
        s,
        &victor,
        &in_p1("list", "resourceclaimtemplates.resource.k8s.io")
    ));
    assert!(!can_i(
        s,
        &victor,
        &in_p1("create", "resourceclaims.resource.k8s.io")
    ));
    assert!(!can_i(
        s,
        &victor,
        &in_p1("get", "leases.coordination.k8s.io")
    ));
}

fn component_roles_grant_newer_rules(s: &TestServer) {
    let api_admin = "--clusterrole=system:kubelet-api-admin";
    s.ok(&[
        "create",
        "clusterrolebinding",
        "kapi",
        api_admin,
        "--user=kapi",
    ]);
    let kapi = ["--as", "kapi"];
    for (subresource, allowed) in [
        ("configz", true),
        ("pods", true),
        ("stats", true),
        ("spec", false),
    ] {
        let sub = format!("--subresource={subresource}");
        assert_eq!(
            can_i(s, &kapi, &["get", "nodes", &sub]),
            allowed,
            "{subresource}"
        );
    }
    let monitor = ["--as", "m", "--as-group", "system:monitoring"];
    for url in ["/statusz", "/flagz", "/metrics/slis"] {
        assert!(can_i(s, &monitor, &["get", url]), "{url}");
    }
    assert!(!can_i(s, &monitor, &["get", "/debug/pprof"]));

    let scheduler = ["--as", "system:kube-scheduler"];
    let claims = "resourceclaims.resource.k8s.io";
    assert!(can_i(
        s,
        &scheduler,
        &["list", "volumeattachments.storage.k8s.io"]
    ));
    assert!(can_i(s, &scheduler, &["update", claims, "-A"]));
    assert!(!can_i(s, &scheduler, &["create", claims, "-A"]));
    let binding = ["patch", claims, "--subresource=binding", "-A"];
    assert!(can_i(s, &scheduler, &binding));
    let proxy = ["--as", "system:kube-proxy"];
    assert!(can_i(
        s,
        &proxy,
        &["watch", "servicecidrs.networking.k8s.io"]
    ));
}

crate::harness::on_both_backends!(backend: removed_policy_comes_back, rules_reviews_list_bound_rules,
    component_identities_have_upstreams_access, namespace_policy_grants_leader_locking,
    policy_grants_upstreams_newer_rules);
