//! Authentication refusals and corners, as upstream answers them: malformed
//! `Authorization` headers, client certificates that are expired, from
//! another CA or without a common name, service-account tokens that are
//! forged, expired, for another audience or whose account or bound object
//! is gone or replaced; TokenRequest's rules (lifetime limits, the cap, the
//! extension of kubelet's pod tokens, bound objects and UIDs); the user
//! extras of pod-bound tokens; front-proxy UID headers and escaped extra
//! keys. Requests that need exact headers go over raw HTTPS (curl).

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use serde_json::{json, Value};

use crate::harness::{Backend, TestServer};
use crate::support::kubectl::stderr;

const UNAUTHORIZED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;
const STATIC_TOKEN: &str = "carol-token-0123456789";
const SELF_REVIEW: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// A raw answer: status code, response headers (lower-cased text), body.
struct Answer {
    code: u16,
    headers: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// POSTs a SelfSubjectReview (or GETs `path` when it is not that) with the
/// given headers and optional client certificate.
fn request(
    server: &TestServer,
    path: &str,
    headers: &[&str],
    cert: Option<&(PathBuf, PathBuf)>,
) -> Answer {
    let ca = server.dir.path().join("pki").join("ca.crt");
    let url = format!("https://127.0.0.1:{}{path}", server.port);
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-i", "--http1.1", "--cacert"]).arg(&ca);
    if path == SELF_REVIEW {
        let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
        cmd.args(["-X", "POST", "-H", "Content-Type: application/json", "-d"])
            .arg(body.to_string());
    }
    if let Some((crt, key)) = cert {
        cmd.arg("--cert").arg(crt).arg("--key").arg(key);
    }
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.arg(url).output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Answer {
        code,
        headers: head.to_lowercase(),
        body: body.trim().to_owned(),
    }
}

/// The user a SelfSubjectReview with these credentials reports.
fn whoami(server: &TestServer, headers: &[&str], cert: Option<&(PathBuf, PathBuf)>) -> Answer {
    request(server, SELF_REVIEW, headers, cert)
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

fn assert_unauthorized(answer: &Answer, what: &str) {
    assert_eq!(answer.code, 401, "{what}: {}", answer.body);
    assert_eq!(answer.body, UNAUTHORIZED, "{what}");
}

fn token_file(dir: &Path) -> String {
    let path = dir.join("tokens.csv");
    std::fs::write(&path, format!("{STATIC_TOKEN},carol,2001,dev\n")).expect("token file");
    format!("--token-auth-file={}", path.display())
}

fn malformed_authorization_headers_are_refused(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let tokens = token_file(files.path());
    let server = backend.start_with(&["--anonymous-auth=false", &tokens]);
    let good = whoami(&server, &[&bearer(STATIC_TOKEN)], None);
    assert_eq!(good.code, 201, "{}", good.body);
    assert_eq!(good.json()["status"]["userInfo"]["username"], "carol");
    let lower = whoami(
        &server,
        &[&format!("Authorization: bearer {STATIC_TOKEN}")],
        None,
    );
    assert_eq!(lower.code, 201, "the scheme is case-insensitive");
    for header in [
        "Authorization: Bearer",
        "Authorization: Bearer garbage",
        "Authorization: Bearer a.b.c",
        "Authorization: Bearer not a token",
        "Authorization: Basic Y2Fyb2w6c2VjcmV0",
        "Authorization: Negotiate abc",
    ] {
        assert_unauthorized(&whoami(&server, &[header], None), header);
    }
    assert_unauthorized(&whoami(&server, &[], None), "no credentials");
    // A space too many: the token is ignored, with upstream's warning.
    let spaced = whoami(
        &server,
        &[&format!("Authorization: Bearer  {STATIC_TOKEN}")],
        None,
    );
    assert_unauthorized(&spaced, "space before the token");
    assert!(
        spaced.headers.contains(
            "warning: 299 - \"the provided authorization header contains extra space before the bearer token, and is ignored\""
        ),
        "{}",
        spaced.headers
    );
    // Unauthorized requests learn nothing about the API.
    assert_unauthorized(&request(&server, "/api/v1/namespaces", &[], None), "list");
    assert_unauthorized(
        &request(
            &server,
            "/apis/no.such/v1/things",
            &["Authorization: Bearer x"],
            None,
        ),
        "unknown path",
    );
}

/// A CA of its own, or the server's, issuing one client certificate.
struct CertSpec<'a> {
    cn: Option<&'a str>,
    expired: bool,
    foreign_ca: bool,
}

fn issue(server: &TestServer, name: &str, spec: CertSpec<'_>) -> (PathBuf, PathBuf) {
    let (ca_pem, ca_key) = if spec.foreign_ca {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "other-ca");
        let cert = params.self_signed(&key).expect("ca");
        (cert.pem(), key)
    } else {
        let pki = server.dir.path().join("pki");
        let pem = std::fs::read_to_string(pki.join("ca.crt")).expect("ca.crt");
        let key = std::fs::read_to_string(pki.join("ca.key")).expect("ca.key");
        (pem, rcgen::KeyPair::from_pem(&key).expect("ca key"))
    };
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("issuer");
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    // rcgen's default subject has a common name of its own.
    params.distinguished_name = rcgen::DistinguishedName::new();
    if let Some(cn) = spec.cn {
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
    }
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:masters");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    if spec.expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let cert = params.signed_by(&key, &issuer).expect("cert");
    let paths = (
        server.dir.path().join(format!("{name}.crt")),
        server.dir.path().join(format!("{name}.key")),
    );
    std::fs::write(&paths.0, cert.pem()).expect("write cert");
    std::fs::write(&paths.1, key.serialize_pem()).expect("write key");
    paths
}

