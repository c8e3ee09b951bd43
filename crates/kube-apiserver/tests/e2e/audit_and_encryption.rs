//! Auditing and encryption at rest through the binary: an audit policy and
//! `--audit-log-path` record kubectl's requests at the policy's levels with
//! the caller's identity and the `Audit-Id` the client saw; with
//! `--encryption-provider-config` secrets reach storage (a real etcd, or the
//! embedded store opened after the server stopped) as
//! `k8s:enc:<provider>:v1:<key>:…` while kubectl reads them in plain form,
//! across key rotation and a switch back to identity. Each scenario runs on
//! both backends except automatic reload, which needs etcd: reading the
//! embedded store restarts the server, which reloads the file anyway.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::{Backend, Served};
use crate::support::audit::events;

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/readyz*", "/healthz*", "/livez*"]
  - level: None
    users: ["system:apiserver"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: Metadata
"#;

/// 32 bytes each, base64.
const KEY1: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const KEY2: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path
}

/// The ResponseComplete event of `verb` on `resource` named `name`.
fn find<'a>(events: &'a [Value], verb: &str, resource: &str, name: &str) -> &'a Value {
    events
        .iter()
        .find(|e| {
            e["stage"] == "ResponseComplete"
                && e["verb"] == verb
                && e["objectRef"]["resource"] == resource
                && e["objectRef"]["name"] == name
        })
        .unwrap_or_else(|| panic!("no {verb} {resource}/{name} event in {events:#?}"))
}

