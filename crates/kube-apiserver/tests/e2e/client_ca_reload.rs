//! `--client-ca-file` is dynamic content, as upstream's: a CA appended to
//! the file after start is trusted without a restart. Upstream notices the
//! change through a file-change notification (and resyncs every minute);
//! this server checks the file's size and modification time every second,
//! so the test polls with a deadline of a few seconds. Until then, the new
//! CA's certificate is answered 401 (not anonymous).
//!
//! The file is the server's default client CA (the generated
//! `<data-dir>/pki/ca.crt`, used when `--client-ca-file` is not given and
//! reloaded the same way): the harness needs the admin certificate it
//! signs to see the server ready, so the bundle must hold that CA at start.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::TestServer;
use crate::support::pki::{client_cert, new_ca};

const SELF_REVIEW: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

/// Status code and body of a SelfSubjectReview made with `cert`.
fn whoami(serving_ca: &Path, port: u16, (crt, key): &(PathBuf, PathBuf)) -> (u16, Value) {
    let body = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;
    let out = Command::new("curl")
        .args(["-s", "--http1.1", "-w", "\n%{http_code}", "--cacert"])
        .arg(serving_ca)
        .arg("--cert")
        .arg(crt)
        .arg("--key")
        .arg(key)
        .args([
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            body,
        ])
        .arg(format!("https://127.0.0.1:{port}{SELF_REVIEW}"))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (
        code.trim().parse().unwrap_or(0),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn a_ca_added_to_the_client_ca_file_is_trusted_without_restart(server: &TestServer) {
    let files = tempfile::tempdir().expect("temp dir");
    let bundle = server.dir.path().join("pki").join("ca.crt");
    let first_pem = std::fs::read_to_string(&bundle).expect("client CA");
    // The generated CA signs the serving certificate too.
    let serving_ca = files.path().join("serving-ca.crt");
    std::fs::write(&serving_ca, &first_pem).expect("write serving CA");
    let alice = server.client_cert("alice", "devs");
    let (code, review) = whoami(&serving_ca, server.port, &alice);
    assert_eq!(code, 201, "{review}");
    assert_eq!(review["status"]["userInfo"]["username"], "alice");

    let (second_pem, second) = new_ca("second-ca");
    let bob = client_cert(files.path(), "bob", &second);
    let (code, review) = whoami(&serving_ca, server.port, &bob);
    assert_eq!(code, 401, "a CA not (yet) in the file: {review}");
    assert_eq!(review["reason"], "Unauthorized");
    assert_eq!(review["message"], "Unauthorized");

    let joined = format!("{}\n{second_pem}", first_pem.trim_end());
    std::fs::write(&bundle, joined).expect("rewrite bundle");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (code, review) = whoami(&serving_ca, server.port, &bob);
        if code == 201 {
            assert_eq!(review["status"]["userInfo"]["username"], "bob");
            break;
        }
        assert_eq!(code, 401, "{review}");
        assert!(Instant::now() < deadline, "the added CA was not picked up");
        std::thread::sleep(Duration::from_millis(200));
    }
    // kubectl (client-go answers every certificate request with its
    // certificate, whatever CA names the server hints) gets in as bob too.
    let out = server.kubectl_as_cert(
        &bob,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "bob");
    // The first CA is still trusted.
    assert_eq!(whoami(&serving_ca, server.port, &alice).0, 201);
    // Aggregated servers read the bundle as published, soon with both CAs.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let published = server.ok(&[
            "get",
            "configmap",
            "extension-apiserver-authentication",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={.data.client-ca-file}",
        ]);
        if published.contains(second_pem.trim()) {
            assert!(published.contains(first_pem.trim()), "{published}");
            break;
        }
        assert!(Instant::now() < deadline, "not republished: {published}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

crate::harness::on_both_backends!(a_ca_added_to_the_client_ca_file_is_trusted_without_restart);
