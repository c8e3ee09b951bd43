//! Flags that shape what the server exposes: `--runtime-config` removing a
//! group version, and `--strict-transport-security-directives` adding a
//! response header, seen through the real kubectl.

use crate::harness::TestServer;

#[test]
fn a_disabled_group_version_is_absent() {
    let s = TestServer::start_with(&["--runtime-config=batch/v1=false"]);
    let versions = s.ok(&["api-versions"]);
    let versions: Vec<&str> = versions.lines().collect();
    assert!(!versions.contains(&"batch/v1"), "{versions:?}");
    assert!(versions.contains(&"apps/v1"), "{versions:?}");
    assert!(versions.contains(&"v1"), "{versions:?}");
    let err = s.fails(&["get", "jobs"]);
    assert!(
        err.contains(r#"the server doesn't have a resource type "jobs""#),
        "{err}"
    );
    let err = s.fails(&["get", "--raw", "/apis/batch/v1"]);
    assert!(err.contains("NotFound"), "{err}");
    s.ok(&["get", "deployments"]);
}

#[test]
fn every_response_carries_the_hsts_header() {
    let s = TestServer::start_with(&[
        "--strict-transport-security-directives=max-age=31536000,includeSubDomains",
    ]);
    // At -v=8 kubectl logs each response's headers.
    let out = s.kubectl(&["get", "--raw", "/version", "-v=8"]);
    assert!(out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("Strict-Transport-Security: max-age=31536000; includeSubDomains"),
        "{log}"
    );
}
