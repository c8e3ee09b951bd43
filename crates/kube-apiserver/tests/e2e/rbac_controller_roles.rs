//! The controller roles of upstream's bootstrap policy, as a client sees
//! them: one `system:controller:<name>` ClusterRole per controller of
//! kube-controller-manager, bound to `kube-system/<name>`, and what those
//! service accounts are then allowed to do.

use serde_json::{json, Value};

use crate::harness::{Backend, TestServer};

const PREFIX: &str = "system:controller:";

fn events() -> Value {
    json!({"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
        "verbs": ["create", "patch", "update"]})
}

/// `kubectl auth can-i` as a controller's service account: its answer.
fn can(s: &TestServer, controller: &str, request: &[&str]) -> String {
    let user = format!("--as=system:serviceaccount:kube-system:{controller}");
    let mut args = vec!["auth", "can-i", &user, "-A"];
    args.extend_from_slice(request);
    let out = s.kubectl(&args);
    let answer = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(out.status.success(), answer == "yes", "{answer}");
    answer
}

fn deployment_controller_has_upstreams_rules(s: &TestServer) {
    let name = format!("{PREFIX}deployment-controller");
    let role: Value = serde_json::from_str(&s.ok(&["get", "clusterrole", &name, "-o", "json"]))
        .unwrap_or(Value::Null);
    let apps = ["apps", "extensions"];
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": apps, "resources": ["deployments"],
                "verbs": ["get", "list", "update", "watch"]},
            {"apiGroups": apps, "resources": ["deployments/status"], "verbs": ["update"]},
            {"apiGroups": apps, "resources": ["deployments/finalizers"], "verbs": ["update"]},
            {"apiGroups": apps, "resources": ["replicasets"],
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
            {"apiGroups": [""], "resources": ["pods"],
                "verbs": ["get", "list", "update", "watch"]},
            events(),
        ])
    );
    let meta = &role["metadata"];
    assert_eq!(
        meta["labels"],
        json!({"kubernetes.io/bootstrapping": "rbac-defaults"})
    );
    assert_eq!(
        meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
}

fn every_controller_role_is_bound(s: &TestServer) {
    let listed = |kind: &str| -> Vec<String> {
        let names = s.ok(&["get", kind, "-o", "name"]);
        let mut own: Vec<String> = names
            .lines()
            .filter_map(|line| line.split_once('/').map(|(_, name)| name))
            .filter(|name| name.starts_with(PREFIX))
            .map(str::to_owned)
            .collect();
        own.sort();
        own
    };
    let roles = listed("clusterroles");
    assert_eq!(roles.len(), 38, "{roles:?}");
    for present in [
        "resource-claim-controller",
        "service-cidrs-controller",
        "selinux-warning-controller",
        "volumeattributesclass-protection-controller",
    ] {
        assert!(roles.contains(&format!("{PREFIX}{present}")), "{present}");
    }
    // Behind gates that are off by default.
    for absent in [
        "kube-apiserver-serving-clustertrustbundle-publisher",
        "storage-version-migrator-controller",
        "podcertificaterequestcleaner",
    ] {
        assert!(!roles.contains(&format!("{PREFIX}{absent}")), "{absent}");
    }
    assert_eq!(listed("clusterrolebindings"), roles);
}

fn job_controller_binding_names_its_service_account(s: &TestServer) {
    let name = format!("{PREFIX}job-controller");
    let path =
        "{.roleRef.kind}/{.roleRef.name} {range .subjects[*]}{.kind}:{.namespace}/{.name}{end}";
    let binding = s.ok(&[
        "get",
        "clusterrolebinding",
        &name,
        "-o",
        &format!("jsonpath={path}"),
    ]);
    assert_eq!(
        binding,
        format!("ClusterRole/{name} ServiceAccount:kube-system/job-controller")
    );
}

fn controllers_may_do_what_their_roles_say(backend: Backend) {
    let served = backend.start_with(&["--authorization-mode=Node,RBAC"]);
    let s = &served;
    assert_eq!(can(s, "job-controller", &["create", "pods"]), "yes");
    assert_eq!(
        can(
            s,
            "job-controller",
            &["update", "jobs.batch", "--subresource=status"]
        ),
        "yes"
    );
    assert_eq!(can(s, "job-controller", &["delete", "nodes"]), "no");
    assert_eq!(
        can(s, "job-controller", &["create", "deployments.apps"]),
        "no"
    );
    assert_eq!(
        can(
            s,
            "generic-garbage-collector",
            &["delete", "widgets.example.com"]
        ),
        "yes"
    );
    assert_eq!(
        can(s, "namespace-controller", &["deletecollection", "secrets"]),
        "yes"
    );
    assert_eq!(can(s, "namespace-controller", &["create", "secrets"]), "no");
    // Nothing grants the node controller creating pods.
    assert_eq!(can(s, "node-controller", &["create", "pods"]), "no");
}

crate::harness::on_both_backends!(
    deployment_controller_has_upstreams_rules,
    every_controller_role_is_bound,
    job_controller_binding_names_its_service_account;
    backend: controllers_may_do_what_their_roles_say,
);
