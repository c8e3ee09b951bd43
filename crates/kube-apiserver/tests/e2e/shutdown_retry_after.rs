//! `--shutdown-send-retry-after`: after SIGTERM and the shutdown delay the
//! server keeps listening while a request is still in flight, answers new
//! requests 429 with `Retry-After: 5` and `Connection: close` (health
//! probes, `/metrics` and the `kube-apiserver/…` user agent excepted),
//! finishes the in-flight request, then exits 0.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::TestServer;
use crate::support::http::{admin_curl, split_response};

/// Status code, headers and body of one GET with the admin certificate.
fn get(s: &TestServer, path: &str, agent: &str) -> (u16, String, String) {
    let out = admin_curl(s)
        .args(["-i", "-A", agent, "--max-time", "10"])
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs");
    split_response(&out.stdout)
}

#[test]
fn draining_server_answers_429_with_retry_after_until_in_flight_requests_finish() {
    let mut s = TestServer::start_with(&[
        "--shutdown-delay-duration=1s",
        "--shutdown-send-retry-after",
    ]);
    // A create whose body arrives at 2 KB/s: in flight for about 4 s.
    let padding = "x".repeat(8000);
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"slow"}},"data":{{"v":"{padding}"}}}}"#
    );
    let mut slow = admin_curl(&s)
        .args([
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--limit-rate",
            "2K",
        ])
        .args([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
        ])
        .arg(format!(
            "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps",
            s.port
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl runs");
    let mut stdin = slow.stdin.take().expect("stdin");
    stdin.write_all(body.as_bytes()).expect("body written");
    drop(stdin);
    std::thread::sleep(Duration::from_millis(300));
    Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .expect("kill runs");
    let asked = Instant::now();

    // During the delay: /readyz fails, requests are served.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(&s, "/readyz", "curl").0, 500);
    assert_eq!(get(&s, "/api/v1/namespaces", "curl").0, 200);

    // After it: new requests get 429 while the slow create is in flight.
    std::thread::sleep(
        Duration::from_secs(1).saturating_sub(asked.elapsed()) + Duration::from_millis(300),
    );
    let (code, head, body) = get(&s, "/api/v1/namespaces", "kubectl/v1.37.0");
    assert_eq!(code, 429, "{head}{body}");
    assert!(head.contains("retry-after: 5"), "{head}");
    assert_eq!(
        body,
        "The apiserver is shutting down, please try again later.\n"
    );
    // HTTP/1.1 carries the Connection: close; HTTP/2 drops it.
    let out = admin_curl(&s)
        .args(["-i", "--http1.1", "--max-time", "10"])
        .arg(format!("https://127.0.0.1:{}/version", s.port))
        .output()
        .expect("curl runs");
    let head = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    assert!(head.contains("connection: close"), "{head}");
    for path in ["/healthz", "/livez", "/metrics"] {
        assert_eq!(get(&s, path, "curl").0, 200, "{path} refused");
    }
    assert_eq!(get(&s, "/readyz", "curl").0, 500);
    let loopback = get(
        &s,
        "/api/v1/namespaces",
        "kube-apiserver/v1.37.0 (linux/amd64)",
    );
    assert_eq!(loopback.0, 200, "the loopback user agent refused");

    // The in-flight create finishes and is stored; then the server exits.
    let out = slow.wait_with_output().expect("slow create");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "201");
    let status = s.terminate();
    assert!(status.success(), "exit status {status:?}");
    let gone = asked.elapsed();
    assert!(
        gone < Duration::from_secs(12),
        "exited {gone:?} after SIGTERM"
    );
}
