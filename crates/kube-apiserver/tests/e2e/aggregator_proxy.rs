//! Through the aggregator to extension API servers, as users reach them:
//! server-side apply of the remote kind with kubectl (its conflicts
//! included); a service account's UID reaching the backend in
//! `X-Remote-Uid` (the backend opts in with `--requestheader-uid-headers`,
//! which upstream 1.37 leaves empty, and its audit log records the UID);
//! the backend stopped and started again on the same port bringing the
//! APIService back to `Available=True` and proxying, the aggregator
//! untouched; and upgrade requests (SPDY and WebSocket) relayed both ways.
//!
//! No group our binary serves as an extension server takes upgrades (exec,
//! attach and port-forward are core pods' subresources, which the
//! aggregator never proxies), so the upgrade test's backend is a small
//! TLS server in the test: it answers the discovery checks, and an
//! upgrade with 101 and an echo of every byte, naming in its headers the
//! user the aggregator sent.

use std::convert::Infallible;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

use crate::aggregator::{
    available_of, eventually, eventually_within, extension_server_with, get, registration,
    registration_of,
};
use crate::harness::{Backend, TestServer};
use crate::kubelet_connect::{echo, pem_certs, pem_key, raw_request, serve_tls};
use crate::support::audit;

const WIDGET: &str =
    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: default}\nsize: 5\n";

/// `kubectl apply --server-side` of `yaml` through `s`, with extra flags.
fn apply_server_side(s: &TestServer, yaml: &str, flags: &[&str]) -> std::process::Output {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    args.extend_from_slice(flags);
    s.kubectl_stdin(&args, yaml)
}

fn server_side_apply(front: &TestServer, backend: &TestServer) {
    let out = apply_server_side(front, WIDGET, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("widget.example.com/w2 serverside-applied"),
        "{out:?}"
    );
    let fields = r#"jsonpath={.size} {.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}"#;
    assert_eq!(
        backend.ok(&["get", "widget", "w2", "-o", fields]),
        "5 kubectl Apply"
    );
    // Another manager changing the field kubectl owns conflicts, as the
    // backend decides; forced, it takes the field.
    let changed = WIDGET.replace("size: 5", "size: 6");
    let out = apply_server_side(front, &changed, &["--field-manager=other"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains(r#"conflict with "kubectl""#),
        "{stderr}"
    );
    let out = apply_server_side(
        front,
        &changed,
        &["--field-manager=other", "--force-conflicts"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        backend.ok(&["get", "widget", "w2", "-o", "jsonpath={.size}"]),
        "6"
    );
}

const READER: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-reader}
rules: [{apiGroups: [example.com], resources: [widgets], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-widgets}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: 'system:serviceaccount:default:bob'}]
";

fn uid_reaches_the_backend(front: &TestServer, backend: &TestServer, log: &std::path::Path) {
    front.ok(&["create", "serviceaccount", "bob"]);
    let uid = front.ok(&[
        "get",
        "serviceaccount",
        "bob",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    front.apply_yaml(READER);
    backend.apply_yaml(READER);
    let token = front.ok(&["create", "token", "bob"]);
    let ca = front.dir.path().join("pki/ca.crt");
    let flags = [
        "--kubeconfig=/dev/null".to_owned(),
        format!("--server=https://127.0.0.1:{}", front.port),
        format!("--certificate-authority={}", ca.display()),
        format!("--token={}", token.trim()),
    ];
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend(["get", "widgets", "-n", "default", "-o", "name"]);
    let out = front.kubectl(&args);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("widget.example.com/w2"),
        "{out:?}"
    );
    let bob = "system:serviceaccount:default:bob";
    eventually("the backend audits bob with his UID", || {
        audit::events(log).iter().any(|e| {
            e["user"]["username"] == bob
                && e["user"]["uid"] == uid.as_str()
                && e["objectRef"]["resource"] == "widgets"
        })
    });
}

fn remote_kind_applies_carries_uids_and_recovers(kind: Backend) {
    let front = kind.start();
    let policy = front.dir.path().join("backend-audit-policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n",
    )
    .expect("policy");
    let log = front.dir.path().join("backend-audit.log");
    let mut backend = extension_server_with(
        &front,
        &[
            "--requestheader-uid-headers=X-Remote-Uid",
            &format!("--audit-policy-file={}", policy.display()),
            &format!("--audit-log-path={}", log.display()),
        ],
    );
    front.apply_yaml(&registration(backend.port));
    let passed = (
        "True".to_owned(),
        "Passed".to_owned(),
        "all checks passed".to_owned(),
    );
    eventually("the APIService becomes available", || {
        available_of(&front, "v1.example.com") == passed
    });
    server_side_apply(&front, &backend);
    uid_reaches_the_backend(&front, &backend, &log);

    backend.terminate();
    front.ok(&["annotate", "service", "ext", "checked=again"]);
    eventually("the APIService becomes unavailable", || {
        available_of(&front, "v1.example.com").1 == "FailedDiscoveryCheck"
    });
    assert_eq!(get(&front, "/apis/example.com/v1/widgets").0, 503);
    // The same backend on the same port: the periodic checks find it.
    backend.restart();
    let back = Instant::now();
    eventually_within(Duration::from_secs(60), "available again", || {
        available_of(&front, "v1.example.com") == passed
    });
    eprintln!("available again after {:?}", back.elapsed());
    let listed = front.ok(&["get", "widgets", "-o", "name"]);
    assert_eq!(listed.trim(), "widget.example.com/w2");
}

/// Answers a request to the upgrade backend: an upgrade with 101 (its
/// `Upgrade` value, and the proxied user and credentials seen) and an
/// echo; anything else with an empty resource list of the group version,
/// enough for the discovery checks.
async fn upgrade_backend(
    mut req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let header = |name: &str| {
        let values = req.headers().get_all(name).iter();
        let values: Vec<&str> = values.filter_map(|v| v.to_str().ok()).collect();
        if values.is_empty() {
            "none".to_owned()
        } else {
            values.join(",")
        }
    };
    let (upgrade, user, group) = (
        header("upgrade"),
        header("x-remote-user"),
        header("x-remote-group"),
    );
    let authorization = header("authorization");
    if upgrade == "none" {
        let list = r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"upgrade.example.com/v1","resources":[]}"#;
        let resp = hyper::Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(list)))
            .expect("response");
        return Ok(resp);
    }
    tokio::spawn(echo(hyper::upgrade::on(&mut req)));
    let resp = hyper::Response::builder()
        .status(101)
        .header("connection", "Upgrade")
        .header("upgrade", upgrade)
        .header("x-seen-user", user)
        .header("x-seen-group", group)
        .header("x-seen-authorization", authorization)
        .header("x-seen-path", req.uri().to_string())
        .body(Full::new(Bytes::new()))
        .expect("response");
    Ok(resp)
}

