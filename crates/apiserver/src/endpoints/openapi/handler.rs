//! `/openapi/v2`: the whole API as one Swagger 2.0 document, as upstream's
//! aggregated spec serves it (kube-openapi's `handler`). kubectl 1.27 and
//! 1.28 read it (protobuf) to learn that the server validates fields
//! itself, older client-go tools and `kubectl explain --output
//! plaintext-openapiv2` read its definitions.
//!
//! The server's own part is built once, on first request; what the
//! [`SpecSource`] adds (custom resources) joins it when that changes. Each build is encoded once as JSON and
//! as gnostic protobuf; the ETag is the SHA-512 of the JSON, shared by both
//! encodings, and `If-None-Match` / `If-Modified-Since` answer 304.
//! Clients that accept gzip get it (compressed once per encoding).

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use flate2::write::GzEncoder;
use flate2::Compression;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};

use super::{proto, shared, BuiltinParts, SpecSource};
use crate::server::GenericApiServer;

/// The media type of the protobuf encoding, and the older spelling
/// kubectl up to 1.28 asks for.
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const PROTOBUF_DEPRECATED_SUBTYPE: &str = "com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// One build of the document in both encodings.
struct Encoded {
    json: Bytes,
    proto: Bytes,
    etag: HeaderValue,
    modified: DateTime<Utc>,
    /// Gzip of `json` and `proto`, made when first asked for.
    gzipped: [OnceLock<Bytes>; 2],
}

impl Encoded {
    fn new(doc: &Value) -> Encoded {
        let json = Bytes::from(serde_json::to_vec(doc).unwrap_or_default());
        let hex: String = Sha512::digest(&json)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        Encoded {
            etag: HeaderValue::from_str(&format!("\"{hex}\""))
                .unwrap_or(HeaderValue::from_static("\"\"")),
            proto: Bytes::from(proto::document(doc)),
            json,
            // HTTP dates have whole seconds.
            modified: DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap_or_default(),
            gzipped: Default::default(),
        }
    }

    fn body(&self, protobuf: bool) -> &Bytes {
        if protobuf {
            &self.proto
        } else {
            &self.json
        }
    }

    /// The gzip of an encoding (blocking: compresses on first use).
    fn gzipped(&self, protobuf: bool) -> Bytes {
        self.gzipped[usize::from(protobuf)]
            .get_or_init(|| {
                let mut gz = GzEncoder::new(Vec::new(), Compression::default());
                match gz.write_all(self.body(protobuf)).and_then(|()| gz.finish()) {
                    Ok(bytes) => Bytes::from(bytes),
                    // Writing to memory does not fail; serve it plain if it did.
                    Err(_) => self.body(protobuf).clone(),
                }
            })
            .clone()
    }
}

/// Whether the client takes gzip (`Accept-Encoding` with a non-zero q).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let q = parts
                .find_map(|p| p.strip_prefix("q="))
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            (name.eq_ignore_ascii_case("gzip") || name == "*") && q > 0.0
        })
}

/// The built-in document (definitions and paths) and its encoding.
struct Builtin {
    definitions: Map<String, Value>,
    paths: Map<String, Value>,
    encoded: Arc<Encoded>,
}

struct Spec<S: SpecSource> {
    /// The document's `info`.
    info: Value,
    parts: BuiltinParts,
    source: Arc<S>,
    builtin: OnceLock<Builtin>,
    /// The last build with the source's additions, and the state it is of.
    custom: Mutex<Option<(S::State, Arc<Encoded>)>>,
}

/// The Swagger 2.0 document of `definitions` and `paths`, parameters
/// shared (kube-openapi's builder); security as upstream's default
/// OpenAPI config (bearer tokens).
pub fn document(
    info: &Value,
    definitions: Map<String, Value>,
    mut paths: Map<String, Value>,
) -> Value {
    let parameters = shared::deduplicate(&mut paths);
    json!({
        "swagger": "2.0",
        "info": info,
        "paths": paths,
        "definitions": definitions,
        "parameters": parameters,
        "securityDefinitions": {"BearerToken": {
            "description": "Bearer Token authentication", "in": "header",
            "name": "authorization", "type": "apiKey"}},
        "security": [{"BearerToken": []}],
    })
}

impl<S: SpecSource> Spec<S> {
    fn builtin(&self) -> &Builtin {
        self.builtin.get_or_init(|| {
            let (definitions, paths) = (self.parts)();
            let doc = document(&self.info, definitions.clone(), paths.clone());
            let encoded = Arc::new(Encoded::new(&doc));
            Builtin {
                definitions,
                paths,
                encoded,
            }
        })
    }

