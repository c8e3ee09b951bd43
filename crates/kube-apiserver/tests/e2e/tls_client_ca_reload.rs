//! The CA names the TLS handshake hints (the certificate request's
//! acceptable CAs) follow the client CA bundles as they are reloaded, as
//! upstream's dynamic client-CA content does: they are the union of
//! `--client-ca-file` and `--requestheader-client-ca-file`, and a rewritten
//! file shows in new handshakes within seconds (the file is checked every
//! second). Go clients choosing among several certificates send only one
//! whose issuer is hinted, so stale hints would leave them anonymous.
//!
//! The hints are read with `openssl s_client`, which prints them. The TLS
//! layer does not depend on the storage, so these run on the embedded store.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::TestServer;
use crate::support::pki::{client_cert, new_ca};

/// The acceptable client CA names of a new handshake, as openssl prints
/// them (`CN = name`, spaces removed).
fn hinted_ca_names(port: u16) -> Vec<String> {
    let out = Command::new("openssl")
        .args(["s_client", "-connect"])
        .arg(format!("127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .output()
        .expect("openssl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let Some((_, after)) = text.split_once("Acceptable client certificate CA names") else {
        return Vec::new();
    };
    after
        .lines()
        .skip(1)
        .take_while(|line| line.contains('='))
        .map(|line| line.replace(' ', ""))
        .collect()
}

/// Polls the hints until `done` holds for them (a reload takes a second or
/// two); panics with the last hints after a deadline.
fn wait_for_hints(port: u16, what: &str, done: impl Fn(&[String]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let hints = hinted_ca_names(port);
        if done(&hints) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: hints are {hints:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `kubectl auth whoami` with a client certificate: the user name, or the
/// error.
fn whoami(server: &TestServer, cert: &(std::path::PathBuf, std::path::PathBuf)) -> String {
    let args = [
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ];
    let out = server.kubectl_as_cert(cert, &args);
    if out.status.success() {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

#[test]
fn client_ca_names_follow_a_replaced_client_ca_file() {
    let files = tempfile::tempdir().expect("temp dir");
    // The generated CA stays in the bundle: it issued the harness's admin
    // certificate, which must authenticate for the server to look ready.
    let mut server = TestServer::start();
    let generated_pem =
        std::fs::read_to_string(server.dir.path().join("pki").join("ca.crt")).expect("ca.crt");
    // The generated front-proxy CA (the default request-header CA) follows
    // the client CA.
    let generated = hinted_ca_names(server.port);
    assert_eq!(generated.len(), 2, "{generated:?}");
    assert_eq!(generated[1], "CN=front-proxy-ca");
    let (generated, proxy) = (&generated[0], "CN=front-proxy-ca");
    let bundle = files.path().join("client-ca.crt");
    let (first_pem, first) = new_ca("first-client-ca");
    let (second_pem, second) = new_ca("second-client-ca");
    std::fs::write(&bundle, format!("{generated_pem}{first_pem}")).expect("write bundle");
    let flag = format!("--client-ca-file={}", bundle.display());
    server.restart_with(&[&flag]);
    assert_eq!(
        hinted_ca_names(server.port),
        [generated.as_str(), "CN=first-client-ca", proxy]
    );
    let alice = client_cert(files.path(), "alice", &first);
    assert_eq!(whoami(&server, &alice), "alice");

    std::fs::write(&bundle, format!("{generated_pem}{second_pem}")).expect("replace bundle");
    wait_for_hints(server.port, "the replaced CA", |hints| {
        hints == [generated.as_str(), "CN=second-client-ca", proxy]
    });
    let bob = client_cert(files.path(), "bob", &second);
    assert_eq!(whoami(&server, &bob), "bob");
    let refused = whoami(&server, &alice);
    assert!(refused.contains("Unauthorized"), "{refused}");

    // A file that does not parse keeps the last good names.
    std::fs::write(&bundle, "not a certificate").expect("break bundle");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        hinted_ca_names(server.port),
        [generated.as_str(), "CN=second-client-ca", proxy]
    );
}

#[test]
fn front_proxy_ca_names_are_hinted_and_follow_their_file() {
    let files = tempfile::tempdir().expect("temp dir");
    let proxy_bundle = files.path().join("front-proxy-ca.crt");
    let (first_pem, _) = new_ca("first-front-proxy-ca");
    let (second_pem, _) = new_ca("second-front-proxy-ca");
    std::fs::write(&proxy_bundle, &first_pem).expect("write bundle");
    let flag = format!("--requestheader-client-ca-file={}", proxy_bundle.display());
    // No --client-ca-file: the generated CA is the client CA (upstream
    // would hint only the front-proxy CA then).
    let server = TestServer::start_with(&[&flag, "--requestheader-username-headers=X-Remote-User"]);
    let hints = hinted_ca_names(server.port);
    assert_eq!(hints.len(), 2, "{hints:?}");
    assert_eq!(hints[1], "CN=first-front-proxy-ca");
    let generated = hints[0].clone();

    std::fs::write(&proxy_bundle, &second_pem).expect("replace bundle");
    wait_for_hints(server.port, "the replaced front-proxy CA", |hints| {
        hints == [generated.clone(), "CN=second-front-proxy-ca".to_owned()]
    });
}
