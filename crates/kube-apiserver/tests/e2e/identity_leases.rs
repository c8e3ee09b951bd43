//! The API server identity Leases (upstream's `APIServerIdentity`): the
//! server holds one in `kube-system`, and the expired identity Leases of
//! servers that are gone are deleted (`apiserverleasegc`, at start and
//! hourly), other Leases left alone.

use std::time::Duration;

use serde_json::Value;

use crate::harness::TestServer;
use crate::support::wait::eventually;

const IDENTITY: &str = "apiserver.kubernetes.io/identity=kube-apiserver";

fn lease(name: &str, labels: &str) -> String {
    format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {name}\n  namespace: kube-system\n  labels: {{{labels}}}\nspec:\n  holderIdentity: {name}_gone\n  leaseDurationSeconds: 3600\n  renewTime: \"2020-01-01T00:00:00.000000Z\"\n"
    )
}

/// The names of the identity Leases.
fn identities(s: &TestServer) -> Vec<String> {
    let listed = s.ok(&[
        "get",
        "leases",
        "-n",
        "kube-system",
        "-l",
        IDENTITY,
        "-o",
        "json",
    ]);
    let listed: Value = serde_json::from_str(&listed).expect("json");
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|l| l["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn expired_identity_leases_are_collected_at_start() {
    let mut s = TestServer::start();
    let mut own = Vec::new();
    eventually(
        "the server's identity lease",
        Duration::from_secs(20),
        || {
            own = identities(&s);
            own.len() == 1
        },
    );
    let holder = s.ok(&[
        "get",
        "lease",
        "-n",
        "kube-system",
        &own[0],
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    assert!(own[0].starts_with("apiserver-"), "{own:?}");
    assert!(holder.starts_with(&format!("{}_", own[0])), "{holder}");
    s.apply_yaml(&lease(
        "apiserver-gone",
        "apiserver.kubernetes.io/identity: kube-apiserver",
    ));
    s.apply_yaml(&lease("some-lock", "app: other"));
    assert_eq!(
        identities(&s).len(),
        2,
        "collected only at start and hourly"
    );
    s.restart();
    eventually(
        "the expired identity lease to go",
        Duration::from_secs(20),
        || identities(&s) == own,
    );
    s.ok(&["get", "lease", "-n", "kube-system", "some-lock"]);
}
