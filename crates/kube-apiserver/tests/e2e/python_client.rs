//! The official Python client (`pip install kubernetes`, which
//! `scripts/test` installs) creates, reads and lists one object of every
//! GA built-in kind the server serves: its models raise on a response that lacks a field
//! upstream always writes (a DaemonSet's `status.currentNumberScheduled`,
//! a ReplicationController's `status.replicas`, …).

use std::path::Path;
use std::process::Command;

use crate::harness::{on_both_backends, TestServer};

fn python_client_reads_every_kind(s: &TestServer) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/python/client_shapes.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&s.kubeconfig)
        .env("HOME", s.dir.path())
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client failed after:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ok AppsV1Api daemon_set"), "{stdout}");
    for kind in [
        "CoreV1Api resource_quota",
        "ResourceV1Api resource_claim_template",
        "AdmissionregistrationV1Api mutating_admission_policy_binding",
        "CertificatesV1Api cluster_trust_bundle",
        "ApiregistrationV1Api api_service",
    ] {
        assert!(stdout.contains(&format!("ok {kind}\n")), "{kind}: {stdout}");
    }
    assert!(stdout.contains("ok cluster-scoped"), "{stdout}");
}

on_both_backends!(python_client_reads_every_kind);