/// Starts the upgrade backend on loopback (a self-signed certificate, so
/// the APIService skips verification); returns its port.
fn start_upgrade_backend() -> u16 {
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    let cert = params.self_signed(&key).expect("cert");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(pem_certs(&cert.pem()), pem_key(&key.serialize_pem()))
        .expect("server config");
    serve_tls(config, "127.0.0.1:0", |tls| async move {
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(tls), service_fn(upgrade_backend))
            .with_upgrades()
            .await;
    })
}

fn upgrades_are_relayed_both_ways(kind: Backend) {
    let front = kind.start();
    let port = start_upgrade_backend();
    front.apply_yaml(&registration_of("upgrade.example.com", "upgrades", port));
    eventually("the APIService becomes available", || {
        available_of(&front, "v1.upgrade.example.com").0 == "True"
    });
    let pki = front.dir.path().join("pki");
    let admin = (pki.join("admin.crt"), pki.join("admin.key"));
    let path = "/apis/upgrade.example.com/v1/namespaces/default/things/t1/exec?stdin=true";
    let spdy = "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n";
    let websocket = "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
                     Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                     Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n";
    for (method, upgrade, protocol) in [("POST", spdy, "spdy/3.1"), ("GET", websocket, "websocket")]
    {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: Upgrade\r\n{upgrade}\
             Content-Length: 0\r\n\r\n",
            front.port
        );
        let (head, mut conn) = raw_request(&front, &admin, &head);
        let lower = head.to_ascii_lowercase();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(lower.contains(&format!("upgrade: {protocol}")), "{head}");
        assert!(lower.contains(&format!("x-seen-path: {path}")), "{head}");
        let groups = lower.lines().find_map(|l| l.strip_prefix("x-seen-group: "));
        assert!(
            groups.is_some_and(|g| g.split(',').any(|g| g == "system:masters")),
            "{head}"
        );
        assert!(lower.contains("x-seen-authorization: none"), "{head}");
        for message in [&b"hello backend"[..], &b"and back again"[..]] {
            conn.write_all(message).expect("write");
            let mut echoed = vec![0u8; message.len()];
            conn.read_exact(&mut echoed).expect("echo");
            assert_eq!(echoed, message);
        }
    }
}

crate::harness::on_both_backends!(backend: remote_kind_applies_carries_uids_and_recovers, upgrades_are_relayed_both_ways);
