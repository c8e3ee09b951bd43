//! OpenID Connect: a provider in the test (discovery document and JWKS
//! over HTTPS) and ID tokens signed with its key; the server finds the
//! keys through `--oidc-issuer-url` and maps the claims to the user.

use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Value};

use super::{https_server, json_of, stderr, with_token};
use crate::harness::Backend;

fn oidc_id_tokens_authenticate_with_mapped_claims(backend: Backend) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
    let point = key.public_key_raw().to_vec();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig", "alg": "ES256",
        "x": b64(&point[1..33]), "y": b64(&point[33..65])});
    let issuer = Arc::new(std::sync::OnceLock::<String>::new());
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
    let issuer_url = format!("https://127.0.0.1:{port}");
    issuer.set(issuer_url.clone()).expect("issuer once");
    let files = tempfile::tempdir().expect("temp dir");
    let ca_path = files.path().join("oidc-ca.crt");
    std::fs::write(&ca_path, ca).expect("ca");
    let flags = [
        format!("--oidc-issuer-url={issuer_url}"),
        "--oidc-client-id=kubernetes".to_owned(),
        format!("--oidc-ca-file={}", ca_path.display()),
        "--oidc-groups-claim=groups".to_owned(),
        "--oidc-groups-prefix=oidc:".to_owned(),
        "--oidc-signing-algs=ES256".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = backend.start_with(&flags);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let sign = |claims: Value| {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some("k1".into());
        let signing = jsonwebtoken::EncodingKey::from_ec_der(&key.serialize_der());
        jsonwebtoken::encode(&header, &claims, &signing).expect("signed")
    };
    let token = sign(
        json!({"iss": issuer_url, "aud": "kubernetes", "sub": "alice",
        "groups": ["dev"], "iat": now, "exp": now + 600}),
    );
    let whoami = json_of(&with_token(
        &server,
        Some(&token),
        &["auth", "whoami", "-o", "json"],
    ));
    assert_eq!(
        whoami["status"]["userInfo"],
        json!({"username": format!("{issuer_url}#alice"), "groups": ["oidc:dev", "system:authenticated"]})
    );
    // Another audience, or an expired token, is refused.
    for claims in [
        json!({"iss": issuer_url, "aud": "other", "sub": "alice", "exp": now + 600}),
        json!({"iss": issuer_url, "aud": "kubernetes", "sub": "alice", "exp": now - 600}),
    ] {
        let out = with_token(&server, Some(&sign(claims)), &["auth", "whoami"]);
        assert!(stderr(&out).contains("Unauthorized"), "{}", stderr(&out));
    }
}

crate::harness::on_both_backends!(
    backend: oidc_id_tokens_authenticate_with_mapped_claims
);
