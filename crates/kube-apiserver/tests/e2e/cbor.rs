//! CBOR (`application/cbor`) over raw HTTPS, as upstream serves it behind
//! `--feature-gates=CBORServingAndStorage=true`: built-in and custom
//! resources created, read, listed and watched in CBOR (watches as an
//! `application/cbor-seq` stream), Status errors and Tables in CBOR,
//! malformed bodies refused with 400; custom resources stored as CBOR and
//! still read once the gate is off. Without the gate: 406 and 415.

use std::path::PathBuf;
use std::process::{Command, Output};

use bytes::Bytes;
use serde_json::{json, Value};
use storage::{Kv, RangeRequest};
use storage_etcd::testing::EtcdServer;

use crate::harness::TestServer;
use crate::support::crds::crd;

pub(crate) const GATE: &str = "--feature-gates=CBORServingAndStorage=true";
const CBOR: &str = "application/cbor";
const CM: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

const SCHEMA: &str = r#"
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              ratio: {type: number}
              color: {type: string}
"#;

pub(crate) struct Answer {
    pub(crate) code: u16,
    pub(crate) content_type: String,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn cbor(&self) -> Value {
        assert_eq!(self.content_type, CBOR, "code {}", self.code);
        kube_cbor::decode(&self.body).unwrap_or_else(|e| panic!("{e}: {:02x?}", self.body))
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// One request with curl and the admin certificate; the body is sent and
/// the answer read as bytes.
pub(crate) fn request(
    s: &TestServer,
    method: &str,
    path: &str,
    headers: &[&str],
    body: Option<&[u8]>,
) -> Answer {
    let pki = s.dir.path().join("pki");
    let out_file = s.dir.path().join("cbor-answer");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "20", "--cacert"])
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .args(["-X", method, "-w", "%{http_code} %{content_type}", "-o"])
        .arg(&out_file);
    for h in headers {
        cmd.args(["-H", h]);
    }
    if let Some(bytes) = body {
        let body_file = s.dir.path().join("cbor-body");
        std::fs::write(&body_file, bytes).expect("body written");
        cmd.arg("--data-binary")
            .arg(format!("@{}", body_file.display()));
    }
    cmd.arg(format!("https://127.0.0.1:{}{path}", s.port));
    let out = cmd.output().expect("curl runs");
    let written = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, content_type) = written.split_once(' ').unwrap_or((&written, ""));
    Answer {
        code: code.trim().parse().unwrap_or(0),
        content_type: content_type.trim().to_owned(),
        body: std::fs::read(&out_file).unwrap_or_default(),
    }
}

fn config_map(name: &str) -> Vec<u8> {
    kube_cbor::encode(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"k": "v"},
    }))
}

fn widget(name: &str) -> Vec<u8> {
    kube_cbor::encode(&json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 3, "ratio": 0.5, "color": "red"},
    }))
}

fn establish(s: &TestServer) {
    s.apply_yaml(&crd("widgets", "Widget", "Namespaced", SCHEMA));
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/widgets.example.com",
    ]);
}

/// Create, get, list and watch of one resource entirely in CBOR.
fn crud_in_cbor(s: &TestServer, collection: &str, body: &[u8], name: &str, list_kind: &str) {
    let both = [
        &*format!("Content-Type: {CBOR}"),
        &*format!("Accept: {CBOR}"),
    ];
    let created = request(s, "POST", collection, &both, Some(body));
    assert_eq!(created.code, 201, "{:?}", created.json());
    assert!(created.body.starts_with(&kube_cbor::SELF_DESCRIBED));
    let created = created.cbor();
    assert_eq!(created["metadata"]["name"], name);
    assert!(created["metadata"]["uid"].is_string(), "{created}");

    let got = request(s, "GET", &format!("{collection}/{name}"), &both[1..], None);
    assert_eq!(got.code, 200);
    assert_eq!(got.cbor(), created);

    let list = request(s, "GET", collection, &both[1..], None);
    assert_eq!(list.code, 200);
    let list = list.cbor();
    assert_eq!(list["kind"], list_kind);
    assert!(list["metadata"]["resourceVersion"].is_string(), "{list}");
    let listed = list["items"].as_array().into_iter().flatten();
    let mut names = listed.map(|i| i["metadata"]["name"].clone());
    assert!(names.any(|n| n == name), "{list}");

    let watch = request(
        s,
        "GET",
        &format!("{collection}?watch=true&timeoutSeconds=1&fieldSelector=metadata.name={name}"),
        &both[1..],
        None,
    );
    assert_eq!(watch.code, 200);
    assert_eq!(watch.content_type, kube_cbor::SEQUENCE_CONTENT_TYPE);
    let (event, _) = kube_cbor::decode_first(&watch.body).expect("a CBOR watch event");
    assert_eq!(event["type"], "ADDED", "{event}");
    assert_eq!(event["object"]["metadata"]["name"], name, "{event}");
}

