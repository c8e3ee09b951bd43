//! Service-account issuer discovery (upstream's OpenID metadata server):
//! `/.well-known/openid-configuration` names the issuer and where its keys
//! are, and `/openid/v1/jwks` publishes the keys that verify
//! service-account tokens, so relying parties outside the cluster can check
//! them. Both are built once at startup and served from memory.

use std::collections::BTreeSet;
use std::sync::Arc;

use apiserver::server::{GenericApiServer, PathHandler};
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use serde_json::json;

use super::keys::PublicKey;

pub const CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
pub const JWKS_PATH: &str = "/openid/v1/jwks";

/// The discovery document.
pub fn configuration(issuer: &str, jwks_uri: &str, keys: &[PublicKey]) -> serde_json::Value {
    let algs: BTreeSet<String> = keys.iter().map(|k| format!("{:?}", k.alg)).collect();
    json!({
        "issuer": issuer,
        "jwks_uri": jwks_uri,
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": algs,
    })
}

/// The key set.
pub fn jwks(keys: &[PublicKey]) -> serde_json::Value {
    let keys: Vec<&serde_json::Value> = keys.iter().map(|k| &k.jwk).collect();
    json!({ "keys": keys })
}

fn handler(body: Bytes, content_type: &'static str) -> PathHandler {
    Arc::new(move |_req| {
        let body = body.clone();
        Box::pin(async move {
            let mut resp = Response::new(axum::body::Body::from(body));
            *resp.status_mut() = StatusCode::OK;
            let headers = resp.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            // Keys change rarely; upstream lets clients cache for an hour.
            headers.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            );
            resp
        })
    })
}

/// Serves both documents on `server`.
pub fn install(server: &mut GenericApiServer, issuer: &str, jwks_uri: &str, keys: &[PublicKey]) {
    let config = Bytes::from(configuration(issuer, jwks_uri, keys).to_string());
    let set = Bytes::from(jwks(keys).to_string());
    // Go-restful web services upstream, so `path/` answers too.
    server.handle_restful_path(CONFIGURATION_PATH, handler(config, "application/json"));
    server.handle_restful_path(JWKS_PATH, handler(set, "application/jwk-set+json"));
}
