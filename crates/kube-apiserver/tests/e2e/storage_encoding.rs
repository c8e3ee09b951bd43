//! `--storage-media-type`: built-in objects are stored as upstream stores
//! them (protobuf in the `k8s\0` + runtime.Unknown envelope by default),
//! objects written by upstream are read, and a store written in one
//! encoding is read after a restart in another.

use bytes::Bytes;
use storage::{Kv, RangeRequest, TxnOp};
use storage_etcd::testing::EtcdServer;

use crate::harness::TestServer;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn raw_value(rt: &tokio::runtime::Runtime, kv: &dyn Kv, key: &str) -> Bytes {
    let resp = rt
        .block_on(kv.range(RangeRequest {
            key: key.into(),
            ..Default::default()
        }))
        .expect("range");
    resp.kvs
        .first()
        .map(|kv| kv.value.clone())
        .unwrap_or_else(|| panic!("{key} is not stored"))
}

/// One length-delimited protobuf field (short values only).
fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
    let len = u8::try_from(bytes.len()).expect("short field");
    [vec![tag << 3 | 2, len], bytes.to_vec()].concat()
}

/// A ConfigMap laid out from upstream's generated.proto field numbers, as
/// upstream kube-apiserver writes it to etcd.
fn upstream_config_map(name: &str) -> Vec<u8> {
    let meta = [field(1, name.as_bytes()), field(3, b"default")].concat();
    let entry = [field(1, b"origin"), field(2, b"upstream")].concat();
    let raw = [field(1, &meta), field(2, &entry)].concat();
    let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
    [b"k8s\0".to_vec(), field(1, &type_meta), field(2, &raw)].concat()
}

#[test]
fn objects_are_stored_as_protobuf_and_upstream_bytes_are_read() {
    let rt = runtime();
    let etcd = rt.block_on(EtcdServer::start()).expect("etcd starts");
    let servers = format!("--etcd-servers={}", etcd.client_url());
    let mut s = TestServer::start_with(&[&servers]);
    s.ok(&["create", "configmap", "ours", "--from-literal=k=v"]);
    let kv = rt.block_on(etcd.kv()).expect("etcd client");
    let stored = raw_value(&rt, &kv, "/registry/configmaps/default/ours");
    assert!(stored.starts_with(b"k8s\0"), "stored as {stored:?}");
    let envelope = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
    assert!(
        stored.windows(envelope.len()).any(|w| w == envelope),
        "envelope typeMeta missing from {stored:?}"
    );

    let key = "/registry/configmaps/default/from-upstream";
    let put = TxnOp::Put(Bytes::from(upstream_config_map("from-upstream")));
    rt.block_on(kv.txn(key, 0, put)).expect("put");
    let origin = [
        "get",
        "configmap",
        "from-upstream",
        "-o",
        "jsonpath={.data.origin}",
    ];
    assert_eq!(s.ok(&origin), "upstream");

    // Switching to JSON keeps every protobuf object readable; new writes are JSON.
    s.restart_with(&[&servers, "--storage-media-type=application/json"]);
    assert_eq!(s.ok(&origin), "upstream");
    s.ok(&["create", "configmap", "as-json", "--from-literal=k=v"]);
    let json = raw_value(&rt, &kv, "/registry/configmaps/default/as-json");
    assert_eq!(json.first(), Some(&b'{'), "stored as {json:?}");
    s.restart_with(&[&servers]);
    let get = ["get", "configmap", "as-json", "-o", "jsonpath={.data.k}"];
    assert_eq!(s.ok(&get), "v");
}

#[test]
fn the_embedded_store_reads_data_written_in_another_encoding() {
    let mut s = TestServer::start_with(&["--storage-media-type=application/json"]);
    s.ok(&["create", "namespace", "team"]);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "token",
        "-n",
        "team",
        "--from-literal=a=b",
    ]);
    s.restart_with(&[]);
    let get = [
        "get",
        "secret",
        "token",
        "-n",
        "team",
        "-o",
        "jsonpath={.data.a}",
    ];
    assert_eq!(s.ok(&get), "Yg==");
    s.ok(&[
        "create",
        "configmap",
        "proto",
        "-n",
        "team",
        "--from-literal=x=y",
    ]);
    s.restart_with(&["--storage-media-type=application/yaml"]);
    let get = [
        "get",
        "configmap",
        "proto",
        "-n",
        "team",
        "-o",
        "jsonpath={.data.x}",
    ];
    assert_eq!(s.ok(&get), "y");
}