#[test]
fn built_in_and_custom_resources_are_served_in_cbor_with_the_gate() {
    let s = TestServer::start_with(&[GATE]);
    crud_in_cbor(&s, CM, &config_map("settings"), "settings", "ConfigMapList");
    assert_eq!(
        s.ok(&["get", "configmap", "settings", "-o", "jsonpath={.data.k}"]),
        "v"
    );
    // Server-side apply takes CBOR configurations too.
    let apply = kube_cbor::encode(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings"}, "data": {"applied": "yes"},
    }));
    let applied = request(
        &s,
        "PATCH",
        &format!("{CM}/settings?fieldManager=cbor-test&force=true"),
        &[
            "Content-Type: application/apply-patch+cbor",
            &format!("Accept: {CBOR}"),
        ],
        Some(&apply),
    );
    assert_eq!(applied.code, 200, "{:?}", applied.json());
    assert_eq!(applied.cbor()["data"]["applied"], "yes");
    let unknown = request(
        &s,
        "PATCH",
        &format!("{CM}/settings"),
        &["Content-Type: text/plain"],
        Some(b"x"),
    );
    assert_eq!(unknown.code, 415);
    assert_eq!(
        unknown.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, \
         application/strategic-merge-patch+json, application/apply-patch+yaml, \
         application/apply-patch+cbor"
    );
    // DeleteOptions bodies may be CBOR: a dry run leaves the object.
    let dry_run = kube_cbor::encode(&json!({
        "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"],
    }));
    let content = format!("Content-Type: {CBOR}");
    let kept = request(
        &s,
        "DELETE",
        &format!("{CM}/settings"),
        &[&content],
        Some(&dry_run),
    );
    assert_eq!(kept.code, 200, "{:?}", kept.json());
    s.ok(&["get", "configmap", "settings"]);

    establish(&s);
    crud_in_cbor(&s, WIDGETS, &widget("w1"), "w1", "WidgetList");
    // Read back as JSON, integers and floats are what was sent.
    let spec = s.ok(&["get", "widget", "w1", "-o", "jsonpath={.spec}"]);
    let spec: Value = serde_json::from_str(&spec).expect("spec is JSON");
    assert_eq!(spec, json!({"size": 3, "ratio": 0.5, "color": "red"}));

    // Errors are Status objects in CBOR.
    let accept = format!("Accept: {CBOR}");
    let missing = request(&s, "GET", &format!("{CM}/missing"), &[&accept], None);
    assert_eq!(missing.code, 404);
    let status = missing.cbor();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"missing\" not found");

    // Tables can be asked for in CBOR.
    let table_accept = format!("Accept: {CBOR};as=Table;v=v1;g=meta.k8s.io");
    let table = request(&s, "GET", WIDGETS, &[&table_accept], None);
    assert_eq!(table.code, 200);
    let table = table.cbor();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["rows"][0]["cells"][0], "w1", "{table}");

    // Custom resources have no protobuf form, CBOR or not.
    let proto = "Accept: application/vnd.kubernetes.protobuf";
    let refused = request(&s, "GET", WIDGETS, &[proto], None);
    assert_eq!(refused.code, 406);
    assert_eq!(
        refused.json()["message"],
        "only the following media types are accepted: application/json, application/yaml, \
         application/cbor"
    );
}

#[test]
fn malformed_cbor_bodies_are_bad_requests() {
    let s = TestServer::start_with(&[GATE]);
    let content = format!("Content-Type: {CBOR}");
    let mut truncated = config_map("cut");
    truncated.truncate(truncated.len() - 4);
    // {"metadata": ..., "metadata": ...}: duplicate keys are never accepted.
    let duplicate = [
        &kube_cbor::SELF_DESCRIBED[..],
        &[0xa2],
        &[0x48],
        b"metadata",
        &[0xa0, 0x48],
        b"metadata",
        &[0xa0],
    ]
    .concat();
    for body in [truncated, duplicate, b"{\"not\": \"cbor\"}".to_vec()] {
        let a = request(&s, "POST", CM, &[&content], Some(&body));
        assert_eq!(a.code, 400, "{:?}", a.json());
        let status = a.json();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "BadRequest");
        let message = status["message"].as_str().unwrap_or("");
        assert!(
            message.starts_with(
                "the object provided is unrecognized (must be of type ConfigMap): \
                 unable to determine group/version/kind: cbor:"
            ),
            "{message}"
        );
    }
}

