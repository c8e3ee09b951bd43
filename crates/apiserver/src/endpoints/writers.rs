//! Writing a serialized answer (upstream's
//! `endpoints/handlers/responsewriters/writers.go`, `SerializeObject`): the
//! `SerializeObject` span, a child of the REST handler's, around the
//! response's compression and writing, with upstream's attributes
//! (`audit-id`, `method`, `url`, `protocol`, `mediaType`, `encoder`) and
//! events (`About to start writing response` with the `writer` and the
//! body's `size`, then `Write call succeeded` with the bytes written).
//! Streamed bodies (watches) are not serialized objects and have no span.

use axum::body::{Body, HttpBody as _};
use component_base::tracing::{self as tracing_ctx, Attribute};
use http::request::Parts;
use http::{header, Response, Version};

use super::compression;
use super::negotiation::{Encoding, Negotiated, Shape};
use super::trace_util;

/// The group version of the tables and partial metadata upstream encodes.
const META_V1: &str = "meta.k8s.io/v1";

/// Compresses `resp` as [`compression::maybe_gzip`] does, in a
/// `SerializeObject` span for an answer of `group_version` (the resource's)
/// negotiated as `neg`.
pub async fn serialize_object(
    resp: Response<Body>,
    parts: &Parts,
    neg: &Negotiated,
    group_version: &str,
    compress: bool,
) -> Response<Body> {
    if resp.body().size_hint().exact().is_none() {
        return compression::maybe_gzip(resp, &parts.headers, compress).await;
    }
    let media_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let attributes = || {
        let group_version = match neg.shape {
            Shape::Object => group_version,
            Shape::Table(_) | Shape::PartialMetadata => META_V1,
        };
        vec![
            Attribute::new("audit-id", tracing_ctx::audit_id()),
            Attribute::new("method", parts.method.to_string()),
            Attribute::new("url", parts.uri.path().to_owned()),
            Attribute::new("protocol", trace_util::protocol(parts.version)),
            Attribute::new("mediaType", media_type),
            Attribute::new("encoder", encoder_identifier(neg, group_version)),
        ]
    };
    let writing = async {
        let resp = compression::maybe_gzip(resp, &parts.headers, compress).await;
        if tracing_ctx::recording() {
            let size = i64::try_from(resp.body().size_hint().lower()).unwrap_or(i64::MAX);
            let writer = writer_type(&resp, parts.version);
            tracing_ctx::add_event(
                "About to start writing response",
                vec![
                    Attribute::new("writer", writer),
                    Attribute::new("size", size),
                ],
            );
            // The body is whole in memory: handing it over is the write.
            tracing_ctx::add_event("Write call succeeded", vec![Attribute::new("size", size)]);
        }
        resp
    };
    tracing_ctx::in_span("SerializeObject", attributes, writing).await
}

/// Go's `%T` of what upstream's `deferredResponseWriter` writes into: the
/// gzip writer, else the response writer as the timeout and audit filters
/// wrap it (`responsewriter.WrapForHTTP1Or2`; a value for HTTP/2, a
/// pointer with `Hijacker` for HTTP/1.x).
fn writer_type(resp: &Response<Body>, version: Version) -> &'static str {
    if resp.headers().contains_key(header::CONTENT_ENCODING) {
        "*gzip.Writer"
    } else if version == Version::HTTP_2 {
        "responsewriter.outerWithCloseNotifyAndFlush"
    } else {
        "*responsewriter.outerWithCloseNotifyFlushAndHijack"
    }
}

/// Upstream's `encoder.Identifier()` of the versioning codec that encodes
/// the answer: Go's JSON of `{"encodeGV", "encoder", "name":"versioning"}`
/// around the serializer's own identifier.
fn encoder_identifier(neg: &Negotiated, group_version: &str) -> String {
    let serializer = match neg.encoding {
        Encoding::Protobuf => "protobuf".to_owned(),
        Encoding::Cbor => "cbor".to_owned(),
        Encoding::Json | Encoding::Yaml => format!(
            r#"{{"name":"json","pretty":"{}","strict":"false","yaml":"{}"}}"#,
            neg.pretty && neg.encoding == Encoding::Json,
            neg.encoding == Encoding::Yaml
        ),
    };
    let quoted = serializer.replace('"', "\\\"");
    format!(r#"{{"encodeGV":"{group_version}","encoder":"{quoted}","name":"versioning"}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::rest::table::IncludeObject;

    fn negotiated(encoding: Encoding, pretty: bool, shape: Shape) -> Negotiated {
        Negotiated {
            encoding,
            shape,
            pretty,
        }
    }

    #[test]
    fn encoders_are_named_as_upstreams_codecs() {
        assert_eq!(
            encoder_identifier(&negotiated(Encoding::Json, false, Shape::Object), "v1"),
            r#"{"encodeGV":"v1","encoder":"{\"name\":\"json\",\"pretty\":\"false\",\"strict\":\"false\",\"yaml\":\"false\"}","name":"versioning"}"#
        );
        assert_eq!(
            encoder_identifier(
                &negotiated(Encoding::Protobuf, false, Shape::Object),
                "apps/v1"
            ),
            r#"{"encodeGV":"apps/v1","encoder":"protobuf","name":"versioning"}"#
        );
        let yaml = encoder_identifier(
            &negotiated(Encoding::Yaml, false, Shape::Table(IncludeObject::Metadata)),
            META_V1,
        );
        assert!(yaml.contains(r#"\"yaml\":\"true\""#), "{yaml}");
        assert!(
            yaml.starts_with(r#"{"encodeGV":"meta.k8s.io/v1""#),
            "{yaml}"
        );
    }
}