fn bad_client_certificates_are_refused_or_ignored(backend: Backend) {
    // About who a certificate names, not what they may do: anonymous users
    // may ask who they are only when authorization allows everyone.
    let server = &backend.start_with(&["--authorization-mode=AlwaysAllow"]);
    let valid = issue(
        server,
        "valid",
        CertSpec {
            cn: Some("dora"),
            expired: false,
            foreign_ca: false,
        },
    );
    let answer = whoami(server, &[], Some(&valid));
    assert_eq!(answer.code, 201, "{}", answer.body);
    assert_eq!(answer.json()["status"]["userInfo"]["username"], "dora");
    let expired = issue(
        server,
        "expired",
        CertSpec {
            cn: Some("dora"),
            expired: true,
            foreign_ca: false,
        },
    );
    // The handshake only asks for a certificate; the x509 authenticator
    // refuses the chain: 401, never the user and never anonymous.
    assert_unauthorized(&whoami(server, &[], Some(&expired)), "expired certificate");
    let foreign = issue(
        server,
        "foreign",
        CertSpec {
            cn: Some("dora"),
            expired: false,
            foreign_ca: true,
        },
    );
    assert_unauthorized(
        &whoami(server, &[], Some(&foreign)),
        "certificate of another CA",
    );
    // Without a common name a certificate names no user: anonymous.
    let nameless = issue(
        server,
        "nameless",
        CertSpec {
            cn: None,
            expired: false,
            foreign_ca: false,
        },
    );
    let answer = whoami(server, &[], Some(&nameless));
    assert_eq!(answer.code, 201, "{}", answer.body);
    assert_eq!(
        answer.json()["status"]["userInfo"],
        json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]})
    );
    // The chain is verified before the subject is read: a nameless
    // certificate of another CA is refused, not anonymous.
    let nameless_foreign = issue(
        server,
        "nameless-foreign",
        CertSpec {
            cn: None,
            expired: false,
            foreign_ca: true,
        },
    );
    assert_unauthorized(
        &whoami(server, &[], Some(&nameless_foreign)),
        "nameless certificate of another CA",
    );
    // Basic credentials are not read at all: anonymous too.
    let answer = whoami(server, &["Authorization: Basic Y2Fyb2w6c2VjcmV0"], None);
    assert_eq!(
        answer.json()["status"]["userInfo"]["username"],
        "system:anonymous"
    );
    // A bad bearer token is never anonymous.
    assert_unauthorized(&whoami(server, &[&bearer("garbage")], None), "bad token");
}

