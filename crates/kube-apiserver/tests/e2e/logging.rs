//! Logs as upstream's: klog's text format by default (every line parses
//! with klog's header grammar), the request log line `httplog` writes at
//! `-v=3`, the JSON format with zap's key order, `PUT /debug/flags/v`
//! changing the verbosity at run time, and `/logs` behind
//! `--enable-logs-handler` and authorization.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::TestServer;

/// Lines the server prints outside the log: the startup summary.
fn is_summary(line: &str) -> bool {
    line.starts_with("Security: ") || line.starts_with("export KUBECONFIG=")
}

fn server_log(s: &TestServer) -> String {
    std::fs::read_to_string(s.dir.path().join("server.log")).expect("server log")
}

/// klog's header, `Lmmdd hh:mm:ss.uuuuuu threadid file:line] `, checked
/// byte by byte; returns the rest of the line.
fn klog_body(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let header_ok = matches!(b.first(), Some(b'I' | b'W' | b'E' | b'F'))
        && digits(1..5)
        && b.get(5) == Some(&b' ')
        && digits(6..8)
        && b.get(8) == Some(&b':')
        && digits(9..11)
        && b.get(11) == Some(&b':')
        && digits(12..14)
        && b.get(14) == Some(&b'.')
        && digits(15..21)
        && b.get(21) == Some(&b' ')
        && b.get(22..29).is_some_and(|pid| {
            let pid = std::str::from_utf8(pid).unwrap_or("x").trim_start();
            !pid.is_empty() && pid.bytes().all(|d| d.is_ascii_digit())
        })
        && b.get(29) == Some(&b' ');
    if !header_ok {
        return None;
    }
    let (location, rest) = line[30..].split_once("] ")?;
    let (file, number) = location.rsplit_once(':')?;
    let located = !file.is_empty() && !file.contains(' ') && number.parse::<u32>().is_ok();
    (located && rest.starts_with('"')).then_some(rest)
}

/// Every line is a klog line, a continuation of a multi-line value, or
/// the summary; returns the bodies of the klog lines.
fn parse_klog(log: &str) -> Vec<String> {
    let mut bodies = Vec::new();
    for line in log.lines() {
        if is_summary(line) || line.starts_with('\t') || line == " >" || line.starts_with(" > ") {
            continue;
        }
        let body = klog_body(line).unwrap_or_else(|| panic!("not a klog line: {line:?}\n{log}"));
        bodies.push(body.to_owned());
    }
    bodies
}

/// The keys of a klog body (`"msg" k1="v" k2=3`), in order.
fn klog_keys(body: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut token_start = 0;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            ' ' if !in_string => token_start = i + 1,
            '=' if !in_string => keys.push(body[token_start..i].to_owned()),
            _ => {}
        }
    }
    keys
}

