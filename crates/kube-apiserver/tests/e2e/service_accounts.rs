//! Every namespace gets its `default` ServiceAccount, so pods can be
//! created with this server alone (the ServiceAccount admission plugin
//! refuses pods whose account is missing).

use std::time::{Duration, Instant};

use crate::harness::TestServer;

fn wait_for_default_account(s: &TestServer, namespace: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s
        .kubectl(&["get", "serviceaccount", "default", "-n", namespace])
        .status
        .success()
    {
        assert!(
            Instant::now() < deadline,
            "no default service account in {namespace}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn namespaces_get_a_default_service_account_and_pods_run_as_it(s: &TestServer) {
    wait_for_default_account(s, "default");
    s.ok(&["create", "namespace", "team"]);
    wait_for_default_account(s, "team");
    s.ok(&["run", "web", "-n", "team", "--image=nginx"]);
    let account = [
        "get",
        "pod",
        "web",
        "-n",
        "team",
        "-o",
        "jsonpath={.spec.serviceAccountName}",
    ];
    assert_eq!(s.ok(&account), "default");
}

fn a_deleted_default_service_account_comes_back(s: &TestServer) {
    s.ok(&["create", "namespace", "team"]);
    wait_for_default_account(s, "team");
    let uid = |s: &TestServer| {
        s.ok(&[
            "get",
            "serviceaccount",
            "default",
            "-n",
            "team",
            "-o",
            "jsonpath={.metadata.uid}",
        ])
    };
    let before = uid(s);
    s.ok(&["delete", "serviceaccount", "default", "-n", "team"]);
    wait_for_default_account(s, "team");
    assert_ne!(uid(s), before, "a new account, not the old one");
}

crate::harness::on_both_backends!(
    namespaces_get_a_default_service_account_and_pods_run_as_it,
    a_deleted_default_service_account_comes_back
);