/// The claims of a JWT, unverified.
fn claims(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("jwt payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("json")
}

/// Signs `claims` with a P-256 key in PEM (ES256, as the server's key).
fn sign(claims: &Value, key_pem: &str) -> String {
    let key = rcgen::KeyPair::from_pem(key_pem).expect("key");
    let encoding = jsonwebtoken::EncodingKey::from_ec_der(&key.serialize_der());
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    jsonwebtoken::encode(&header, claims, &encoding).expect("sign")
}

fn create_token(server: &TestServer, args: &[&str]) -> String {
    let mut all = vec!["create", "token"];
    all.extend_from_slice(args);
    server.ok(&all).trim().to_owned()
}

fn review(server: &TestServer, token: &str, audiences: &[&str]) -> Value {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token, "audiences": audiences}});
    let out = server.kubectl_stdin(&["create", "-f", "-", "-o", "json"], &body.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).expect("json")["status"].clone()
}

fn forged_expired_and_foreign_audience_tokens_are_refused(server: &TestServer) {
    server.ok(&["create", "serviceaccount", "robot", "-n", "default"]);
    let token = create_token(server, &["robot", "-n", "default"]);
    let answer = whoami(server, &[&bearer(&token)], None);
    assert_eq!(answer.code, 201, "{}", answer.body);
    let mut payload = claims(&token);

    // The same claims signed by another key.
    let other = rcgen::KeyPair::generate().expect("key").serialize_pem();
    assert_unauthorized(
        &whoami(server, &[&bearer(&sign(&payload, &other))], None),
        "forged",
    );
    // Signed by the server's own key but expired (beyond the leeway).
    let sa_key =
        std::fs::read_to_string(server.dir.path().join("pki").join("sa.key")).expect("sa.key");
    let now = payload["iat"].as_i64().expect("iat");
    payload["iat"] = json!(now - 7200);
    payload["nbf"] = json!(now - 7200);
    payload["exp"] = json!(now - 3600);
    let expired = sign(&payload, &sa_key);
    assert_unauthorized(&whoami(server, &[&bearer(&expired)], None), "expired");
    assert_eq!(
        review(server, &expired, &[])["error"],
        "service account token has expired"
    );

    // A token for another audience is no API credential; TokenReview
    // accepts it for that audience only.
    let foreign = create_token(server, &["robot", "-n", "default", "--audience", "vault"]);
    assert_unauthorized(
        &whoami(server, &[&bearer(&foreign)], None),
        "other audience",
    );
    let status = review(server, &foreign, &["vault", "other"]);
    assert_eq!(status["authenticated"], true);
    assert_eq!(status["audiences"], json!(["vault"]));
    let status = review(server, &foreign, &[]);
    assert_eq!(
        status["error"],
        format!(
            "token audiences [\"vault\"] is invalid for the target audiences [\"{API_AUDIENCE}\"]"
        )
    );
    assert!(status.get("authenticated").is_none_or(|a| a == false));
}

