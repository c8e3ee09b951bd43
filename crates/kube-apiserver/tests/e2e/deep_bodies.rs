//! Bodies nested as deep as upstream decodes them (10000 levels, Go's
//! `encoding/json` limit) are served through create, get, list, watch,
//! merge patch, server-side apply (kubectl's and a raw JSON one) and delete
//! on both backends, each within a bound; one level deeper is upstream's
//! 400 "exceeded max depth" at once, and the server keeps serving. Nested
//! arrays are atomic to server-side apply; nested objects make field sets
//! (and `managedFields`) as deep as they are, walked in linear time.
//! YAML that is not JSON, in block and in flow style, is decoded to the
//! same depth (go-yaml's 10000 flow levels and indents).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{on_both_backends, TestServer};
use crate::support::crds::crd;
use crate::support::http::admin_curl;

on_both_backends!(deepest_bodies_are_served, deepest_yaml_bodies_are_served);

/// Upstream's nesting limit for JSON bodies.
const UPSTREAM_MAX_DEPTH: usize = 10_000;
const DEEPS: &str = "/apis/example.com/v1/namespaces/default/deeps";
/// Per request, in the unoptimized build the tests run.
const BOUND: Duration = Duration::from_secs(10);

struct Answer {
    code: u16,
    text: String,
}

/// One request whose body is read from a file; the answer as text (a tree
/// this deep is past what a default `serde_json` reads).
fn send(s: &TestServer, method: &str, path: &str, content_type: &str, body: &str) -> Answer {
    let file = s.dir.path().join("deep-body");
    std::fs::write(&file, body).expect("write body");
    let mut cmd = admin_curl(s);
    cmd.args(["-H", &format!("Content-Type: {content_type}")])
        .arg("--data-binary")
        .arg(format!("@{}", file.display()));
    run(s, cmd, method, path)
}

fn get(s: &TestServer, path: &str) -> Answer {
    run(s, admin_curl(s), "GET", path)
}

/// Not as curl: upstream (and this server) indents JSON for curl's user
/// agent, which takes time and bytes quadratic in the depth.
fn run(s: &TestServer, mut cmd: Command, method: &str, path: &str) -> Answer {
    cmd.args(["-A", "deep-bodies", "--max-time", "30", "-X", method])
        .args(["-w", "\n%{http_code}"])
        .arg(format!("https://127.0.0.1:{}{path}", s.port));
    let started = Instant::now();
    let out = cmd.output().expect("curl runs");
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (text, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    eprintln!("{method} {path}: {code} in {took:?}");
    assert!(took < BOUND, "{method} {path} took {took:?}");
    Answer {
        code: code.trim().parse().unwrap_or(0),
        text: text.to_owned(),
    }
}

/// Arrays nested `depth` deep around `1`.
fn arrays(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// Objects nested `depth` deep, each holding the next under `a`.
fn objects(depth: usize) -> String {
    format!(
        "{}{{}}{}",
        r#"{"a":"#.repeat(depth - 1),
        "}".repeat(depth - 1)
    )
}

/// A Deep named `name` whose `spec.field` is `value`: the object is two
/// levels deeper than `value`.
fn deep(name: &str, field: &str, value: &str) -> String {
    format!(
        r#"{{"apiVersion":"example.com/v1","kind":"Deep","metadata":{{"name":"{name}"}},"spec":{{"{field}":{value}}}}}"#
    )
}

fn establish(s: &TestServer) {
    let schema = " {type: object, x-kubernetes-preserve-unknown-fields: true}";
    s.apply_yaml(&crd("deeps", "Deep", "Namespaced", schema));
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/deeps.example.com",
    ]);
}

