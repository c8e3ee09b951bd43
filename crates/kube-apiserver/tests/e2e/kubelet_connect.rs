//! The subresources that reach kubelets, against a fake kubelet in the
//! test (HTTPS with client certificates): `kubectl logs` (container
//! choice, `--tail`, errors before any connection), an exec upgrade
//! relayed byte for byte, node proxying, and discovery.

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::TestServer;

/// A CA and the PEM files of a serving or client certificate it signed.
struct Pki {
    ca_pem: String,
    ca_key: rcgen::KeyPair,
    ca_params: rcgen::CertificateParams,
}

impl Pki {
    fn new() -> Pki {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_pem = ca_params.self_signed(&ca_key).expect("ca").pem();
        Pki {
            ca_pem,
            ca_key,
            ca_params,
        }
    }

    /// (certificate PEM, key PEM) for `names` (SANs) and common name `cn`.
    fn issue(&self, names: Vec<String>, cn: &str) -> (String, String) {
        let issuer = rcgen::Issuer::from_params(&self.ca_params, &self.ca_key);
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(names).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let cert = params.signed_by(&key, &issuer).expect("cert");
        (cert.pem(), key.serialize_pem())
    }
}

pub(crate) fn pem_certs(pem: &str) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .map(|c| c.expect("cert"))
        .collect()
}

pub(crate) fn pem_key(pem: &str) -> rustls::pki_types::PrivateKeyDer<'static> {
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .expect("key")
        .expect("a key")
}

/// This host's address on its default route, when it has one: node
/// proxying refuses loopback addresses, as upstream does.
fn routable_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    socket.connect((Ipv4Addr::new(192, 0, 2, 1), 53)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

type KubeletBody = BoxBody<Bytes, Infallible>;

fn answer(code: u16, body: String) -> hyper::Response<KubeletBody> {
    hyper::Response::builder()
        .status(code)
        .body(Full::new(Bytes::from(body)).boxed())
        .expect("response")
}

/// Answers a kubelet request: logs echo their container and query (and
/// with `follow` send one line, then hold the stream open), exec upgrades
/// and echoes bytes, `/healthz` says ok. Logs and exec need the client
/// certificate the server was given; `/healthz` does not (it also stands
/// in for a pod or service endpoint).
async fn kubelet(
    mut req: hyper::Request<hyper::body::Incoming>,
    authenticated: bool,
) -> Result<hyper::Response<KubeletBody>, Infallible> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    if path == "/healthz" {
        return Ok(answer(200, "ok".to_owned()));
    }
    if !authenticated {
        return Ok(answer(401, "Unauthorized".to_owned()));
    }
    if let Some(rest) = path.strip_prefix("/containerLogs/") {
        if query.contains("follow=true") {
            let first = Frame::data(Bytes::from("line 1\n"));
            let lines = futures::stream::once(async move { Ok::<_, Infallible>(first) })
                .chain(futures::stream::pending());
            let resp = hyper::Response::new(BodyExt::boxed(StreamBody::new(lines)));
            return Ok(resp);
        }
        return Ok(answer(200, format!("log of {rest}\nquery {query}\n")));
    }
    if path.starts_with("/exec/") && req.headers().contains_key("upgrade") {
        tokio::spawn(echo(hyper::upgrade::on(&mut req)));
        let resp = hyper::Response::builder()
            .status(101)
            .header("connection", "Upgrade")
            .header("upgrade", "SPDY/3.1")
            .header("x-kubelet-path", format!("{path}?{query}"))
            .body(Full::new(Bytes::new()).boxed())
            .expect("response");
        return Ok(resp);
    }
    Ok(answer(404, format!("no {path}")))
}

/// Once `upgrade` completes, sends back every byte read on the connection.
pub(crate) async fn echo(upgrade: hyper::upgrade::OnUpgrade) {
    let Ok(upgraded) = upgrade.await else { return };
    let mut io = TokioIo::new(upgraded);
    let mut buf = [0u8; 1024];
    while let Ok(n) = io.read(&mut buf).await {
        if n == 0 || io.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
}

/// Starts the fake kubelet on all addresses; it serves a certificate of
/// `pki` for `names` and checks client certificates against `pki`.
fn start_kubelet(pki: &Pki, names: Vec<String>) -> u16 {
    let (cert, key) = pki.issue(names, "kubelet");
    let mut roots = rustls::RootCertStore::empty();
    for c in pem_certs(&pki.ca_pem) {
        roots.add(c).expect("root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .expect("verifier");
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_client_cert_verifier(verifier)
        .with_single_cert(pem_certs(&cert), pem_key(&key))
        .expect("server config");
    serve_tls(config, "0.0.0.0:0", |tls| async move {
        let authenticated = tls.get_ref().1.peer_certificates().is_some();
        let service = service_fn(move |req| kubelet(req, authenticated));
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(tls), service)
            .with_upgrades()
            .await;
    })
}

/// Serves TLS with `config` on `bind` from a thread of its own, handing
/// each accepted connection to `serve`; returns the port.
pub(crate) fn serve_tls<F, Fut>(config: rustls::ServerConfig, bind: &str, serve: F) -> u16
where
    F: Fn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>) -> Fut + Send + Copy + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind(bind).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        serve(tls).await;
                    }
                });
            }
        });
    });
    port
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