/// Tokens whose account or bound object went away or was replaced. Each
/// token is first used after the change, so no cached success hides it.
fn tokens_of_deleted_or_replaced_objects_are_refused(server: &TestServer) {
    server.ok(&["create", "serviceaccount", "ghost", "-n", "default"]);
    let of_deleted = create_token(server, &["ghost", "-n", "default"]);
    server.ok(&["delete", "serviceaccount", "ghost", "-n", "default"]);
    assert_unauthorized(
        &whoami(server, &[&bearer(&of_deleted)], None),
        "deleted account",
    );
    server.ok(&["create", "serviceaccount", "ghost", "-n", "default"]);
    assert_unauthorized(
        &whoami(server, &[&bearer(&of_deleted)], None),
        "recreated account",
    );

    server.ok(&["create", "serviceaccount", "holder", "-n", "default"]);
    server.ok(&["create", "secret", "generic", "anchor", "-n", "default"]);
    let bound = [
        "holder",
        "-n",
        "default",
        "--bound-object-kind",
        "Secret",
        "--bound-object-name",
        "anchor",
    ];
    let of_secret = create_token(server, &bound);
    server.ok(&["delete", "secret", "anchor", "-n", "default"]);
    assert_unauthorized(
        &whoami(server, &[&bearer(&of_secret)], None),
        "deleted secret",
    );
    server.ok(&["create", "secret", "generic", "anchor", "-n", "default"]);
    assert_unauthorized(
        &whoami(server, &[&bearer(&of_secret)], None),
        "replaced secret",
    );
    let fresh = create_token(server, &bound);
    assert_eq!(whoami(server, &[&bearer(&fresh)], None).code, 201);

    server.apply_yaml("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-gone\n");
    let of_node = create_token(
        server,
        &[
            "holder",
            "-n",
            "default",
            "--bound-object-kind",
            "Node",
            "--bound-object-name",
            "worker-gone",
        ],
    );
    server.ok(&["delete", "node", "worker-gone"]);
    assert_unauthorized(&whoami(server, &[&bearer(&of_node)], None), "deleted node");
}

const POD_YAML: &str = "apiVersion: v1
kind: Pod
metadata:
  name: runner
  namespace: default
spec:
  serviceAccountName: runner
  nodeName: worker-1
  containers:
  - name: c
    image: busybox
";

fn pod_bound_tokens_carry_pod_and_node(server: &TestServer) {
    server.apply_yaml("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\n");
    server.ok(&["create", "serviceaccount", "runner", "-n", "default"]);
    server.apply_yaml(POD_YAML);
    let uid = |kind: &str, ns: &[&str], name: &str| {
        let mut args = vec!["get", kind, name, "-o", "jsonpath={.metadata.uid}"];
        args.extend_from_slice(ns);
        server.ok(&args)
    };
    let pod_uid = uid("pod", &["-n", "default"], "runner");
    let node_uid = uid("node", &[], "worker-1");
    let sa_uid = uid("serviceaccount", &["-n", "default"], "runner");
    let token = create_token(
        server,
        &[
            "runner",
            "-n",
            "default",
            "--bound-object-kind",
            "Pod",
            "--bound-object-name",
            "runner",
            "--duration",
            "1h",
            "--audience",
            "x",
            "--audience",
            API_AUDIENCE,
        ],
    );
    let c = claims(&token);
    assert_eq!(c["aud"], json!(["x", API_AUDIENCE]));
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3600
    );
    assert_eq!(c["nbf"], c["iat"]);
    assert!(c["jti"].as_str().is_some_and(|j| j.len() == 36), "{c}");
    assert_eq!(
        c["kubernetes.io"],
        json!({"namespace": "default",
            "serviceaccount": {"name": "runner", "uid": sa_uid},
            "pod": {"name": "runner", "uid": pod_uid},
            "node": {"name": "worker-1", "uid": node_uid}})
    );
    let jti = c["jti"].as_str().unwrap_or_default();
    let expected_extra = json!({
        "authentication.kubernetes.io/credential-id": [format!("JTI={jti}")],
        "authentication.kubernetes.io/node-name": ["worker-1"],
        "authentication.kubernetes.io/node-uid": [node_uid],
        "authentication.kubernetes.io/pod-name": ["runner"],
        "authentication.kubernetes.io/pod-uid": [pod_uid],
    });
    let answer = whoami(server, &[&bearer(&token)], None);
    assert_eq!(answer.code, 201, "{}", answer.body);
    let user = &answer.json()["status"]["userInfo"];
    assert_eq!(user["extra"], expected_extra);
    assert_eq!(user["uid"], sa_uid.as_str());
    assert_eq!(
        review(server, &token, &["x"])["user"]["extra"],
        expected_extra
    );

    // The pod deleted and created again under its name: a new UID.
    let fresh = create_token(
        server,
        &[
            "runner",
            "-n",
            "default",
            "--bound-object-kind",
            "Pod",
            "--bound-object-name",
            "runner",
        ],
    );
    server.ok(&[
        "delete",
        "pod",
        "runner",
        "-n",
        "default",
        "--grace-period=0",
        "--force",
    ]);
    server.apply_yaml(POD_YAML);
    assert_unauthorized(&whoami(server, &[&bearer(&fresh)], None), "replaced pod");
}

