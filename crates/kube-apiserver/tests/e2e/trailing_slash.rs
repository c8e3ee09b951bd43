//! Paths upstream serves through go-restful web services (`/version`, the
//! service-account issuer documents) answer with a trailing slash too, as
//! go-restful trims it when routing; exact non-resource paths do not, and
//! the `/` index (of every server in the chain) lists only the plain forms.

use serde_json::Value;

use crate::harness::TestServer;

fn json(s: &TestServer, path: &str) -> Value {
    serde_json::from_str(&s.ok(&["get", "--raw", path])).expect("json")
}

#[test]
fn go_restful_paths_answer_with_a_trailing_slash() {
    let s = TestServer::start();
    for path in [
        "/version",
        "/.well-known/openid-configuration",
        "/openid/v1/jwks",
    ] {
        let slashed = format!("{path}/");
        // kubectl keeps the slash on the wire.
        let out = s.kubectl(&["get", "--raw", &slashed, "-v=6"]);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{slashed}: {log}");
        assert!(log.contains(&format!("{slashed} 200 OK")), "{log}");
        assert_eq!(json(&s, &slashed), json(&s, path), "{slashed}");
    }
    assert!(json(&s, "/version/")["gitVersion"].is_string());
}

#[test]
fn exact_paths_do_not_and_the_index_lists_plain_forms() {
    let s = TestServer::start();
    for path in [
        "/healthz/",
        "/livez/",
        "/readyz/",
        "/metrics/",
        "/openapi/v2/",
    ] {
        let err = s.fails(&["get", "--raw", path]);
        assert!(err.contains("NotFound"), "{path}: {err}");
    }
    let index = json(&s, "/");
    let paths: Vec<&str> = index["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // Upstream's index lists the delegates' paths too.
    for path in [
        "/version",
        "/openid/v1/jwks",
        "/.well-known/openid-configuration",
        "/api/v1",
        "/apis/apps/v1",
        "/apis/apiextensions.k8s.io/v1",
        "/apis/apiregistration.k8s.io/v1",
    ] {
        assert!(paths.contains(&path), "{path}: {paths:?}");
    }
    assert!(paths.iter().all(|p| !p.ends_with('/')), "{paths:?}");
}
