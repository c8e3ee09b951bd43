//! Response compression as upstream's `APIResponseCompression` (beta, on by
//! default): responses over 128 KiB are gzipped (level 1, `Vary:
//! Accept-Encoding`) for a client whose `Accept-Encoding` lists `gzip`,
//! smaller ones are not, and the feature gate turns it off. Checked with
//! curl's raw headers and its own gzip decoding, and with kubectl (which
//! asks for gzip as client-go does).

use crate::harness::TestServer;
use crate::support::http::admin_curl;

const CM: &str = "/api/v1/namespaces/default/configmaps";

/// Three ConfigMaps of 60 KiB values: their list is over 128 KiB, each
/// one under it.
fn fill(s: &TestServer) {
    let value = "x".repeat(60 * 1024);
    for i in 0..3 {
        let body = format!(r#"{{"metadata":{{"name":"big-{i}"}},"data":{{"v":"{value}"}}}}"#);
        let out = admin_curl(s)
            .args(["-X", "POST", "-H", "Content-Type: application/json"])
            .args([
                "--data-binary",
                &body,
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
            ])
            .arg(format!("https://127.0.0.1:{}{CM}", s.port))
            .output()
            .expect("curl runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "201");
    }
}

/// The response headers (lower-cased) and the body's size in bytes as sent.
fn raw(s: &TestServer, path: &str, accept_encoding: Option<&str>) -> (String, usize) {
    let mut cmd = admin_curl(s);
    cmd.args(["-D", "-", "-o", "/dev/null", "-w", "%{size_download}"]);
    if let Some(accept) = accept_encoding {
        cmd.args(["-H", &format!("Accept-Encoding: {accept}")]);
    }
    let out = cmd
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
    let (headers, size) = text.trim_end().rsplit_once('\n').expect("headers and size");
    (headers.to_owned(), size.trim().parse().expect("a size"))
}

fn decoded(s: &TestServer, path: &str) -> serde_json::Value {
    let out = admin_curl(s)
        .arg("--compressed")
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs");
    serde_json::from_slice(&out.stdout).expect("a JSON body")
}

#[test]
fn large_responses_are_gzipped_for_clients_that_ask() {
    let s = TestServer::start();
    fill(&s);

    let (plain_headers, plain_size) = raw(&s, CM, None);
    assert!(
        !plain_headers.contains("content-encoding"),
        "{plain_headers}"
    );
    assert!(plain_size > 128 * 1024, "{plain_size}");

    let (headers, size) = raw(&s, CM, Some("deflate, gzip"));
    assert!(headers.contains("content-encoding: gzip"), "{headers}");
    assert!(headers.contains("vary: accept-encoding"), "{headers}");
    assert!(size * 10 < plain_size, "{size} of {plain_size}");
    let list = decoded(&s, CM);
    let names: Vec<&str> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item["metadata"]["name"].as_str())
        .filter(|name| name.starts_with("big-"))
        .collect();
    assert_eq!(names, ["big-0", "big-1", "big-2"]);

    // A quality value is not the bare token upstream looks for.
    let (headers, _) = raw(&s, CM, Some("gzip;q=1.0"));
    assert!(!headers.contains("content-encoding"), "{headers}");
    // One object is under the threshold.
    let (headers, _) = raw(&s, &format!("{CM}/big-0"), Some("gzip"));
    assert!(!headers.contains("content-encoding"), "{headers}");

    // kubectl asks for gzip and reads the answer.
    let names = s.ok(&["get", "configmaps", "-o", "name"]);
    assert!(names.contains("configmap/big-2"), "{names}");
}

#[test]
fn the_feature_gate_turns_compression_off() {
    let s = TestServer::start_with(&["--feature-gates=APIResponseCompression=false"]);
    fill(&s);
    let (headers, size) = raw(&s, CM, Some("gzip"));
    assert!(!headers.contains("content-encoding"), "{headers}");
    assert!(size > 128 * 1024, "{size}");
}