/// POSTs a TokenRequest for `account`; returns kubectl's output.
fn token_request(server: &TestServer, account: &str, body: Value) -> std::process::Output {
    let path = format!("/api/v1/namespaces/default/serviceaccounts/{account}/token");
    server.kubectl_stdin(&["create", "--raw", &path, "-f", "-"], &body.to_string())
}

fn token_request_json(server: &TestServer, account: &str, spec: Value) -> Value {
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    let out = token_request(server, account, body);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn token_requests_follow_upstreams_limits(backend: Backend) {
    let server = backend.start_with(&["--service-account-max-token-expiration=2h"]);
    server.ok(&["create", "serviceaccount", "builder", "-n", "default"]);
    let short = server.fails(&[
        "create",
        "token",
        "builder",
        "-n",
        "default",
        "--duration",
        "5m",
    ]);
    assert!(
        short.contains("TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{short}"
    );
    // Longer than the maximum: capped.
    let capped = create_token(&server, &["builder", "-n", "default", "--duration", "10h"]);
    let c = claims(&capped);
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        7200
    );

    for (args, message) in [
        (
            vec![
                "--bound-object-kind",
                "Pod",
                "--bound-object-name",
                "missing",
            ],
            "pods \"missing\" not found",
        ),
        (
            vec![
                "--bound-object-kind",
                "Secret",
                "--bound-object-name",
                "missing",
            ],
            "secrets \"missing\" not found",
        ),
        (
            vec![
                "--bound-object-kind",
                "Node",
                "--bound-object-name",
                "missing",
            ],
            "nodes \"missing\" not found",
        ),
    ] {
        let mut all = vec!["create", "token", "builder", "-n", "default"];
        all.extend(args);
        let err = server.fails(&all);
        assert!(err.contains(message), "{err}");
    }
    let wrong_kind =
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}});
    let out = token_request(
        &server,
        "builder",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": wrong_kind}),
    );
    assert!(
        stderr(&out).contains("cannot bind token to object of type /v1, Kind=ConfigMap"),
        "{}",
        stderr(&out)
    );
    server.ok(&["create", "secret", "generic", "anchor", "-n", "default"]);
    let err = server.fails(&[
        "create",
        "token",
        "builder",
        "-n",
        "default",
        "--bound-object-kind",
        "Secret",
        "--bound-object-name",
        "anchor",
        "--bound-object-uid",
        "0000",
    ]);
    assert!(
        err.contains("Operation cannot be fulfilled on Secret \"anchor\": the UID in the bound object reference (0000) does not match the UID in record. The object might have been deleted and then recreated"),
        "{err}"
    );
    server.ok(&["create", "serviceaccount", "other", "-n", "default"]);
    server.apply_yaml(&POD_YAML.replace("serviceAccountName: runner", "serviceAccountName: other"));
    let err = server.fails(&[
        "create",
        "token",
        "builder",
        "-n",
        "default",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "runner",
    ]);
    assert!(err.contains("cannot bind token for serviceaccount \"builder\" to pod running with different serviceaccount name."), "{err}");
    // A TokenRequest naming another UID than the account's.
    let stale = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {"uid": "stale"}, "spec": {}});
    let out = token_request(&server, "builder", stale);
    assert!(
        stderr(&out).contains(
            "the UID in the token request (stale) does not match the UID of the service account"
        ),
        "{}",
        stderr(&out)
    );

    // Kubelet's 3607 s pod tokens live a year and warn after the asked time.
    let pod_ref = json!({"apiVersion": "v1", "kind": "Pod", "name": "runner"});
    let answer = token_request_json(
        &server,
        "other",
        json!({"expirationSeconds": 3607, "boundObjectRef": pod_ref}),
    );
    assert_eq!(answer["metadata"]["name"], "other");
    assert!(
        answer["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty()),
        "{answer}"
    );
    let c = claims(answer["status"]["token"].as_str().unwrap_or_default());
    let iat = c["iat"].as_i64().unwrap();
    assert_eq!(c["exp"].as_i64().unwrap() - iat, 365 * 24 * 3600);
    assert_eq!(
        c["kubernetes.io"]["warnafter"].as_i64().unwrap() - iat,
        3607
    );
    // Not for other audiences, nor for tokens bound to no pod.
    let answer = token_request_json(
        &server,
        "other",
        json!({"expirationSeconds": 3607, "boundObjectRef": pod_ref, "audiences": ["vault"]}),
    );
    let c = claims(answer["status"]["token"].as_str().unwrap_or_default());
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3607
    );
    assert!(c["kubernetes.io"].get("warnafter").is_none(), "{c}");
    let answer = token_request_json(&server, "other", json!({"expirationSeconds": 3607}));
    let c = claims(answer["status"]["token"].as_str().unwrap_or_default());
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3607
    );
}

