//! Admission end to end: the default plugins (NamespaceLifecycle,
//! ServiceAccount, LimitRanger, ResourceQuota), turning one off, and
//! validating and mutating webhooks served over HTTPS by the test itself.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use crate::harness::{Backend, TestServer};
use crate::support::pki::csr_request;

fn namespaces_must_exist_and_system_ones_stay(s: &TestServer) {
    let err = s.fails(&["create", "configmap", "c", "-n", "missing"]);
    assert!(err.contains("namespaces \"missing\" not found"), "{err}");
    let err = s.fails(&["delete", "namespace", "kube-system"]);
    assert!(
        err.contains("namespaces \"kube-system\" is forbidden: this namespace may not be deleted"),
        "{err}"
    );
    // A namespace held by a finalizer is terminating once deleted.
    s.apply_yaml("apiVersion: v1\nkind: Namespace\nmetadata: {name: doomed, finalizers: [example.com/hold]}\n");
    s.ok(&["delete", "namespace", "doomed", "--wait=false"]);
    let err = s.fails(&["create", "configmap", "c", "-n", "doomed"]);
    assert!(
        err.contains("configmaps \"c\" is forbidden: unable to create new content in namespace doomed because it is being terminated"),
        "{err}"
    );
    // Dry run is admitted the same way.
    let err = s.fails(&[
        "create",
        "configmap",
        "c",
        "-n",
        "missing",
        "--dry-run=server",
    ]);
    assert!(err.contains("namespaces \"missing\" not found"), "{err}");
}

fn disabling_namespace_lifecycle_lets_content_into_missing_namespaces(backend: Backend) {
    let s = backend.start_with(&["--disable-admission-plugins=NamespaceLifecycle"]);
    s.ok(&["create", "configmap", "c", "-n", "missing"]);
    s.ok(&["delete", "namespace", "kube-public"]);
}

#[test]
fn unknown_plugins_stop_startup() {
    let out = std::process::Command::new(crate::harness::binary())
        .args(["--enable-admission-plugins=NoSuchPlugin", "--secure-port=0"])
        .output()
        .expect("binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--enable-admission-plugins: plugin \"NoSuchPlugin\" is unknown"),
        "{stderr}"
    );
}

const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"NAME","namespace":"apps"},
"spec":{"containers":[{"name":"web","image":"nginx"}]}}"#;

fn pod(s: &TestServer, name: &str) -> std::process::Output {
    s.kubectl_stdin(
        &["create", "-f", "-", "-o", "json"],
        &POD.replace("NAME", name),
    )
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn pods_get_service_account_credentials_limit_defaults_and_quota(s: &TestServer) {
    s.ok(&["create", "namespace", "apps"]);
    // A pod naming an account that does not exist is refused.
    let robot = POD
        .replace("NAME", "early")
        .replace(r#""spec":{"#, r#""spec":{"serviceAccountName":"robot","#);
    let out = s.kubectl_stdin(&["create", "-f", "-"], &robot);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pods \"early\" is forbidden: error looking up service account apps/robot: serviceaccount \"robot\" not found"),
        "{err}"
    );
    // The default account is created for every namespace.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !s
        .kubectl(&["get", "serviceaccount", "default", "-n", "apps"])
        .status
        .success()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no default service account"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    s.apply_yaml(
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr, namespace: apps}\nspec:\n  limits:\n  - type: Container\n    default: {cpu: 500m}\n    defaultRequest: {cpu: 100m}\n",
    );
    s.apply_yaml(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: apps}\nspec:\n  hard: {pods: \"1\"}\n",
    );
    // With no quota controller, the plugin fills a new quota's status.
    let quota_status = |s: &TestServer| -> Value {
        let out = s.ok(&["get", "resourcequota", "q", "-n", "apps", "-o", "json"]);
        serde_json::from_str::<Value>(&out).unwrap_or(Value::Null)["status"].clone()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while quota_status(s)["used"]["pods"] != "0" && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        quota_status(s),
        json!({"hard": {"pods": "1"}, "used": {"pods": "0"}})
    );
    let p = json_of(&pod(s, "one"));
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    let volume = p["spec"]["volumes"][0]["name"].as_str().unwrap_or_default();
    assert!(volume.starts_with("kube-api-access-"), "{p}");
    assert_eq!(
        p["spec"]["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"]["path"],
        "token"
    );
    let mount = &p["spec"]["containers"][0]["volumeMounts"][0];
    assert_eq!(mount["name"], volume);
    assert_eq!(
        mount["mountPath"],
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    let resources = &p["spec"]["containers"][0]["resources"];
    assert_eq!(resources["requests"]["cpu"], "100m");
    assert_eq!(resources["limits"]["cpu"], "500m");
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu request for container web; cpu limit for container web"
    );
    let tolerations = p["spec"]["tolerations"].as_array().map(Vec::len);
    assert_eq!(tolerations, Some(2), "DefaultTolerationSeconds: {p}");

    let out = pod(s, "two");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pods \"two\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"),
        "{err}"
    );
    let quota: Value =
        serde_json::from_str(&s.ok(&["get", "resourcequota", "q", "-n", "apps", "-o", "json"]))
            .unwrap_or(Value::Null);
    assert_eq!(quota["status"]["used"]["pods"], "1", "{quota}");
    assert_eq!(quota["status"]["hard"]["pods"], "1", "{quota}");
    s.ok(&["delete", "pod", "one", "-n", "apps", "--wait=false"]);
    json_of(&pod(s, "three"));
}