/// Sends `head` (a request without body) to the server over TLS with a
/// client certificate (PEM files) and returns the response head and the
/// open connection.
pub(crate) fn raw_request(
    s: &TestServer,
    (cert, key): &(PathBuf, PathBuf),
    head: &str,
) -> (
    String,
    rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
) {
    let read = |path: &Path| std::fs::read_to_string(path).expect("pki file");
    let mut roots = rustls::RootCertStore::empty();
    for c in pem_certs(&read(&s.dir.path().join("pki").join("ca.crt"))) {
        roots.add(c).expect("root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_client_auth_cert(pem_certs(&read(cert)), pem_key(&read(key)))
        .expect("client config");
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("tls");
    let tcp = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(head.as_bytes()).expect("send");
    let mut response = Vec::new();
    let mut byte = [0u8; 1];
    while !response.ends_with(b"\r\n\r\n") {
        let n = tls.read(&mut byte).expect("read head");
        assert!(
            n > 0,
            "connection closed: {}",
            String::from_utf8_lossy(&response)
        );
        response.push(byte[0]);
    }
    (String::from_utf8_lossy(&response).into_owned(), tls)
}

fn exec_head(port: u16, method: &str, pod: &str, upgrade: bool) -> String {
    let upgrade = if upgrade {
        "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
    } else {
        ""
    };
    format!(
        "{method} /api/v1/namespaces/default/pods/{pod}/exec?command=cat&command=-n&stdin=true&stdout=true HTTP/1.1\r\n\
         Host: 127.0.0.1:{port}\r\n{upgrade}Content-Length: 0\r\n\r\n"
    )
}

const PODS: &str = "
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  nodeName: n1
  containers: [{name: app, image: busybox}, {name: sidecar, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: one}
spec:
  nodeName: n1
  containers: [{name: app, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec:
  containers: [{name: app, image: busybox}]
";

/// Creates a Node whose status (written through `nodes/status`, as a
/// kubelet does) reports the fake kubelet's address and port.
fn add_node(s: &TestServer, name: &str, address: &str, port: u16) {
    s.apply_yaml(&format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n"
    ));
    let status = serde_json::json!({"status": {
        "addresses": [{"type": "InternalIP", "address": address}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}});
    let patch = status.to_string();
    s.ok(&[
        "patch",
        "node",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
}

fn raw(s: &TestServer, path: &str) -> Result<String, String> {
    let out = s.kubectl(&["get", "--raw", path]);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

fn check_logs(s: &TestServer) {
    let out = s.ok(&["logs", "one"]);
    assert!(out.starts_with("log of default/one/app\n"), "{out}");
    let out = s.ok(&["logs", "two", "-c", "sidecar", "--tail=3", "--timestamps"]);
    assert!(out.contains("log of default/two/sidecar"), "{out}");
    assert!(out.contains("query tailLines=3&timestamps=true"), "{out}");
    let err = s.fails(&["logs", "two", "-c", "nope"]);
    assert!(
        err.contains("container nope is not valid for pod two"),
        "{err}"
    );
    let logs = "/api/v1/namespaces/default/pods";
    let err = raw(s, &format!("{logs}/two/log")).unwrap_err();
    let choose = "a container name must be specified for pod two, choose one of: [app sidecar]";
    assert!(err.contains(choose), "{err}");
    // Upstream's parameter conversions: the first of repeated values,
    // booleans true unless 0 or false, unknown parameters dropped, and
    // integers parsed as strconv.ParseInt.
    let query = "tailLines=2&tailLines=x&timestamps=yes&follow=0&bogus=1";
    let out = raw(s, &format!("{logs}/one/log?{query}")).expect("log");
    assert!(out.contains("query tailLines=2&timestamps=true"), "{out}");
    for bad in ["tailLines=x", "limitBytes=99999999999999999999"] {
        let err = raw(s, &format!("{logs}/one/log?{bad}")).unwrap_err();
        assert!(err.contains("strconv.ParseInt: parsing"), "{bad}: {err}");
    }
    let err = raw(s, &format!("{logs}/one/log?tailLines=-1")).unwrap_err();
    assert!(err.contains("must be greater than or equal to 0"), "{err}");
    let both = "sinceSeconds=1&sinceTime=2026-01-01T00:00:00Z";
    let err = raw(s, &format!("{logs}/one/log?{both}")).unwrap_err();
    let exclusive = "at most one of `sinceTime` or `sinceSeconds` may be specified";
    assert!(err.contains(exclusive), "{err}");
    // A bad sinceTime is a 400 with Go's time.Parse message, as
    // metav1.Time's query conversion answers it; a one-digit hour parses.
    let err = raw(s, &format!("{logs}/one/log?sinceTime=yesterday")).unwrap_err();
    let parse = r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#;
    assert!(err.contains(parse) && err.contains("(BadRequest)"), "{err}");
    let out = raw(
        s,
        &format!("{logs}/one/log?sinceTime=2026-01-02T3:04:05%2B01:00"),
    )
    .expect("log");
    assert!(out.contains("sinceTime=2026-01-02T02%3A04%3A05Z"), "{out}");
    let out = s.ok(&["logs", "pending"]);
    assert_eq!(out, "", "an unscheduled pod has no log yet");
}

/// `kubectl logs -f` prints the kubelet's first line while the kubelet
/// still holds the stream open: nothing on the way buffers it.
fn check_follow(s: &TestServer) {
    let mut child = Command::new("kubectl")
        .args(["logs", "-f", "one"])
        .env("KUBECONFIG", &s.kubeconfig)
        .env("HOME", s.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(15));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(line.as_deref(), Ok("line 1\n"));
}

fn check_exec(s: &TestServer) {
    let admin = s.dir.path().join("pki");
    let admin = (admin.join("admin.crt"), admin.join("admin.key"));
    let (head, mut conn) = raw_request(s, &admin, &exec_head(s.port, "POST", "one", true));
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let kubelet_path =
        "x-kubelet-path: /exec/default/one/app?input=1&output=1&command=cat&command=-n";
    assert!(head.to_ascii_lowercase().contains(kubelet_path), "{head}");
    conn.write_all(b"hello kubelet").expect("write");
    let mut echoed = [0u8; 13];
    conn.read_exact(&mut echoed).expect("echo");
    assert_eq!(&echoed, b"hello kubelet");
    let (head, _) = raw_request(s, &admin, &exec_head(s.port, "POST", "one", false));
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    let (head, _) = raw_request(s, &admin, &exec_head(s.port, "POST", "pending", true));
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    let err = s.fails(&["exec", "pending", "--", "true"]);
    assert!(
        err.contains("pod pending does not have a host assigned"),
        "{err}"
    );
    check_exec_admission(s, &admin);
}

/// Connect requests are admitted (operation CONNECT, the PodExecOptions
/// as the object) before anything connects.
fn check_exec_admission(s: &TestServer, admin: &(PathBuf, PathBuf)) {
    s.apply_yaml(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
         metadata: {name: no-cat}\nspec:\n  failurePolicy: Fail\n  matchConstraints:\n\
         \x20   resourceRules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CONNECT], resources: [pods/exec]}]\n\
         \x20 validations: [{expression: \"object.command[0] != 'cat'\", message: no cat}]\n---\n\
         apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
         metadata: {name: no-cat}\nspec: {policyName: no-cat, validationActions: [Deny]}\n",
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (head, _) = raw_request(s, admin, &exec_head(s.port, "POST", "one", true));
        // A failed validation is Invalid (422) unless the policy says otherwise.
        if head.starts_with("HTTP/1.1 422") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "exec still admitted: {head}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Node, pod and service proxying to routable addresses (loopback ones
/// are refused, as upstream refuses them).
fn check_proxies(s: &TestServer, port: u16, routable: Option<IpAddr>) {
    let err = raw(s, "/api/v1/nodes/n1/proxy/healthz").unwrap_err();
    assert!(err.contains("address not allowed"), "{err}");
    let Some(ip) = routable else { return };
    add_node(s, "n2", &ip.to_string(), port);
    assert_eq!(raw(s, "/api/v1/nodes/n2/proxy/healthz"), Ok("ok".into()));
    let status = serde_json::json!({"status": {"podIP": ip.to_string(), "podIPs": [{"ip": ip.to_string()}]}});
    let patch = status.to_string();
    s.ok(&[
        "patch",
        "pod",
        "one",
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
    let pod_proxy = format!("/api/v1/namespaces/default/pods/https:one:{port}/proxy/healthz");
    assert_eq!(raw(s, &pod_proxy), Ok("ok".into()));
    s.apply_yaml(&format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec:\n  ports: [{{name: https, port: 443}}]\n---\n\
         apiVersion: v1\nkind: Endpoints\nmetadata: {{name: web}}\nsubsets:\n\
         - addresses: [{{ip: \"{ip}\", targetRef: {{kind: Pod, name: one, namespace: default}}}}]\n\
         \x20 ports: [{{name: https, port: {port}}}]\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: empty}}\nspec:\n  ports: [{{port: 80}}]\n---\n\
         apiVersion: v1\nkind: Endpoints\nmetadata: {{name: empty}}\n"
    ));
    let svc_proxy = "/api/v1/namespaces/default/services/https:web:443/proxy/healthz";
    assert_eq!(raw(s, svc_proxy), Ok("ok".into()));
    let err = raw(s, "/api/v1/namespaces/default/services/empty/proxy/").unwrap_err();
    assert!(
        err.contains("no endpoints available for service \"empty\""),
        "{err}"
    );
}

fn check_discovery(s: &TestServer) {
    let api: serde_json::Value =
        serde_json::from_str(&s.ok(&["get", "--raw", "/api/v1"])).expect("json");
    let verbs = |name: &str| {
        api["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == name))
            .map(|r| r["verbs"].clone())
    };
    let all = serde_json::json!(["create", "delete", "get", "patch", "update"]);
    assert_eq!(verbs("pods/log"), Some(serde_json::json!(["get"])));
    assert_eq!(
        verbs("pods/exec"),
        Some(serde_json::json!(["create", "get"]))
    );
    assert_eq!(
        verbs("pods/portforward"),
        Some(serde_json::json!(["create", "get"]))
    );
    assert_eq!(verbs("nodes/proxy"), Some(all.clone()));
    assert_eq!(verbs("services/proxy"), Some(all));
}

#[test]
fn logs_exec_and_proxies_reach_the_kubelet() {
    let pki = Pki::new();
    let routable = routable_address();
    let mut names = vec!["127.0.0.1".to_owned()];
    names.extend(routable.map(|ip| ip.to_string()));
    let port = start_kubelet(&pki, names);
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key) = pki.issue(Vec::new(), "kube-apiserver-kubelet-client");
    let flags = [
        ("client-certificate", write(dir.path(), "c.crt", &cert)),
        ("client-key", write(dir.path(), "c.key", &key)),
        (
            "certificate-authority",
            write(dir.path(), "ca.crt", &pki.ca_pem),
        ),
    ]
    .map(|(flag, path)| format!("--kubelet-{flag}={}", path.display()));
    let s = TestServer::start_with(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    add_node(&s, "n1", "127.0.0.1", port);
    s.apply_yaml(PODS);
    check_logs(&s);
    check_follow(&s);
    check_exec(&s);
    check_proxies(&s, port, routable);
    check_discovery(&s);
}

/// With `AuthorizePodWebsocketUpgradeCreatePermission` (on by default), a
/// websocket's GET to `pods/exec` needs `create` as a SPDY POST does.
#[test]
fn websocket_exec_needs_create_permission() {
    let s = TestServer::start_with(&["--authorization-mode=RBAC"]);
    s.apply_yaml(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: exec-get}\n\
         rules: [{apiGroups: [\"\"], resources: [pods/exec], verbs: [get]}]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: exec-get}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: exec-get}\n\
         subjects: [{kind: User, name: viewer, apiGroup: rbac.authorization.k8s.io}]\n",
    );
    let viewer = s.client_cert("viewer", "viewers");
    let (head, _) = raw_request(&s, &viewer, &exec_head(s.port, "GET", "web", true));
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    s.ok(&[
        "create",
        "role",
        "exec-create",
        "--verb=create",
        "--resource=pods/exec",
    ]);
    s.ok(&[
        "create",
        "rolebinding",
        "exec-create",
        "--role=exec-create",
        "--user=viewer",
    ]);
    // Allowed now: the request goes on to find the (absent) pod.
    let (head, _) = raw_request(&s, &viewer, &exec_head(s.port, "GET", "web", true));
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}
