//! Every namespace gets its `default` ServiceAccount, so pods can be
//! created with this server alone (the ServiceAccount admission plugin
//! refuses pods whose account is missing), and its `kube-root-ca.crt`
//! ConfigMap, which those pods' projected volumes read.

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

/// The CA of `<data-dir>/pki/ca.crt` as the `kube-root-ca.crt` ConfigMap
/// of every namespace (what pods' projected service-account volumes read),
/// put back when deleted or edited.
fn namespaces_get_the_root_ca_configmap(s: &TestServer) {
    let ca = std::fs::read_to_string(s.dir.path().join("pki").join("ca.crt")).expect("ca.crt");
    let published = |ns: &str| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = s.kubectl(&[
                "get",
                "cm",
                "kube-root-ca.crt",
                "-n",
                ns,
                "-o",
                "jsonpath={.data.ca\\.crt}",
            ]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() && text.trim() == ca.trim() {
                return;
            }
            assert!(Instant::now() < deadline, "{ns}: {text} / {out:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    published("default");
    published("kube-system");
    s.ok(&["create", "namespace", "fresh"]);
    published("fresh");
    s.ok(&["delete", "cm", "kube-root-ca.crt", "-n", "fresh"]);
    published("fresh");
    s.ok(&[
        "patch",
        "cm",
        "kube-root-ca.crt",
        "-n",
        "fresh",
        "-p",
        r#"{"data":{"ca.crt":"x"}}"#,
    ]);
    published("fresh");
}

crate::harness::on_both_backends!(
    namespaces_get_a_default_service_account_and_pods_run_as_it,
    a_deleted_default_service_account_comes_back,
    namespaces_get_the_root_ca_configmap
);