/// The test's webhook: `/validate` refuses objects labelled `deny` (and
/// returns an audit annotation when it allows), `/mutate` labels every
/// object `mutated=yes`.
async fn answer(path: String, body: Bytes) -> Value {
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = &review["request"];
    let uid = request["uid"].clone();
    let response = if path.starts_with("/validate") {
        let denied = request["object"]["metadata"]["labels"]["deny"].is_string();
        if denied {
            json!({"uid": uid, "allowed": false, "status": {"code": 403, "message": "objects labelled deny are refused"}})
        } else {
            json!({"uid": uid, "allowed": true, "warnings": ["validated by the test"],
                   "auditAnnotations": {"verdict": "allowed", "bad/key": "dropped"}})
        }
    } else {
        let patch = if request["object"]["metadata"]["labels"].is_object() {
            json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
        } else {
            json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
        };
        let encoded = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
        json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": encoded})
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// Starts the HTTPS webhook on a loopback port; returns its address and CA.
pub(crate) fn start_webhook() -> (SocketAddr, String) {
    let (addr, ca, _) = start_recording_webhook();
    (addr, ca)
}

/// The headers of every request a webhook received, in order.
pub(crate) type SeenHeaders = Arc<std::sync::Mutex<Vec<hyper::HeaderMap>>>;

/// [`start_webhook`], also recording the headers of the requests it gets.
pub(crate) fn start_recording_webhook() -> (SocketAddr, String, SeenHeaders) {
    let seen = SeenHeaders::default();
    let record = seen.clone();
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("cert");
    let certs = vec![cert.der().clone()];
    let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).expect("key der");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs, private)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let record = record.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| {
                        if let Ok(mut seen) = record.lock() {
                            seen.push(req.headers().clone());
                        }
                        async move {
                            let path = req.uri().path().to_owned();
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let out = answer(path, body).await;
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                Bytes::from(out.to_string()),
                            )))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
    });
    (addr, ca_cert.pem(), seen)
}

fn webhooks_deny_and_patch_objects(s: &TestServer) {
    let (addr, ca) = start_webhook();
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    let hook = |kind: &str, name: &str, path: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nwebhooks:\n- name: {name}.test.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  clientConfig:\n    url: https://{addr}{path}\n    caBundle: {bundle}\n  rules:\n  - operations: [CREATE, UPDATE]\n    apiGroups: [\"\"]\n    apiVersions: [v1]\n    resources: [configmaps]\n  objectSelector:\n    matchExpressions:\n    - {{key: skip, operator: DoesNotExist}}\n"
        )
    };
    s.apply_yaml(&hook(
        "ValidatingWebhookConfiguration",
        "refuse",
        "/validate",
    ));
    s.apply_yaml(&hook("MutatingWebhookConfiguration", "label", "/mutate"));

    let out = s.kubectl(&["create", "configmap", "kept", "-o", "json"]);
    let cm = json_of(&out);
    assert_eq!(cm["metadata"]["labels"]["mutated"], "yes", "{cm}");
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(warnings.contains("validated by the test"), "{warnings}");

    let denied = s.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: refused, labels: {deny: \"1\"}}\n",
    );
    let err = String::from_utf8_lossy(&denied.stderr);
    assert!(
        err.contains("admission webhook \"refuse.test.example.com\" denied the request: objects labelled deny are refused"),
        "{err}"
    );
    assert!(!s.kubectl(&["get", "configmap", "refused"]).status.success());

    // The object selector leaves labelled objects alone.
    let skipped = s.kubectl_stdin(
        &["create", "-f", "-", "-o", "json"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: skipped, labels: {skip: \"1\", deny: \"1\"}}\n",
    );
    let cm = json_of(&skipped);
    assert!(cm["metadata"]["labels"]["mutated"].is_null(), "{cm}");
}

fn an_unreachable_webhook_fails_closed_unless_ignored(s: &TestServer) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(1);
    let hook = |name: &str, policy: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: {name}}}\nwebhooks:\n- name: {name}.test.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: {policy}\n  timeoutSeconds: 2\n  clientConfig:\n    url: https://127.0.0.1:{port}/\n  rules:\n  - operations: [CREATE]\n    apiGroups: [\"\"]\n    apiVersions: [v1]\n    resources: [secrets]\n"
        )
    };
    s.apply_yaml(&hook("lenient", "Ignore"));
    s.ok(&["create", "secret", "generic", "a"]);
    s.apply_yaml(&hook("strict", "Fail"));
    let err = s.fails(&["create", "secret", "generic", "b"]);
    assert!(
        err.contains("Internal error occurred: failed calling webhook \"strict.test.example.com\""),
        "{err}"
    );
}

fn csr_yaml(name: &str, org: &str) -> String {
    let request = csr_request("alice", &[org]);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: {name}}}\nspec:\n  request: {request}\n  signerName: kubernetes.io/kube-apiserver-client\n  usages: [client auth]\n"
    )
}

fn client_certificates_for_system_masters_are_refused(s: &TestServer) {
    let out = s.kubectl_stdin(
        &["create", "-f", "-"],
        &csr_yaml("masters", "system:masters"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("certificatesigningrequests.certificates.k8s.io \"masters\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"),
        "{err}"
    );
    let out = s.kubectl_stdin(&["create", "-f", "-"], &csr_yaml("dev", "developers"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

crate::harness::on_both_backends!(
    namespaces_must_exist_and_system_ones_stay,
    pods_get_service_account_credentials_limit_defaults_and_quota,
    webhooks_deny_and_patch_objects,
    an_unreachable_webhook_fails_closed_unless_ignored,
    client_certificates_for_system_masters_are_refused;
    backend: disabling_namespace_lifecycle_lets_content_into_missing_namespaces
);
