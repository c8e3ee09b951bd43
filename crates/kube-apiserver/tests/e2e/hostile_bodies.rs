//! Hostile request bodies (deep nesting in JSON, YAML and CBOR, YAML alias
//! bombs, protobuf with impossible lengths or endless groups, oversized
//! JSON patches) answered with upstream's 4xx Status
//! within a bound, while a concurrent GET keeps being answered and the
//! server serves normally afterwards.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::harness::{on_both_backends, Backend, TestServer};

const CM: &str = "/api/v1/namespaces/default/configmaps";
const BOUND: Duration = Duration::from_secs(2);
const GATE: &str = "--feature-gates=CBORServingAndStorage=true";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

struct Answer {
    code: u16,
    body: serde_json::Value,
    took: Duration,
}

/// Sends `body` (from a file, so it may be megabytes) with curl.
fn send(s: &TestServer, method: &str, path: &str, content_type: &str, body: &[u8]) -> Answer {
    let file = s.dir.path().join("hostile-body");
    std::fs::write(&file, body).expect("write body");
    let mut cmd = curl(s, method, path);
    cmd.args(["-H", &format!("Content-Type: {content_type}")])
        .arg("--data-binary")
        .arg(format!("@{}", file.display()));
    run(cmd)
}

fn curl(s: &TestServer, method: &str, path: &str) -> Command {
    curl_at(s.dir.path(), s.port, method, path)
}

/// curl with the admin certificate of the server in `dir` on `port`.
fn curl_at(dir: &Path, port: u16, method: &str, path: &str) -> Command {
    let pki = dir.join("pki");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "60", "--cacert"])
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .args(["-X", method, "-w", "\n%{http_code}"])
        .arg(format!("https://127.0.0.1:{port}{path}"));
    cmd
}

fn run(mut cmd: Command) -> Answer {
    let started = Instant::now();
    let out = cmd.output().expect("curl runs");
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    Answer {
        code: code.trim().parse().unwrap_or(0),
        body: serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
        took,
    }
}

/// GETs the ConfigMap list until told to stop; the slowest answer.
fn keep_getting(s: &TestServer, stop: Arc<AtomicBool>) -> thread::JoinHandle<Duration> {
    let dir = s.dir.path().to_owned();
    let port = s.port;
    thread::spawn(move || {
        let mut slowest = Duration::ZERO;
        while !stop.load(Ordering::Relaxed) {
            let answer = run(curl_at(&dir, port, "GET", CM));
            assert_eq!(answer.code, 200, "concurrent GET: {}", answer.body);
            slowest = slowest.max(answer.took);
        }
        slowest
    })
}

struct Case {
    name: &'static str,
    method: &'static str,
    path: String,
    content_type: &'static str,
    body: Vec<u8>,
    code: u16,
    reason: &'static str,
    message: String,
}

fn case(name: &'static str, content_type: &'static str, body: Vec<u8>) -> Case {
    Case {
        name,
        method: "POST",
        path: CM.into(),
        content_type,
        body,
        code: 400,
        reason: "BadRequest",
        message: String::new(),
    }
}

fn laughs() -> String {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text += &format!("a{i}: &a{i} [{refs}]\n");
    }
    text + &format!("pad: [{}1]\n", "1, ".repeat(100_000))
}