#[test]
fn without_the_gate_cbor_is_not_acceptable() {
    let s = TestServer::start();
    let accept = format!("Accept: {CBOR}");
    for path in [CM, &format!("{CM}/x")[..]] {
        let a = request(&s, "GET", path, &[&accept], None);
        assert_eq!(a.code, 406);
        assert_eq!(a.content_type, "application/json");
        let status = a.json();
        assert_eq!(status["reason"], "NotAcceptable");
        assert_eq!(
            status["message"],
            "only the following media types are accepted: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf"
        );
    }
    let apply = request(
        &s,
        "PATCH",
        &format!("{CM}/x?fieldManager=cbor-test"),
        &["Content-Type: application/apply-patch+cbor"],
        Some(&config_map("x")),
    );
    assert_eq!(apply.code, 415, "{:?}", apply.json());
    let message = apply.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(
        message.ends_with("application/apply-patch+yaml"),
        "{message}"
    );
    let content = format!("Content-Type: {CBOR}");
    let a = request(&s, "POST", CM, &[&content], Some(&config_map("c")));
    assert_eq!(a.code, 415);
    let status = a.json();
    assert_eq!(status["reason"], "UnsupportedMediaType");
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
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

#[test]
fn custom_resources_are_stored_as_cbor_and_read_without_the_gate() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let etcd = rt.block_on(EtcdServer::start()).expect("etcd starts");
    let servers = format!("--etcd-servers={}", etcd.client_url());
    let mut s = TestServer::start_with(&[&servers, GATE]);
    establish(&s);
    let content = format!("Content-Type: {CBOR}");
    let created = request(&s, "POST", WIDGETS, &[&content], Some(&widget("stored")));
    assert_eq!(created.code, 201, "{:?}", created.json());
    s.ok(&["create", "configmap", "builtin", "--from-literal=k=v"]);

    let kv = rt.block_on(etcd.kv()).expect("etcd client");
    let stored = raw_value(&rt, &kv, "/registry/example.com/widgets/default/stored");
    assert!(
        stored.starts_with(&kube_cbor::SELF_DESCRIBED),
        "{stored:02x?}"
    );
    let decoded = kube_cbor::decode(&stored).expect("stored CBOR decodes");
    assert_eq!(decoded["spec"]["size"], 3);
    // Built-in resources keep their storage encoding (protobuf).
    let builtin = raw_value(&rt, &kv, "/registry/configmaps/default/builtin");
    assert!(builtin.starts_with(b"k8s\0"));

    // Without the gate the CBOR object is still read; new writes are JSON.
    s.restart_with(&[&servers]);
    let color = ["get", "widget", "stored", "-o", "jsonpath={.spec.color}"];
    assert_eq!(s.ok(&color), "red");
    s.ok(&["label", "widget", "stored", "rewritten=yes"]);
    let rewritten = raw_value(&rt, &kv, "/registry/example.com/widgets/default/stored");
    assert_eq!(rewritten.first(), Some(&b'{'), "{rewritten:02x?}");
}

/// `kubectl.1.33` beside the `kubectl` on PATH, if installed.
fn kubectl_1_33() -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    let default = std::env::split_paths(&paths)
        .map(|dir| dir.join("kubectl"))
        .find(|p| p.is_file())?;
    let real = std::fs::canonicalize(&default).ok()?;
    Some(real.parent()?.join("kubectl.1.33")).filter(|p| p.is_file())
}

/// A Go client (kubectl 1.33's dynamic client with client-go's CBOR gates
/// on) lists, watches and reads Status errors in CBOR from this server.
#[test]
fn a_go_client_preferring_cbor_reads_our_cbor() {
    let Some(kubectl) = kubectl_1_33() else {
        eprintln!("kubectl.1.33 is not installed beside kubectl: skipped");
        return;
    };
    let s = TestServer::start_with(&[GATE]);
    establish(&s);
    s.ok(&["create", "configmap", "watched", "--from-literal=k=v"]);
    let content = format!("Content-Type: {CBOR}");
    let created = request(&s, "POST", WIDGETS, &[&content], Some(&widget("w1")));
    assert_eq!(created.code, 201, "{:?}", created.json());
    let run = |args: &[&str]| -> Output {
        Command::new(&kubectl)
            .args(args)
            .arg("-v=8")
            .env("KUBECONFIG", &s.kubeconfig)
            .env("HOME", s.dir.path())
            .env("KUBE_FEATURE_ClientsAllowCBOR", "true")
            .env("KUBE_FEATURE_ClientsPreferCBOR", "true")
            .output()
            .expect("kubectl runs")
    };
    for (condition, object) in [
        ("jsonpath={.data.k}=v", "configmap/watched"),
        ("jsonpath={.spec.color}=red", "widget/w1"),
    ] {
        let out = run(&["wait", "--for", condition, object, "--timeout=10s"]);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{log}");
        assert!(log.contains("Content-Type: application/cbor-seq"), "{log}");
    }
    // Deleting waits with GETs answered in CBOR, the last a NotFound Status.
    let out = run(&["delete", "configmap", "watched"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("Content-Type: application/cbor\n"), "{log}");
}
