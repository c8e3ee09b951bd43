//! Front-proxy authentication (`--requestheader-*`): a certificate of the
//! front-proxy CA with an allowed common name asserts the user in
//! `X-Remote-*` headers; without them, or from another CA or name, it is
//! no user at all. Requests go over raw HTTPS (curl) to set the headers.
//! The front-proxy CA file is re-read when it changes, as upstream's
//! dynamic CA content.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{Backend, TestServer};

/// Writes a CA and client certificates it issued for `names`; returns
/// the CA file and each certificate's (certificate, key) files.
fn front_proxy_pki(dir: &Path, names: &[&str]) -> (PathBuf, Vec<(PathBuf, PathBuf)>) {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let ca_path = dir.join("front-proxy-ca.crt");
    std::fs::write(&ca_path, ca_cert.pem()).expect("write");
    let issued = names
        .iter()
        .map(|cn| {
            let key = rcgen::KeyPair::generate().expect("key");
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, *cn);
            let cert = params.signed_by(&key, &issuer).expect("cert");
            let paths = (dir.join(format!("{cn}.crt")), dir.join(format!("{cn}.key")));
            std::fs::write(&paths.0, cert.pem()).expect("write");
            std::fs::write(&paths.1, key.serialize_pem()).expect("write");
            paths
        })
        .collect();
    (ca_path, issued)
}

/// POSTs a SelfSubjectReview with the client certificate and headers;
/// returns the status code and body.
fn whoami(server: &TestServer, cert: &Path, key: &Path, headers: &[&str]) -> (u16, Value) {
    let ca = server.dir.path().join("pki").join("ca.crt");
    let url = format!(
        "https://127.0.0.1:{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        server.port
    );
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let mut cmd = Command::new("curl");
    cmd.args([
        "-s",
        "-w",
        "\n%{http_code}",
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
    ])
    .arg("--cacert")
    .arg(&ca)
    .arg("--cert")
    .arg(cert)
    .arg("--key")
    .arg(key)
    .args(["-d", &body.to_string()]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.arg(url).output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').expect("status line");
    (
        code.trim().parse().expect("status code"),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn front_proxies_assert_users_in_headers(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let (ca, issued) = front_proxy_pki(files.path(), &["front-proxy-client", "intruder"]);
    let (cert, key) = &issued[0];
    let ca_flag = format!("--requestheader-client-ca-file={}", ca.display());
    let server = backend.start_with(&[
        &ca_flag,
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    ]);
    let asserted = [
        "X-Remote-User: jane",
        "X-Remote-Group: dev",
        "X-Remote-Extra-Scopes: view",
    ];
    let (code, body) = whoami(&server, cert, key, &asserted);
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "jane", "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["view"]}})
    );
    // Without the user header the certificate is no client certificate.
    let (code, body) = whoami(&server, cert, key, &[]);
    assert_eq!(code, 401, "{body}");
    // A name not allowed may not assert users.
    let (intruder_cert, intruder_key) = &issued[1];
    let (code, _) = whoami(&server, intruder_cert, intruder_key, &asserted);
    assert_eq!(code, 401);
    // The admin's certificate stays the admin, headers or not.
    let pki = server.dir.path().join("pki");
    let (code, body) = whoami(
        &server,
        &pki.join("admin.crt"),
        &pki.join("admin.key"),
        &asserted,
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["userInfo"]["username"], "kubernetes-admin");
    // Published for aggregated API servers, as upstream does.
    let published = server.ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
        "-o",
        "json",
    ]);
    let data = &serde_json::from_str::<Value>(&published).expect("json")["data"];
    let ca_pem = std::fs::read_to_string(&ca).expect("ca");
    assert_eq!(data["requestheader-client-ca-file"], ca_pem.as_str());
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
    assert!(data["client-ca-file"]
        .as_str()
        .is_some_and(|c| c.contains("BEGIN CERTIFICATE")));
    // Deleted, it is written again at once: the controller follows the
    // configmap through the ConfigMap informer.
    let cm = [
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
    ];
    server.ok(&[&["delete"], &cm[..]].concat());
    let jsonpath = "jsonpath={.data.requestheader-client-ca-file}";
    let get = [&["get"], &cm[..], &["-o", jsonpath]].concat();
    let republished = || {
        let out = server.kubectl(&get);
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(ca_pem.trim())
    };
    crate::support::wait::eventually("the configmap back", Duration::from_secs(5), republished);
}

/// A front proxy whose CA was replaced in the file authenticates without a
/// restart, and the replaced CA's proxies no longer do; both CAs are
/// published for aggregated servers. The CA check is
/// independent of the storage, so this runs on the embedded store.
#[test]
fn front_proxy_ca_file_is_reloaded() {
    let files = tempfile::tempdir().expect("temp dir");
    let (old_dir, new_dir) = (files.path().join("old"), files.path().join("new"));
    std::fs::create_dir_all(&old_dir).expect("mkdir");
    std::fs::create_dir_all(&new_dir).expect("mkdir");
    let (old_ca, old_issued) = front_proxy_pki(&old_dir, &["front-proxy-client"]);
    let (new_ca, new_issued) = front_proxy_pki(&new_dir, &["front-proxy-client"]);
    let bundle = files.path().join("front-proxy-ca.crt");
    std::fs::copy(&old_ca, &bundle).expect("copy");
    let ca_flag = format!("--requestheader-client-ca-file={}", bundle.display());
    let server = TestServer::start_with(&[
        &ca_flag,
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
    ]);
    let asserted = ["X-Remote-User: jane"];
    let as_proxy = |(cert, key): &(PathBuf, PathBuf)| whoami(&server, cert, key, &asserted);
    let (code, body) = as_proxy(&old_issued[0]);
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["userInfo"]["username"], "jane");
    assert_eq!(as_proxy(&new_issued[0]).0, 401);

    std::fs::copy(&new_ca, &bundle).expect("replace");
    // The file is checked every second.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (code, body) = as_proxy(&new_issued[0]);
        if code == 201 {
            assert_eq!(body["status"]["userInfo"]["username"], "jane");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "new CA not in use: {code} {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, body) = as_proxy(&old_issued[0]);
    assert_eq!(code, 401, "{body}");
    // What aggregated servers read gets the new CA too; the replaced one
    // stays published before it until it expires, as upstream's trust
    // controller joins what is published with what the server requires
    // (other servers may still trust it).
    let old_pem = std::fs::read_to_string(&old_ca).expect("old CA");
    let new_pem = std::fs::read_to_string(&new_ca).expect("new CA");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let published = server.ok(&[
            "get",
            "configmap",
            "extension-apiserver-authentication",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={.data.requestheader-client-ca-file}",
        ]);
        if published.contains(new_pem.trim()) {
            assert_eq!(published, format!("{old_pem}{new_pem}"));
            break;
        }
        assert!(Instant::now() < deadline, "not republished: {published}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

crate::harness::on_both_backends!(
    backend: front_proxies_assert_users_in_headers
);