fn deepest_bodies_are_served(s: &TestServer) {
    establish(s);
    let listed = get(s, DEEPS);
    assert_eq!(listed.code, 200, "{}", listed.text);
    let list: serde_json::Value = serde_json::from_str(&listed.text).expect("a list");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_owned();

    let nested = arrays(UPSTREAM_MAX_DEPTH - 2);
    let created = send(
        s,
        "POST",
        DEEPS,
        "application/json",
        &deep("one", "x", &nested),
    );
    assert_eq!(created.code, 201, "{:.300}", created.text);
    assert!(created.text.contains(&nested), "the created object whole");

    let too_deep = deep("two", "x", &arrays(UPSTREAM_MAX_DEPTH - 1));
    for (content_type, message) in [
        ("application/json", "exceeded max depth"),
        ("application/yaml", "exceeded max depth of 10000"),
    ] {
        let refused = send(s, "POST", DEEPS, content_type, &too_deep);
        assert_eq!(refused.code, 400, "{content_type}: {:.300}", refused.text);
        assert!(refused.text.contains(message), "{}", refused.text);
    }

    let one = format!("{DEEPS}/one");
    assert!(get(s, &one).text.contains(&nested), "get");
    assert!(get(s, DEEPS).text.contains(&nested), "list");
    let watched = get(
        s,
        &format!("{DEEPS}?watch=1&resourceVersion={rv}&timeoutSeconds=2"),
    );
    assert!(
        watched.text.contains(r#""type":"ADDED""#),
        "{:.300}",
        watched.text
    );
    assert!(watched.text.contains(&nested), "watch");

    let branch = objects(UPSTREAM_MAX_DEPTH - 2);
    let patch = format!(r#"{{"spec":{{"y":{branch}}}}}"#);
    let patched = send(s, "PATCH", &one, "application/merge-patch+json", &patch);
    assert_eq!(patched.code, 200, "{:.300}", patched.text);
    let got = get(s, &one).text;
    assert!(got.contains(&branch) && got.contains(&nested), "patched");

    let applied = send(
        s,
        "PATCH",
        &format!("{DEEPS}/two?fieldManager=deep"),
        "application/apply-patch+yaml",
        &deep("two", "z", &branch),
    );
    assert_eq!(applied.code, 201, "{:.300}", applied.text);
    let file = s.dir.path().join("three.json");
    std::fs::write(&file, deep("three", "x", &nested)).expect("write");
    let path = file.to_str().expect("utf-8");
    s.ok(&["apply", "--server-side", "-f", path]);
    // Go clients (kubectl) read no deeper than 10000 either: a list, two
    // levels deeper than its items, is checked here with curl.
    let listed = get(s, DEEPS).text;
    for name in ["one", "two", "three"] {
        assert!(
            listed.contains(&format!(r#""name":"{name}""#)),
            "{name} listed"
        );
    }
    assert!(get(s, &format!("{DEEPS}/three")).text.contains(&nested));

    let deleted = run(s, admin_curl(s), "DELETE", DEEPS);
    assert_eq!(deleted.code, 200, "{:.300}", deleted.text);
    assert!(!get(s, DEEPS).text.contains(r#""name":"one""#), "deleted");
    s.ok(&["create", "configmap", "after", "--from-literal=k=v"]);
    assert_eq!(get(s, "/readyz").code, 200);
}

/// A Deep named `name` in YAML flow style (not JSON) whose `spec.x` is
/// arrays nested `depth` deep: the object is `depth + 2` deep.
fn flow_yaml(name: &str, depth: usize) -> String {
    format!(
        "{{apiVersion: example.com/v1, kind: Deep, metadata: {{name: {name}}}, spec: {{x: {}1{}}}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

/// The same in block style, the arrays as compact sequences (`- - 1`).
fn block_yaml(name: &str, depth: usize) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Deep\nmetadata:\n  name: {name}\nspec:\n  x:\n    {}1\n",
        "- ".repeat(depth)
    )
}

fn deepest_yaml_bodies_are_served(s: &TestServer) {
    establish(s);
    let nested = arrays(UPSTREAM_MAX_DEPTH - 2);
    for (name, yaml) in [
        ("flow", flow_yaml as fn(&str, usize) -> String),
        ("block", block_yaml),
    ] {
        let created = send(
            s,
            "POST",
            DEEPS,
            "application/yaml",
            &yaml(name, UPSTREAM_MAX_DEPTH - 2),
        );
        assert_eq!(created.code, 201, "{name}: {:.300}", created.text);
        let got = get(s, &format!("{DEEPS}/{name}"));
        assert!(
            got.text.contains(&nested),
            "{name} reads back whole: {:.500}",
            got.text
        );
        let refused = send(
            s,
            "POST",
            DEEPS,
            "application/yaml",
            &yaml(&format!("{name}-deeper"), UPSTREAM_MAX_DEPTH - 1),
        );
        assert_eq!(refused.code, 400, "{name}: {:.300}", refused.text);
        assert!(
            refused.text.contains("exceeded max depth of 10000"),
            "{name}: {:.300}",
            refused.text
        );
    }
    assert_eq!(get(s, "/readyz").code, 200);
}