fn wait_for(s: &TestServer, what: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = server_log(s);
        if what(&log) || Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

const HTTP_KEYS: [&str; 8] = [
    "verb",
    "URI",
    "latency",
    "userAgent",
    "contentType",
    "audit-ID",
    "srcIP",
    "resp",
];

#[test]
fn klog_text_with_the_request_log_at_v3() {
    let s = TestServer::start_with(&["-v=3"]);
    s.ok(&["get", "--raw", "/api/v1/namespaces?limit=7"]);
    let uri = "URI=\"/api/v1/namespaces?limit=7\"";
    let log = wait_for(&s, |log| log.contains(uri));
    let bodies = parse_klog(&log);
    let line = bodies
        .iter()
        .find(|b| b.starts_with("\"HTTP\" ") && b.contains(uri))
        .unwrap_or_else(|| panic!("no request log line:\n{log}"));
    assert_eq!(klog_keys(line), HTTP_KEYS, "{line}");
    assert!(line.starts_with("\"HTTP\" verb=\"LIST\" "), "{line}");
    assert!(line.contains(" userAgent=\"kubectl/"), "{line}");
    assert!(line.contains(" contentType=\"\" "), "{line}");
    assert!(line.contains(" srcIP=\"127.0.0.1:"), "{line}");
    assert!(line.ends_with(" resp=200"), "{line}");
    assert!(!log.contains('\u{1b}'), "no color codes:\n{log}");

    // A request with a body names its media type.
    s.ok(&["create", "configmap", "logged"]);
    let uri = "URI=\"/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create";
    let log = wait_for(&s, |log| log.contains(uri));
    let line = parse_klog(&log)
        .into_iter()
        .find(|b| b.starts_with("\"HTTP\" verb=\"POST\" ") && b.contains(uri))
        .unwrap_or_else(|| panic!("no request log line of the create:\n{log}"));
    assert!(line.contains(" contentType=\"application/"), "{line}");
}

#[test]
fn the_request_log_is_off_below_v3() {
    let s = TestServer::start_with(&["-v=2"]);
    s.ok(&["get", "--raw", "/api/v1/namespaces?limit=8"]);
    std::thread::sleep(Duration::from_millis(500));
    let log = server_log(&s);
    parse_klog(&log);
    assert!(!log.contains("\"HTTP\""), "{log}");
}

#[test]
fn json_format_in_zaps_key_order() {
    let s = TestServer::start_with(&["--logging-format=json", "-v=3"]);
    s.ok(&["get", "--raw", "/api/v1/namespaces?limit=9"]);
    let log = wait_for(&s, |log| log.contains("limit=9"));
    let mut found = false;
    for line in log.lines().filter(|l| !is_summary(l)) {
        let entry: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let keys: Vec<&str> = entry.keys().map(String::as_str).collect();
        assert_eq!(keys[..3], ["ts", "caller", "msg"], "{line}");
        assert!(entry["ts"].is_f64() || entry["ts"].is_u64(), "{line}");
        if entry["msg"] == "HTTP" && entry["URI"] == "/api/v1/namespaces?limit=9" {
            let mut want = vec!["ts", "caller", "msg", "v"];
            want.extend(HTTP_KEYS);
            assert_eq!(keys, want, "{line}");
            assert_eq!(entry["v"], 0, "{line}");
            assert_eq!(entry["resp"], 200, "{line}");
            assert_eq!(entry["verb"], "LIST", "{line}");
            found = true;
        }
    }
    assert!(found, "no request log entry:\n{log}");
}

#[test]
fn debug_flags_v_changes_the_verbosity() {
    let s = TestServer::start();
    s.ok(&["get", "--raw", "/api/v1/namespaces?limit=10"]);
    let answer = s.kubectl_stdin(&["replace", "--raw", "/debug/flags/v", "-f", "-"], "4");
    assert!(answer.status.success(), "{answer:?}");
    assert_eq!(
        String::from_utf8_lossy(&answer.stdout).trim(),
        "successfully set klog.logging.verbosity to 4"
    );
    s.ok(&["get", "--raw", "/api/v1/namespaces?limit=11"]);
    let log = wait_for(&s, |log| log.contains("limit=11"));
    parse_klog(&log);
    assert!(
        !log.contains("limit=10"),
        "logged before the change:\n{log}"
    );
    assert!(
        log.contains("\"HTTP\" verb=\"LIST\" URI=\"/api/v1/namespaces?limit=11\""),
        "{log}"
    );
    let bad = s.kubectl_stdin(&["replace", "--raw", "/debug/flags/v", "-f", "-"], "x");
    assert!(!bad.status.success());
    // Anonymous users may not change it. Over HTTP/1.1: the 403 comes
    // before the body is read, which on HTTP/2 ends the stream with
    // RST_STREAM(NO_ERROR) (RFC 9113 8.1, as Go's server does), and curl
    // 7.88 calls that a framing error when it beats curl's own body frame.
    assert_eq!(
        curl(
            &s,
            &["--http1.1", "-X", "PUT", "--data", "9"],
            "/debug/flags/v"
        )
        .0,
        403
    );
}

#[test]
fn logs_are_served_only_with_the_handler_enabled() {
    let off = TestServer::start();
    let refused = off.fails(&["get", "--raw", "/logs/"]);
    assert!(
        refused.contains("NotFound") || refused.contains("not found"),
        "{refused}"
    );
    drop(off);
    let on = TestServer::start_with(&["--enable-logs-handler"]);
    let listing = on.ok(&["get", "--raw", "/logs/"]);
    assert!(listing.contains("<pre>\n"), "{listing}");
    assert_eq!(curl(&on, &[], "/logs/").0, 403);
}

#[test]
fn bad_logging_flags_stop_startup() {
    for (args, message) in [
        (&["--logging-format=xml"][..], "Unsupported log format"),
        (
            &[
                "--logging-format=json",
                "--feature-gates=LoggingBetaOptions=false",
            ][..],
            "Log format json is disabled, see LoggingBetaOptions feature",
        ),
        (
            &["--logging-format=json", "--vmodule=x=2"][..],
            "Only supported for text log format",
        ),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = Command::new(crate::harness::binary())
            .arg(format!("--data-dir={}", dir.path().display()))
            .args(args)
            .stdout(Stdio::null())
            .output()
            .expect("server runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

/// A request without credentials; returns the status code and body.
fn curl(s: &TestServer, args: &[&str], path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--cacert"])
        .arg(s.dir.path().join("pki").join("ca.crt"))
        .args(["-w", "\n%{http_code}"])
        .args(args)
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let code = code.trim().parse().ok().filter(|code| *code != 0);
    let code = code.unwrap_or_else(|| {
        panic!(
            "curl {args:?} {path}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, body.to_owned())
}