fn front_proxy_uid_headers_and_escaped_extra_keys(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca");
    let ca_path = files.path().join("front-proxy-ca.crt");
    std::fs::write(&ca_path, ca_cert.pem()).expect("write");
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "aggregator");
    let cert = params.signed_by(&key, &issuer).expect("cert");
    let proxy = (
        files.path().join("proxy.crt"),
        files.path().join("proxy.key"),
    );
    std::fs::write(&proxy.0, cert.pem()).expect("write");
    std::fs::write(&proxy.1, key.serialize_pem()).expect("write");
    let ca_flag = format!("--requestheader-client-ca-file={}", ca_path.display());
    let server = backend.start_with(&[
        &ca_flag,
        "--requestheader-allowed-names=aggregator",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-uid-headers=X-Remote-Uid",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    ]);
    let answer = whoami(
        &server,
        &[
            "X-Remote-User: erin",
            "X-Remote-Uid: 42",
            "X-Remote-Group: a",
            "X-Remote-Group: b",
            "X-Remote-Extra-Example.com%2fTeam: blue",
            "X-Remote-Extra-Example.com%2fTeam: green",
            "X-Remote-Extra-Case%41: kept",
            "X-Remote-Extra-Bad%zz: raw",
        ],
        Some(&proxy),
    );
    assert_eq!(answer.code, 201, "{}", answer.body);
    assert_eq!(
        answer.json()["status"]["userInfo"],
        json!({"username": "erin", "uid": "42", "groups": ["a", "b", "system:authenticated"],
            "extra": {"bad%zz": ["raw"], "caseA": ["kept"], "example.com/team": ["blue", "green"]}})
    );
    // The proxy's certificate without a user header is no credential.
    assert_unauthorized(&whoami(&server, &[], Some(&proxy)), "proxy without user");
}

crate::harness::on_both_backends!(
    forged_expired_and_foreign_audience_tokens_are_refused,
    tokens_of_deleted_or_replaced_objects_are_refused,
    pod_bound_tokens_carry_pod_and_node;
    backend: bad_client_certificates_are_refused_or_ignored,
    malformed_authorization_headers_are_refused,
    token_requests_follow_upstreams_limits,
    front_proxy_uid_headers_and_escaped_extra_keys
);
