//! Audit backends through the binary, on both storage backends: a slow
//! webhook in batch mode (the default) never holds requests up and gets
//! its events as `EventList`s; the log backend truncates oversized events
//! (`--audit-log-truncate-*`), strips managedFields for `omitManagedFields`
//! and the `apiserver_audit_*` series count what was audited; an
//! unsupported `--audit-log-version` stops startup.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Backend;
use crate::support::audit::events;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path
}

/// An HTTP server that waits `delay` before answering each request and
/// keeps every JSON body it was sent.
fn slow_webhook(delay: Duration) -> (u16, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind webhook");
    let port = listener.local_addr().expect("webhook address").port();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                if let Some(body) = read_request(&conn) {
                    std::thread::sleep(delay);
                    seen.lock().unwrap_or_else(|p| p.into_inner()).push(body);
                }
                let _ = (&conn).write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            });
        }
    });
    (port, bodies)
}

/// One request's JSON body.
fn read_request(conn: &std::net::TcpStream) -> Option<Value> {
    let mut reader = BufReader::new(conn);
    let mut len = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                len = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

const CONFIGMAPS_ONLY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Metadata
    resources: [{group: "", resources: ["configmaps"]}]
  - level: None
"#;

fn slow_webhook_never_blocks_requests(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let (port, bodies) = slow_webhook(Duration::from_secs(3));
    let policy = write(files.path(), "policy.yaml", CONFIGMAPS_ONLY);
    let kubeconfig = write(
        files.path(),
        "webhook.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sink\n  cluster:\n    server: http://127.0.0.1:{port}/audit\ncontexts:\n- name: c\n  context: {{cluster: sink, user: \"\"}}\ncurrent-context: c\nusers: []\n"
        ),
    );
    let s = backend.start_with(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-webhook-config-file={}", kubeconfig.display()),
        "--audit-webhook-batch-max-wait=1s",
    ]);
    for i in 0..4 {
        let started = Instant::now();
        s.ok(&["create", "configmap", &format!("w{i}")]);
        // The webhook takes 3s per batch; the request must not wait for it.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "create w{i} took {:?}",
            started.elapsed()
        );
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let created = loop {
        let lists = bodies.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let created: Vec<Value> = lists
            .iter()
            .inspect(|l| {
                assert_eq!(l["kind"], "EventList");
                assert_eq!(l["apiVersion"], "audit.k8s.io/v1");
            })
            .flat_map(|l| l["items"].as_array().cloned().unwrap_or_default())
            .filter(|e| e["verb"] == "create" && e["stage"] == "ResponseComplete")
            .collect();
        if created.len() >= 4 || Instant::now() > deadline {
            break created;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut names: Vec<&str> = created
        .iter()
        .filter_map(|e| e["objectRef"]["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["w0", "w1", "w2", "w3"], "{created:#?}");
    assert!(created.iter().all(|e| e["level"] == "Metadata"
        && e["objectRef"]["resource"] == "configmaps"
        && e["responseStatus"]["code"] == 201));
}

const TRUNCATING: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    resources: [{group: "", resources: ["configmaps"]}]
    omitManagedFields: true
  - level: None
    nonResourceURLs: ["/metrics"]
  - level: Metadata
"#;

fn created<'a>(events: &'a [Value], name: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["verb"] == "create" && e["objectRef"]["name"] == name)
        .unwrap_or_else(|| panic!("no create event for {name} in {events:#?}"))
}

/// The value of an unlabelled series in Prometheus text.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn log_truncates_large_events_and_counts_them(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let policy = write(files.path(), "policy.yaml", TRUNCATING);
    let log = files.path().join("audit.log");
    let s = backend.start_with(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
        "--audit-log-truncate-enabled",
        "--audit-log-truncate-max-event-size=6000",
        "--audit-log-truncate-max-batch-size=6000",
    ]);
    s.ok(&["create", "configmap", "small", "--from-literal=k=v"]);
    let big = format!("--from-literal=k={}", "x".repeat(8000));
    s.ok(&["create", "configmap", "big", &big]);
    let metrics = s.ok(&["get", "--raw", "/metrics"]);

    let events = events(&log);
    let small = created(&events, "small");
    assert_eq!(small["requestObject"]["data"]["k"], "v");
    assert_eq!(small["responseObject"]["metadata"]["name"], "small");
    assert!(
        small["responseObject"]["metadata"]
            .get("managedFields")
            .is_none(),
        "omitManagedFields: {small:#}"
    );
    assert!(small["annotations"].get("audit.k8s.io/truncated").is_none());
    let big = created(&events, "big");
    assert_eq!(big["annotations"]["audit.k8s.io/truncated"], "true");
    assert!(big.get("requestObject").is_none() && big.get("responseObject").is_none());
    assert_eq!(big["level"], "RequestResponse");
    assert_eq!(big["responseStatus"]["code"], 201);

    let written = sample(&metrics, "apiserver_audit_event_total").expect("event counter");
    assert!(written >= 2.0, "{written}");
    assert!(
        sample(
            &metrics,
            "apiserver_audit_level_total{level=\"RequestResponse\"}"
        )
        .is_some_and(|n| n >= 2.0),
        "{metrics}"
    );
    assert!(metrics.lines().any(
        |l| l == "# TYPE apiserver_audit_requests_rejected_total counter"
            || l == "# TYPE apiserver_audit_requests_rejected counter"
    ));
}

#[test]
fn an_unsupported_audit_version_stops_startup() {
    let files = tempfile::tempdir().expect("temp dir");
    let policy = write(files.path(), "policy.yaml", CONFIGMAPS_ONLY);
    let mut child = std::process::Command::new(crate::harness::binary())
        .arg(format!("--data-dir={}", files.path().display()))
        .arg(format!("--audit-policy-file={}", policy.display()))
        .arg("--audit-log-path=-")
        .arg("--audit-log-version=audit.k8s.io/v1beta1")
        .arg("--bind-address=127.0.0.1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("server runs");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("server output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid audit version \"audit.k8s.io/v1beta1\""),
        "{stderr}"
    );
}

crate::harness::on_both_backends!(
    backend: slow_webhook_never_blocks_requests,
    log_truncates_large_events_and_counts_them
);