fn audit_log_records_kubectl_requests_at_the_policy_levels(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let policy = write(files.path(), "policy.yaml", POLICY);
    let log = files.path().join("logs/audit.log");
    let s = backend.start_with(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
        "--audit-log-maxsize=1",
    ]);
    s.ok(&["create", "configmap", "audited", "--from-literal=k=v"]);
    // -v=8 prints the response headers, the audit ID among them.
    let get = s.kubectl(&["get", "configmap", "audited", "-v=8"]);
    assert!(get.status.success());
    let trace = String::from_utf8_lossy(&get.stderr).into_owned();
    let audit_id = trace
        .lines()
        .rev()
        .find_map(|l| {
            l.split_once("Audit-Id: ")
                .map(|(_, id)| id.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no Audit-Id header in kubectl's trace:\n{trace}"));
    s.ok(&["get", "namespaces"]);
    s.fails(&["get", "secret", "nope"]);

    let events = events(&log);
    assert!(events.iter().all(|e| e["kind"] == "Event"
        && e["apiVersion"] == "audit.k8s.io/v1"
        && e["stage"] != "RequestReceived"));
    assert!(
        !events.iter().any(|e| e["requestURI"]
            .as_str()
            .unwrap_or("")
            .starts_with("/readyz")),
        "/readyz is not audited"
    );
    let create = find(&events, "create", "configmaps", "audited");
    assert_eq!(create["level"], "RequestResponse");
    assert_eq!(create["user"]["username"], "kubernetes-admin");
    let groups = create["user"]["groups"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        groups.contains(&Value::from("system:masters")),
        "{groups:?}"
    );
    assert_eq!(create["objectRef"]["namespace"], "default");
    assert_eq!(create["objectRef"]["apiVersion"], "v1");
    assert_eq!(create["responseStatus"]["code"], 201);
    assert_eq!(create["requestObject"]["data"]["k"], "v");
    assert_eq!(create["responseObject"]["metadata"]["name"], "audited");
    assert_eq!(
        create["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(create["sourceIPs"][0] == "127.0.0.1");
    assert!(create["userAgent"]
        .as_str()
        .unwrap_or("")
        .starts_with("kubectl"));

    let read = find(&events, "get", "configmaps", "audited");
    assert_eq!(read["auditID"], audit_id.as_str());
    assert_eq!(read["responseStatus"]["code"], 200);

    let list = events
        .iter()
        .find(|e| e["verb"] == "list" && e["objectRef"]["resource"] == "namespaces")
        .expect("namespace list event");
    assert_eq!(list["level"], "Metadata");
    assert!(list.get("responseObject").is_none() && list.get("requestObject").is_none());

    let missing = find(&events, "get", "secrets", "nope");
    assert_eq!(missing["level"], "Metadata");
    assert_eq!(missing["responseStatus"]["code"], 404);
    assert_eq!(missing["responseStatus"]["reason"], "NotFound");
}

#[test]
fn a_policy_with_errors_stops_startup() {
    let files = tempfile::tempdir().expect("temp dir");
    let policy = write(
        files.path(),
        "policy.yaml",
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n",
    );
    let mut child = std::process::Command::new(crate::harness::binary())
        .arg(format!("--data-dir={}", files.path().display()))
        .arg(format!("--audit-policy-file={}", policy.display()))
        .arg("--audit-log-path=-")
        .arg("--bind-address=127.0.0.1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("server runs");
    // It must exit on its own; a server that started anyway is killed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().ok().flatten().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("server output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rules[0].level: Unsupported value: \"Loud\""),
        "{stderr}"
    );
}

fn encryption_config(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n{providers}"
    )
}

fn aescbc(keys: &[(&str, &str)]) -> String {
    let mut out = "      - aescbc:\n          keys:\n".to_owned();
    for (name, secret) in keys {
        out.push_str(&format!(
            "            - name: {name}\n              secret: {secret}\n"
        ));
    }
    out
}

const IDENTITY: &str = "      - identity: {}\n";

/// The stored value of `key`, which must exist.
fn raw(s: &mut Served, key: &str) -> Vec<u8> {
    s.stored(key).unwrap_or_else(|| panic!("{key} not stored"))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn secrets_are_encrypted_at_rest_and_keys_rotate(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let config = write(
        files.path(),
        "enc.yaml",
        &encryption_config(&(aescbc(&[("key1", KEY1)]) + IDENTITY)),
    );
    // A restart without the key of a stored Secret leaves its watch cache
    // unloaded; readiness waits for it no longer than this (upstream's
    // storage-readiness hook, 1 minute by default).
    let mut s = backend.start_with(&[
        &format!("--encryption-provider-config={}", config.display()),
        "--storage-initialization-timeout=2s",
    ]);
    let before = s.ok(&[
        "get",
        "secrets",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=password=hunter2",
    ]);
    // Watchers (served from the watch cache or storage) get it decrypted.
    let watch = s.ok(&[
        "get",
        "--raw",
        &format!(
            "/api/v1/namespaces/default/secrets?watch=1&timeoutSeconds=1&resourceVersion={before}"
        ),
    ]);
    assert!(
        watch.contains("\"type\":\"ADDED\"") && watch.contains("aHVudGVyMg=="),
        "{watch}"
    );
    s.ok(&["create", "configmap", "plain", "--from-literal=k=visible"]);
    let stored = raw(&mut s, "/registry/secrets/default/s1");
    assert!(
        stored.starts_with(b"k8s:enc:aescbc:v1:key1:"),
        "{:?}",
        String::from_utf8_lossy(&stored[..stored.len().min(40)])
    );
    for plain in [&b"hunter2"[..], b"aHVudGVyMg==", b"\"kind\""] {
        assert!(!contains(&stored, plain));
    }
    let cm = raw(&mut s, "/registry/configmaps/default/plain");
    assert!(contains(&cm, b"visible"), "configmaps stay plain");
    let password = ["get", "secret", "s1", "-o", "jsonpath={.data.password}"];
    assert_eq!(s.ok(&password), "aHVudGVyMg==");

    // Rotation: key2 now writes, key1 still reads.
    write(
        files.path(),
        "enc.yaml",
        &encryption_config(&(aescbc(&[("key2", KEY2), ("key1", KEY1)]) + IDENTITY)),
    );
    s.restart();
    assert_eq!(s.ok(&password), "aHVudGVyMg==");
    s.ok(&["label", "secret", "s1", "rotated=yes"]);
    let stored = raw(&mut s, "/registry/secrets/default/s1");
    assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key2:"));

    // Identity first: encrypted data still reads, new writes are plain.
    write(
        files.path(),
        "enc.yaml",
        &encryption_config(&(IDENTITY.to_owned() + &aescbc(&[("key2", KEY2)]))),
    );
    s.restart();
    assert_eq!(s.ok(&password), "aHVudGVyMg==");
    s.ok(&[
        "create",
        "secret",
        "generic",
        "s2",
        "--from-literal=password=open",
    ]);
    let stored = raw(&mut s, "/registry/secrets/default/s2");
    // Plain (JSON or protobuf, per --storage-media-type): the name is readable.
    assert!(
        !stored.starts_with(b"k8s:enc:"),
        "identity stores plain data"
    );
    assert!(contains(&stored, b"s2"));

    // Without the key that wrote s1, reading it fails.
    write(
        files.path(),
        "enc.yaml",
        &encryption_config(&(aescbc(&[("key3", KEY1)]) + IDENTITY)),
    );
    s.restart();
    let err = s.fails(&["get", "secret", "s1"]);
    assert!(
        err.contains("no matching prefix found") || err.contains("Internal error"),
        "{err}"
    );
}

fn secretbox_encrypts_secrets(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let providers = format!("      - secretbox:\n          keys:\n            - name: box\n              secret: {KEY2}\n");
    let config = write(files.path(), "enc.yaml", &encryption_config(&providers));
    let mut s = backend.start_with(&[&format!(
        "--encryption-provider-config={}",
        config.display()
    )]);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "boxed",
        "--from-literal=token=t0ps3cret",
    ]);
    assert_eq!(
        s.ok(&["get", "secret", "boxed", "-o", "jsonpath={.data.token}"]),
        "dDBwczNjcmV0"
    );
    let stored = raw(&mut s, "/registry/secrets/default/boxed");
    assert!(stored.starts_with(b"k8s:enc:secretbox:v1:box:"));
    assert!(!contains(&stored, b"t0ps3cret") && !contains(&stored, b"dDBwczNjcmV0"));
}

#[test]
fn automatic_reload_switches_providers_without_a_restart() {
    let files = tempfile::tempdir().expect("temp dir");
    let config = write(files.path(), "enc.yaml", &encryption_config(IDENTITY));
    let mut s = Backend::Etcd.start_with(&[
        &format!("--encryption-provider-config={}", config.display()),
        "--encryption-provider-config-automatic-reload",
    ]);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "before",
        "--from-literal=a=b",
    ]);
    let before = raw(&mut s, "/registry/secrets/default/before");
    assert!(!before.starts_with(b"k8s:enc:"));
    write(
        files.path(),
        "enc.yaml",
        &encryption_config(&(aescbc(&[("key1", KEY1)]) + IDENTITY)),
    );
    // The file is checked every few seconds; each attempt writes a new secret.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let name = format!("after-{attempt}");
        s.ok(&["create", "secret", "generic", &name, "--from-literal=a=b"]);
        let key = format!("/registry/secrets/default/{name}");
        if raw(&mut s, &key).starts_with(b"k8s:enc:aescbc:v1:key1:") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new configuration was not picked up"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    // Both the plain and the encrypted secret read back.
    assert_eq!(
        s.ok(&["get", "secret", "before", "-o", "jsonpath={.data.a}"]),
        "Yg=="
    );
    let last = format!("after-{attempt}");
    assert_eq!(
        s.ok(&["get", "secret", &last, "-o", "jsonpath={.data.a}"]),
        "Yg=="
    );
}

crate::harness::on_both_backends!(
    backend: audit_log_records_kubectl_requests_at_the_policy_levels,
    secrets_are_encrypted_at_rest_and_keys_rotate,
    secretbox_encrypts_secrets
);
