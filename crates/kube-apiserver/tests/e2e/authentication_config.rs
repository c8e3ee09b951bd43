//! `--authentication-config` end to end: a JWT authenticator of a provider
//! in the test (discovery and JWKS over HTTPS) with a CEL username mapping
//! and a claim validation rule, anonymous requests limited to one path,
//! and the startup errors of a bad file and of `--oidc-*` flags beside it.

use std::process::Output;
use std::sync::{Arc, OnceLock};

use base64::Engine;
use serde_json::{json, Value};

use crate::authentication::https_server;
use crate::harness::{startup_error, Backend, TestServer};
use crate::support::kubectl::stderr;

/// Runs kubectl without client certificate, with a bearer token if given.
fn as_client(server: &TestServer, token: Option<&str>, args: &[&str]) -> Output {
    let ca = server.dir.path().join("pki").join("ca.crt");
    let mut flags = vec![
        "--kubeconfig=/dev/null".to_owned(),
        format!("--server=https://127.0.0.1:{}", server.port),
        format!("--certificate-authority={}", ca.display()),
    ];
    flags.extend(token.map(|t| format!("--token={t}")));
    let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
    all.extend_from_slice(args);
    server.kubectl(&all)
}

/// A provider serving its discovery document and one ES256 key; returns
/// its issuer URL, CA (PEM) and a signer of tokens.
fn provider() -> (String, String, impl Fn(Value) -> String) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
    let point = key.public_key_raw().to_vec();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
        "x": b64(&point[1..33]), "y": b64(&point[33..65])});
    let issuer = Arc::new(OnceLock::<String>::new());
    let seen = issuer.clone();
    let (port, ca, _) = https_server::start(Arc::new(move |path: &str, _: &[u8]| -> Value {
        let issuer = seen.get().cloned().unwrap_or_default();
        match path {
            "/.well-known/openid-configuration" => {
                json!({"issuer": issuer, "jwks_uri": format!("{issuer}/keys")})
            }
            _ => json!({"keys": [jwk]}),
        }
    }));
    let url = format!("https://127.0.0.1:{port}");
    issuer.set(url.clone()).expect("issuer once");
    let sign = move |claims: Value| {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some("k1".into());
        let signing = jsonwebtoken::EncodingKey::from_ec_der(&key.serialize_der());
        jsonwebtoken::encode(&header, &claims, &signing).expect("signed")
    };
    (url, ca, sign)
}

/// The config file: one JWT authenticator and anonymous on /livez only.
fn config(issuer: &str, ca: &str) -> String {
    let ca: String = ca.lines().map(|l| format!("      {l}\n")).collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: {issuer}
    audiences: [kubernetes]
    certificateAuthority: |
{ca}  claimValidationRules:
  - expression: claims.sub != 'mallory'
    message: mallory is not welcome
  claimMappings:
    username:
      expression: \"'acme:' + claims.sub\"
    groups:
      claim: groups
      prefix: 'acme:'
anonymous:
  enabled: true
  conditions:
  - path: /livez
"
    )
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

fn jwt_authenticators_map_claims_with_cel_and_enforce_rules(backend: Backend) {
    let (issuer, ca, sign) = provider();
    let files = tempfile::tempdir().expect("temp dir");
    let path = files.path().join("authn.yaml");
    std::fs::write(&path, config(&issuer, &ca)).expect("config");
    let flag = format!("--authentication-config={}", path.display());
    let server = backend.start_with(&[&flag]);

    let now = now();
    let token = sign(json!({"iss": issuer, "aud": "kubernetes", "sub": "alice",
        "groups": ["dev"], "exp": now + 600}));
    let out = as_client(&server, Some(&token), &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let who: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        who["status"]["userInfo"],
        json!({"username": "acme:alice", "groups": ["acme:dev", "system:authenticated"]})
    );
    // The claim validation rule refuses mallory; another audience is refused.
    for claims in [
        json!({"iss": issuer, "aud": "kubernetes", "sub": "mallory", "exp": now + 600}),
        json!({"iss": issuer, "aud": "other", "sub": "alice", "exp": now + 600}),
    ] {
        let out = as_client(&server, Some(&sign(claims)), &["auth", "whoami"]);
        assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));
    }
    // Anonymous requests reach /livez only. (Basic credentials, which no
    // authenticator reads, keep kubectl from prompting for a user name.)
    let anonymous = ["--username=nobody", "--password=x", "get", "--raw"];
    let out = as_client(&server, None, &[&anonymous[..], &["/livez"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let out = as_client(&server, None, &[&anonymous[..], &["/version"]].concat());
    assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));
}

#[test]
fn bad_configs_and_oidc_flags_stop_startup() {
    let files = tempfile::tempdir().expect("temp dir");
    let path = files.path().join("authn.yaml");
    std::fs::write(
        &path,
        "apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: http://idp.example
    audiences: [kubernetes]
  claimMappings:
    username:
      claim: sub
      prefix: ''
",
    )
    .expect("config");
    let flag = format!("--authentication-config={}", path.display());
    let err = startup_error(&[&flag]);
    assert!(
        err.contains("invalid authentication configuration: jwt[0].issuer.url: Invalid value: \"http://idp.example\": URL scheme must be https"),
        "{err}"
    );
    let err = startup_error(&[
        &flag,
        "--oidc-issuer-url=https://idp.example",
        "--oidc-client-id=k",
    ]);
    assert!(
        err.contains("authentication-config file and oidc-* flags are mutually exclusive"),
        "{err}"
    );
}

crate::harness::on_both_backends!(
    backend: jwt_authenticators_map_claims_with_cel_and_enforce_rules
);
