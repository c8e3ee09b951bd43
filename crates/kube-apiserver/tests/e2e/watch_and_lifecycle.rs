//! Watches through kubectl, pagination over raw HTTP, and the server's
//! lifecycle (graceful shutdown).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::TestServer;

fn configmap(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n")
}

#[test]
fn kubectl_get_watch_sees_changes() {
    let s = TestServer::start();
    s.apply_yaml(&configmap("first"));
    let mut watch = Command::new("kubectl")
        .args([
            "get",
            "configmaps",
            "--watch",
            "--output-watch-events",
            "-o",
            "name",
            "--request-timeout=20s",
        ])
        .env("KUBECONFIG", &s.kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl watch starts");
    let stdout = watch.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The namespace's published `kube-root-ca.crt` is not this test's.
    let next = || loop {
        let line = rx
            .recv_timeout(Duration::from_secs(15))
            .expect("a watch line");
        if line != "configmap/kube-root-ca.crt" {
            return line;
        }
    };
    // The initial list is printed without an event type.
    assert_eq!(next(), "configmap/first");
    // kubectl prints names only for `-o name`; event types are checked
    // over raw HTTP below.
    s.apply_yaml(&configmap("second"));
    assert_eq!(next(), "configmap/second");
    s.ok(&["label", "configmap", "second", "x=y"]);
    assert_eq!(next(), "configmap/second");
    s.ok(&["delete", "configmap", "first"]);
    assert_eq!(next(), "configmap/first");
    let _ = watch.kill();
    let _ = watch.wait();
}

#[test]
fn watch_resumes_from_a_resource_version_in_order() {
    let s = TestServer::start();
    s.apply_yaml(&configmap("a"));
    let rv = s.ok(&[
        "get",
        "configmap",
        "a",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]);
    s.apply_yaml(&configmap("b"));
    s.ok(&["label", "configmap", "a", "x=y"]);
    s.ok(&["delete", "configmap", "b"]);
    let path = format!(
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=1"
    );
    let body = s.ok(&["get", "--raw", &path]);
    let events: Vec<(String, String)> = body
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON event per line");
            (
                v["type"].as_str().unwrap_or("").to_owned(),
                v["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    let want = [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(t, n)| (t.to_string(), n.to_string()))
        .collect();
    assert_eq!(events, want);
}

#[test]
fn paginated_lists_hold_one_revision_while_writes_continue() {
    let s = TestServer::start();
    for i in 0..7 {
        s.apply_yaml(&configmap(&format!("page-{i}")));
    }
    let first: serde_json::Value = serde_json::from_str(&s.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/configmaps?limit=3",
    ]))
    .expect("json");
    // The namespace's `kube-root-ca.crt` sorts first.
    assert_eq!(first["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(first["metadata"]["remainingItemCount"], 5);
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("continue token")
        .to_owned();
    s.apply_yaml(&configmap("page-new"));
    let mut names = Vec::new();
    let mut next = Some(token);
    while let Some(token) = next {
        let page: serde_json::Value = serde_json::from_str(&s.ok(&[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/default/configmaps?limit=3&continue={token}"),
        ]))
        .expect("json");
        assert_eq!(
            page["metadata"]["resourceVersion"],
            first["metadata"]["resourceVersion"]
        );
        for item in page["items"].as_array().into_iter().flatten() {
            names.push(item["metadata"]["name"].as_str().unwrap_or("").to_owned());
        }
        next = page["metadata"]["continue"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
    }
    assert_eq!(names, ["page-2", "page-3", "page-4", "page-5", "page-6"]);
}

#[test]
fn sigterm_fails_readiness_keeps_serving_then_exits_cleanly() {
    let mut s = TestServer::start_with(&["--shutdown-delay-duration=2s"]);
    let kubeconfig = s.kubeconfig.clone();
    let started = std::time::Instant::now();
    // Probed during the shutdown delay: /readyz fails, requests still work.
    let probe = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        let kubectl = |args: &[&str]| {
            Command::new("kubectl")
                .args(args)
                .env("KUBECONFIG", &kubeconfig)
                .output()
                .expect("kubectl runs")
        };
        (
            kubectl(&["get", "--raw", "/readyz"]),
            kubectl(&["get", "namespaces"]),
        )
    });
    let status = s.terminate();
    let (ready, served) = probe.join().expect("probe");
    assert!(status.success(), "exit status {status:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "exited before the shutdown delay"
    );
    assert!(!ready.status.success(), "readyz passed during shutdown");
    assert!(
        served.status.success(),
        "requests were refused during the shutdown delay"
    );
}
