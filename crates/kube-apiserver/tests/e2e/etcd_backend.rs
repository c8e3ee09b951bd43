//! The same binary with `--etcd-servers` pointing at a real etcd: objects
//! land under upstream's keys and survive a restart of the server.

use storage::{Kv, RangeRequest};
use storage_etcd::testing::EtcdServer;

use crate::harness::TestServer;

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: on-etcd\ndata:\n  k: v\n";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn kubectl_against_etcd_stores_under_upstream_keys() {
    let rt = runtime();
    let etcd = rt.block_on(EtcdServer::start()).expect("etcd starts");
    let servers = format!("--etcd-servers={}", etcd.client_url());
    let mut s = TestServer::start_with(&[&servers]);
    s.apply_yaml(CONFIGMAP);
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: nginx}]\n";
    s.apply_yaml(deploy);
    s.ok(&["scale", "deployment", "web", "--replicas=3"]);
    let kv = rt.block_on(etcd.kv()).expect("etcd client");
    let keys = rt
        .block_on(kv.range(RangeRequest {
            key: "/registry/".into(),
            range_end: Some(storage::prefix_end("/registry/")),
            ..Default::default()
        }))
        .expect("range");
    let names: Vec<&str> = keys.kvs.iter().map(|kv| kv.key.as_str()).collect();
    for key in [
        "/registry/configmaps/default/on-etcd",
        "/registry/deployments/default/web",
        "/registry/namespaces/kube-system",
        "/registry/services/specs/default/kubernetes",
        "/registry/apiregistration.k8s.io/apiservices/v1.apps",
    ] {
        assert!(names.contains(&key), "{key} missing from {names:?}");
    }
    s.restart();
    assert_eq!(
        s.ok(&["get", "configmap", "on-etcd", "-o", "jsonpath={.data.k}"]),
        "v"
    );
    assert_eq!(
        s.ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "3"
    );
}
