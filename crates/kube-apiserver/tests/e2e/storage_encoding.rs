//! `--storage-media-type`: built-in objects are stored as upstream stores
//! them (protobuf in the `k8s\0` + runtime.Unknown envelope by default),
//! objects written by upstream are read, a store written in one encoding
//! is read after a restart in another, and writes answer with what the
//! stored bytes decode to.

use bytes::Bytes;
use storage::{Kv, RangeRequest, TxnOp};
use storage_etcd::testing::EtcdServer;

use serde_json::{json, Value};

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

/// Sends `body` with kubectl's `--raw` `verb` (`create` or `replace`) and
/// returns the response object.
fn raw_write(s: &TestServer, verb: &str, path: &str, body: &Value) -> Value {
    let out = s.kubectl_stdin(&[verb, "--raw", path, "-f", "-"], &body.to_string());
    assert!(
        out.status.success(),
        "{verb} {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON response")
}

/// Upstream's etcd3 store answers a create or an update with the object
/// decoded from the bytes it stored, not the object it was handed
/// (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`: `Create` and
/// `GuaranteedUpdate` end in `decode(s.codec, s.versioner, data, out, …)`).
/// Protobuf has no empty repeated field, so a ClusterRole written with
/// `"rules": []` (`json:"rules"`, no omitempty) comes back with nil rules,
/// written `null`; stored as JSON it comes back `[]`. Empty maps under
/// omitempty (a ConfigMap's `data`) are left out either way.
#[test]
fn writes_answer_with_the_stored_bytes_decoded() {
    let mut s = TestServer::start_with(&[]);
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let role = |name: &str, label: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name, "labels": {"l": label}}, "rules": []})
    };
    let created = raw_write(&s, "create", roles, &role("proto", "a"));
    assert_eq!(created["rules"], Value::Null, "{created}");
    assert!(
        created.get("rules").is_some(),
        "rules written as null: {created}"
    );
    let path = format!("{roles}/proto");
    let updated = raw_write(&s, "replace", &path, &role("proto", "b"));
    assert_eq!(
        (&updated["metadata"]["labels"]["l"], &updated["rules"]),
        (&json!("b"), &Value::Null)
    );
    let got: Value = serde_json::from_str(&s.ok(&["get", "--raw", &path])).expect("json");
    assert_eq!(got, updated);

    let maps = "/api/v1/namespaces/default/configmaps";
    let map = json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "empty"}, "data": {}, "binaryData": {}});
    let created = raw_write(&s, "create", maps, &map);
    let members = created.as_object().expect("an object");
    assert!(
        !members.contains_key("data") && !members.contains_key("binaryData"),
        "{created}"
    );

    s.restart_with(&["--storage-media-type=application/json"]);
    let created = raw_write(&s, "create", roles, &role("json", "a"));
    assert_eq!(created["rules"], json!([]), "{created}");
    let updated = raw_write(&s, "replace", &format!("{roles}/json"), &role("json", "b"));
    assert_eq!(updated["rules"], json!([]), "{updated}");
}