    /// The current document (blocking: may build it).
    fn current(&self) -> Arc<Encoded> {
        let state = self.source.state();
        let builtin = self.builtin();
        let Ok(mut custom) = self.custom.lock() else {
            return builtin.encoded.clone();
        };
        if let Some((built_for, encoded)) = custom.as_ref() {
            if S::unchanged(built_for, &state) {
                return encoded.clone();
            }
        }
        let (mut definitions, mut paths) = (builtin.definitions.clone(), builtin.paths.clone());
        S::add_v2(&state, &mut definitions, &mut paths);
        let encoded = if paths.len() == builtin.paths.len() {
            builtin.encoded.clone()
        } else {
            definitions.sort_keys();
            paths.sort_keys();
            Arc::new(Encoded::new(&document(&self.info, definitions, paths)))
        };
        *custom = Some((state, encoded.clone()));
        encoded
    }
}

/// The encoding an Accept header asks for: protobuf or JSON, `None` when
/// it accepts neither (kube-openapi's order: clauses by quality and
/// specificity, then JSON before protobuf).
fn negotiate(accept: Option<&str>) -> Option<bool> {
    let accept = accept.filter(|a| !a.trim().is_empty()).unwrap_or("*/*");
    let mut clauses: Vec<(f32, u8, &str, &str)> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';');
            let (ty, sub) = parts.next()?.trim().split_once('/')?;
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.parse().ok())
                .unwrap_or(1.0);
            let specificity = u8::from(ty != "*") + u8::from(sub != "*");
            Some((q, specificity, ty, sub))
        })
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    let offered = [
        ("json", false),
        (PROTOBUF_DEPRECATED_SUBTYPE, true),
        (&PROTOBUF["application/".len()..], true),
    ];
    clauses.iter().find_map(|(_, _, ty, sub)| {
        if *ty != "application" && *ty != "*" {
            return None;
        }
        offered
            .iter()
            .find(|(s, _)| sub == s || *sub == "*")
            .map(|(_, proto)| *proto)
    })
}

/// Whether the request's conditions say the client's copy is current.
fn not_modified(headers: &HeaderMap, encoded: &Encoded) -> bool {
    if let Some(tags) = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    {
        let ours = encoded.etag.to_str().unwrap_or_default();
        return tags
            .split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| t == "*" || t == ours);
    }
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| DateTime::parse_from_rfc2822(v).ok())
        .is_some_and(|since| encoded.modified <= since)
}

/// The response to a request for one encoding; `gzipped` is its gzip when
/// the client accepts that.
fn respond(
    method: &Method,
    headers: &HeaderMap,
    encoded: &Encoded,
    protobuf: bool,
    gzipped: Option<Bytes>,
) -> Response<Body> {
    let mut resp = Response::new(Body::empty());
    let h = resp.headers_mut();
    h.insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
    h.insert(header::ETAG, encoded.etag.clone());
    if not_modified(headers, encoded) {
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
        return resp;
    }
    let content_type = if protobuf {
        PROTOBUF
    } else {
        "application/json"
    };
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    let body = match gzipped {
        Some(gz) => {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            gz
        }
        None => encoded.body(protobuf).clone(),
    };
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    let modified = encoded
        .modified
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    if let Ok(v) = HeaderValue::from_str(&modified) {
        h.insert(header::LAST_MODIFIED, v);
    }
    if method != Method::HEAD {
        *resp.body_mut() = Body::from(body);
    }
    resp
}

async fn serve<S: SpecSource>(spec: Arc<Spec<S>>, req: Request<Body>) -> Response<Body> {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let Some(protobuf) = negotiate(accept) else {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::NOT_ACCEPTABLE;
        return resp;
    };
    let gzip = accepts_gzip(req.headers());
    // Building and compressing are CPU work: off the runtime.
    let built = tokio::task::spawn_blocking(move || {
        let encoded = spec.current();
        let gzipped = gzip.then(|| encoded.gzipped(protobuf));
        (encoded, gzipped)
    });
    let Ok((encoded, gzipped)) = built.await else {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        return resp;
    };
    respond(req.method(), req.headers(), &encoded, protobuf, gzipped)
}

/// Serves `/openapi/v2`: the document of the server's own `parts` (built
/// on first request) with what `source` adds, under `info`.
pub fn install_v2<S: SpecSource>(
    server: &mut GenericApiServer,
    info: Value,
    parts: BuiltinParts,
    source: Arc<S>,
) {
    let spec = Arc::new(Spec {
        info,
        parts,
        source,
        builtin: OnceLock::new(),
        custom: Mutex::new(None),
    });
    server.handle_path(
        "/openapi/v2",
        Arc::new(move |req| Box::pin(serve(spec.clone(), req))),
    );
}

#[cfg(test)]
mod tests;