/// A protobuf body: upstream's `k8s\0` prefix and an Unknown envelope of a
/// v1 ConfigMap whose raw message is `raw`.
fn protobuf(raw: &[u8]) -> Vec<u8> {
    fn varint(mut n: usize, out: &mut Vec<u8>) {
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    let mut type_meta = vec![0x0a, 2];
    type_meta.extend(b"v1\x12\x09ConfigMap");
    let mut body = b"k8s\0\x0a".to_vec();
    varint(type_meta.len(), &mut body);
    body.extend(type_meta);
    body.push(0x12);
    varint(raw.len(), &mut body);
    body.extend(raw);
    body
}

fn unrecognized(detail: &str) -> String {
    format!("the object provided is unrecognized (must be of type ConfigMap): {detail}")
}

fn cases() -> Vec<Case> {
    let yaml_depth = unrecognized("yaml: exceeded max depth of 10000");
    let target = format!("{CM}/target");
    let mut cbor = vec![0xd9, 0xd9, 0xf7];
    cbor.extend(std::iter::repeat_n(0x81u8, 1_000_000));
    cbor.push(0x01);
    let ops = format!(
        "[{}]",
        vec![r#"{"op":"test","path":"/data","value":{}}"#; 10_001].join(",")
    );
    vec![
        Case { message: yaml_depth.clone(), ..case("yaml [", "application/yaml", "[".repeat(100_000).into()) },
        Case { message: yaml_depth.clone(), ..case("yaml {", "application/yaml", "{a: ".repeat(100_000).into()) },
        Case {
            message: yaml_depth,
            ..case("yaml - chain", "application/yaml", ("- ".repeat(1_000_000) + "x").into())
        },
        Case {
            message: unrecognized("yaml: document contains excessive aliasing"),
            ..case("yaml aliases", "application/yaml", laughs().into())
        },
        Case {
            message: unrecognized("couldn't get version/kind; json parse error: exceeded max depth"),
            ..case("json [", "application/json", "[".repeat(1_000_000).into())
        },
        Case {
            message: unrecognized("unable to determine group/version/kind: cbor: exceeded max nested level 64"),
            ..case("cbor", "application/cbor", cbor)
        },
        Case {
            message: "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: ".into(),
            ..case("protobuf length", PROTOBUF, protobuf(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]))
        },
        Case {
            message: "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: ".into(),
            ..case("protobuf groups", PROTOBUF, protobuf(&[0x0b; 1_000_000]))
        },
        Case {
            method: "PATCH",
            path: format!("{target}?fieldManager=hostile"),
            message: "error decoding patch: yaml: exceeded max depth of 10000".into(),
            ..case("apply yaml", "application/apply-patch+yaml", "[".repeat(100_000).into())
        },
        Case {
            method: "PATCH",
            path: target.clone(),
            message: "error decoding patch: exceeded max depth".into(),
            ..case("merge patch", "application/merge-patch+json", "{\"a\":".repeat(100_000).into())
        },
        Case {
            method: "PATCH",
            path: target.clone(),
            message: "error decoding patch: exceeded max depth".into(),
            ..case("strategic patch", "application/strategic-merge-patch+json", "[".repeat(100_000).into())
        },
        Case {
            method: "PATCH",
            path: target.clone(),
            code: 413,
            reason: "RequestEntityTooLarge",
            message: "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001".into(),
            ..case("json patch ops", "application/json-patch+json", ops.into())
        },
        Case {
            method: "DELETE",
            path: target,
            message: "invalid DeleteOptions: yaml: exceeded max depth of 10000".into(),
            ..case("delete options", "application/yaml", "{a: ".repeat(100_000).into())
        },
    ]
}

fn hostile_bodies_answer_4xx_quickly(backend: Backend) {
    let s = backend.start_with(&[GATE]);
    s.ok(&["create", "configmap", "target", "--from-literal=k=v"]);
    let stop = Arc::new(AtomicBool::new(false));
    let getter = keep_getting(&s, stop.clone());
    for c in cases() {
        let a = send(&s, c.method, &c.path, c.content_type, &c.body);
        eprintln!("{:?} {}: {} in {:?}", backend, c.name, a.code, a.took);
        assert_eq!(a.code, c.code, "{}: {}", c.name, a.body);
        assert_eq!(a.body["kind"], "Status", "{}: {}", c.name, a.body);
        assert_eq!(a.body["reason"], c.reason, "{}: {}", c.name, a.body);
        let message = a.body["message"].as_str().unwrap_or("");
        assert!(
            message.starts_with(&c.message),
            "{}: {message:?} is not {:?}",
            c.name,
            c.message
        );
        assert!(a.took < BOUND, "{} took {:?}", c.name, a.took);
    }
    stop.store(true, Ordering::Relaxed);
    let slowest = getter.join().expect("the concurrent GETs all answered");
    eprintln!("{backend:?}: slowest concurrent GET {slowest:?}");
    assert!(slowest < BOUND, "a concurrent GET took {slowest:?}");
    s.ok(&["create", "configmap", "after", "--from-literal=k=v"]);
    let got = s.ok(&["get", "configmap", "target", "-o", "jsonpath={.data.k}"]);
    assert_eq!(got, "v");
}

on_both_backends!(backend: hostile_bodies_answer_4xx_quickly);
