//! Content negotiation (upstream's `runtime/serializer` negotiation): which
//! encoding a response uses (from `Accept`) and how a request body is read
//! (from `Content-Type`). Every handler goes through here, so no handler
//! assumes JSON.
//!
//! CBOR (`application/cbor`) is offered, for every resource, only while the
//! `CBORServingAndStorage` feature gate is on: the gate is process-wide, as
//! upstream's is, and set once at startup with [`set_cbor_enabled`].

use std::sync::atomic::{AtomicBool, Ordering};

use apimachinery::status::ApiError;
use http::HeaderMap;

use crate::registry::rest::table::IncludeObject;

/// The wire encodings this server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    Json,
    Yaml,
    /// `application/vnd.kubernetes.protobuf` (built-in types only).
    Protobuf,
    /// `application/cbor` (with the `CBORServingAndStorage` gate).
    Cbor,
}

impl Encoding {
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Yaml => "application/yaml",
            Encoding::Protobuf => protobuf_codec::CONTENT_TYPE,
            Encoding::Cbor => kube_cbor::CONTENT_TYPE,
        }
    }
}

static CBOR_ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns CBOR serving on or off (the `CBORServingAndStorage` gate).
pub fn set_cbor_enabled(enabled: bool) {
    CBOR_ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether the `CBORServingAndStorage` gate is on.
pub fn cbor_enabled() -> bool {
    CBOR_ENABLED.load(Ordering::Relaxed)
}

/// The encodings a resource can be served in beside JSON and YAML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Offered {
    protobuf: bool,
    cbor: bool,
}

impl Offered {
    fn for_resource(protobuf_ok: bool) -> Self {
        Offered {
            protobuf: protobuf_ok,
            cbor: cbor_enabled(),
        }
    }

    /// The media types offered, in upstream's order, for 406 and 415
    /// messages.
    fn media_types(self) -> Vec<&'static str> {
        let mut types = vec!["application/json", "application/yaml"];
        if self.protobuf {
            types.push(protobuf_codec::CONTENT_TYPE);
        }
        if self.cbor {
            types.push(kube_cbor::CONTENT_TYPE);
        }
        types
    }
}

/// The shape of a response body the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The object (or list) itself.
    Object,
    /// A `meta.k8s.io/v1` Table (server-side printing).
    Table(IncludeObject),
    /// `PartialObjectMetadata` / `PartialObjectMetadataList`.
    PartialMetadata,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    pub encoding: Encoding,
    pub shape: Shape,
    pub pretty: bool,
}

struct MediaRange<'a> {
    essence: &'a str,
    params: Vec<(&'a str, &'a str)>,
    quality: f32,
}

fn parse_accept(header: &str) -> Vec<MediaRange<'_>> {
    let mut ranges: Vec<MediaRange> = header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';').map(str::trim);
            let essence = pieces.next().filter(|e| !e.is_empty())?;
            let mut params = Vec::new();
            let mut quality = 1.0;
            for p in pieces {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                let (k, v) = (k.trim(), v.trim().trim_matches('"'));
                if k == "q" {
                    quality = v.parse().unwrap_or(0.0);
                } else {
                    params.push((k, v));
                }
            }
            Some(MediaRange {
                essence,
                params,
                quality,
            })
        })
        .collect();
    // Stable: equal qualities keep the client's order.
    ranges.sort_by(|a, b| b.quality.total_cmp(&a.quality));
    ranges.retain(|r| r.quality > 0.0);
    ranges
}

fn encoding_for(essence: &str, offered: Offered) -> Option<Encoding> {
    match essence.to_ascii_lowercase().as_str() {
        "application/json" | "application/*" | "*/*" => Some(Encoding::Json),
        "application/yaml" => Some(Encoding::Yaml),
        "application/vnd.kubernetes.protobuf" if offered.protobuf => Some(Encoding::Protobuf),
        "application/cbor" if offered.cbor => Some(Encoding::Cbor),
        _ => None,
    }
}

/// Picks the response format from the Accept header. `table_ok` says whether
/// the request may be answered as a Table (get and list); `protobuf_ok`
/// whether the resource has a protobuf encoding (built-in types).
pub fn negotiate(
    headers: &HeaderMap,
    pretty_param: Option<&str>,
    table_ok: bool,
    protobuf_ok: bool,
) -> Result<Negotiated, ApiError> {
    negotiate_offered(
        headers,
        pretty_param,
        table_ok,
        Offered::for_resource(protobuf_ok),
    )
}

fn negotiate_offered(
    headers: &HeaderMap,
    pretty_param: Option<&str>,
    table_ok: bool,
    offered: Offered,
) -> Result<Negotiated, ApiError> {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim();
    let pretty = wants_pretty(headers, pretty_param);
    if accept.is_empty() {
        return Ok(Negotiated {
            encoding: Encoding::Json,
            shape: Shape::Object,
            pretty,
        });
    }
    for range in parse_accept(accept) {
        let Some(encoding) = encoding_for(range.essence, offered) else {
            continue;
        };
        if let Some(shape) = shape_for(&range.params, table_ok) {
            return Ok(Negotiated {
                encoding,
                shape,
                pretty,
            });
        }
    }
    Err(ApiError::not_acceptable(&offered.media_types()))
}

/// The `as`/`g`/`v` media type parameters select a transformed shape; an
/// unknown one makes the range unacceptable.
fn shape_for(params: &[(&str, &str)], table_ok: bool) -> Option<Shape> {
    let get = |key: &str| params.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let Some(as_kind) = get("as") else {
        return Some(Shape::Object);
    };
    if get("g") != Some("meta.k8s.io") || !matches!(get("v"), Some("v1") | Some("v1beta1")) {
        return None;
    }
    match as_kind {
        "Table" if table_ok => Some(Shape::Table(IncludeObject::Metadata)),
        "PartialObjectMetadata" | "PartialObjectMetadataList" => Some(Shape::PartialMetadata),
        _ => None,
    }
}

