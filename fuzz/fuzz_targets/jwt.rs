//! JWTs as the service-account and OIDC authenticators read them (in
//! `kube-apiserver::authenticator::serviceaccount` and
//! `apiserver::plugin::pkg::authenticator::token::oidc`, which use the
//! `jsonwebtoken` crate): the header is decoded to pick a key, the
//! unverified payload is read for its issuer, then the token is verified.
//! Any bearer token yields claims or an error, never a panic. The
//! authenticators live in big crates, so this target makes the same
//! library calls (with a fixed key, and once
//! with signature checks off so the claims decoding is reached) rather
//! than linking it.
#![no_main]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else {
        return;
    };
    let _ = jsonwebtoken::decode_header(token);
    // The unverified issuer, read as the service-account authenticator does.
    let mut parts = token.split('.');
    if let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    {
        if let Ok(bytes) = URL_SAFE_NO_PAD.decode(payload) {
            let _ = serde_json::from_slice::<Value>(&bytes);
        }
    }
    let key = DecodingKey::from_secret(b"fuzz");
    let mut validation = Validation::new(Algorithm::HS256);
    validation.validate_aud = false;
    let _ = jsonwebtoken::decode::<Value>(token, &key, &validation);
    validation.insecure_disable_signature_validation();
    validation.required_spec_claims.clear();
    let _ = jsonwebtoken::decode::<Value>(token, &key, &validation);
});