/// Upstream pretty-prints for `?pretty=true` and for browsers and curl.
fn wants_pretty(headers: &HeaderMap, pretty_param: Option<&str>) -> bool {
    if let Some(p) = pretty_param {
        return matches!(p, "true" | "1");
    }
    let agent = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    ["curl", "Wget", "Mozilla/5.0"]
        .iter()
        .any(|p| agent.starts_with(p))
}

/// The encoding of a request body, from Content-Type.
pub fn body_encoding(headers: &HeaderMap) -> Result<Encoding, ApiError> {
    body_encoding_for(headers, true)
}

/// The encoding of a request body for a resource that does (or, like custom
/// resources, does not) take protobuf.
pub fn body_encoding_for(headers: &HeaderMap, protobuf_ok: bool) -> Result<Encoding, ApiError> {
    body_encoding_offered(headers, Offered::for_resource(protobuf_ok))
}

fn body_encoding_offered(headers: &HeaderMap, offered: Offered) -> Result<Encoding, ApiError> {
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    match essence.to_ascii_lowercase().as_str() {
        "" | "application/json" => Ok(Encoding::Json),
        "application/yaml" => Ok(Encoding::Yaml),
        "application/vnd.kubernetes.protobuf" if offered.protobuf => Ok(Encoding::Protobuf),
        "application/cbor" if offered.cbor => Ok(Encoding::Cbor),
        _ => Err(ApiError::unsupported_media_type(&offered.media_types())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT, value.parse().expect("header"));
        h
    }

    #[test]
    fn kinds_without_protobuf_refuse_it() {
        let err = negotiate(
            &accept("application/vnd.kubernetes.protobuf"),
            None,
            true,
            false,
        )
        .expect_err("not acceptable");
        assert_eq!(err.code, 406);
        assert!(!err.message.contains("protobuf"), "{}", err.message);
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            "application/vnd.kubernetes.protobuf"
                .parse()
                .expect("header"),
        );
        assert_eq!(body_encoding_for(&h, false).map_err(|e| e.code), Err(415));
        assert!(body_encoding_for(&h, true).is_ok());
    }

    #[test]
    fn kubectl_table_request_is_a_table() {
        let h = accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json");
        let n = negotiate(&h, None, true, true).expect("negotiated");
        assert_eq!(n.shape, Shape::Table(IncludeObject::Metadata));
        let n = negotiate(&h, None, false, true).expect("negotiated");
        assert_eq!(n.shape, Shape::Object);
    }

    #[test]
    fn quality_orders_and_unknown_types_fall_back() {
        let h = accept("application/cbor, application/yaml;q=0.5, application/json;q=0.9");
        let n = negotiate(&h, None, false, true).expect("negotiated");
        assert_eq!(n.encoding, Encoding::Json);
    }

    #[test]
    fn protobuf_only_where_the_type_has_it() {
        let h = accept("application/vnd.kubernetes.protobuf, application/json");
        assert_eq!(
            negotiate(&h, None, false, true).map(|n| n.encoding),
            Ok(Encoding::Protobuf)
        );
        assert_eq!(
            negotiate(&h, None, false, false).map(|n| n.encoding),
            Ok(Encoding::Json)
        );
    }

    #[test]
    fn nothing_acceptable_is_406() {
        let err = negotiate(&accept("text/html"), None, false, true).expect_err("406");
        assert_eq!(err.code, 406);
    }

    const WITH_CBOR: Offered = Offered {
        protobuf: true,
        cbor: true,
    };
    const WITHOUT_CBOR: Offered = Offered {
        protobuf: true,
        cbor: false,
    };

    #[test]
    fn cbor_is_offered_only_with_the_gate() {
        let h = accept("application/cbor");
        let custom = Offered {
            protobuf: false,
            ..WITH_CBOR
        };
        for offered in [WITH_CBOR, custom] {
            let n = negotiate_offered(&h, None, true, offered).expect("negotiated");
            assert_eq!(n.encoding, Encoding::Cbor);
        }
        let err = negotiate_offered(&h, None, true, WITHOUT_CBOR).expect_err("406");
        assert_eq!(err.code, 406);
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf"
        );
        let err = negotiate_offered(&accept("text/html"), None, true, custom).expect_err("406");
        assert_eq!(
            err.message,
            "only the following media types are accepted: application/json, \
             application/yaml, application/cbor"
        );
        // A Table may be asked for in CBOR too.
        let h = accept("application/cbor;as=Table;v=v1;g=meta.k8s.io");
        let n = negotiate_offered(&h, None, true, WITH_CBOR).expect("negotiated");
        assert_eq!(
            (n.encoding, n.shape),
            (Encoding::Cbor, Shape::Table(IncludeObject::Metadata))
        );
    }

    #[test]
    fn cbor_bodies_only_with_the_gate() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            "application/cbor".parse().expect("header"),
        );
        assert_eq!(body_encoding_offered(&h, WITH_CBOR), Ok(Encoding::Cbor));
        let err = body_encoding_offered(&h, WITHOUT_CBOR).expect_err("415");
        assert_eq!(err.code, 415);
        assert_eq!(
            err.message,
            "the body of the request was in an unknown format - accepted media types include: \
             application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn unsupported_body_is_415() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            "text/plain".parse().expect("header"),
        );
        assert_eq!(body_encoding(&h).expect_err("415").code, 415);
    }
}
