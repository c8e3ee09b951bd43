//! Response compression (upstream's `APIResponseCompression`, in
//! `endpoints/handlers/responsewriters/{compression,writers}.go`): a
//! serialized response over 128 KiB is gzipped, at level 1, when the
//! request's first `Accept-Encoding` header lists the `gzip` token. Watch
//! streams are not compressed (their bodies have no known size), nor is
//! anything at or under the threshold.

use std::io::Write as _;

use axum::body::Body;
use axum::body::HttpBody as _;
use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use http::{header, HeaderMap, HeaderValue, Response};

/// Upstream's `defaultGzipThresholdBytes`: larger bodies are compressed.
pub const THRESHOLD_BYTES: u64 = 128 * 1024;

/// Upstream's `gzipContentEncodingLevel`: the least CPU for a ratio close
/// to the best.
const LEVEL: u32 = 1;

/// Whether the request accepts gzip, read as upstream's
/// `ContentEncodingSupported`: the first `Accept-Encoding` header, split at
/// commas, one token equal to `gzip` once trimmed (no quality values).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|token| token.trim() == "gzip"))
}

/// Gzips `resp` when compression is `enabled` (the feature gate), the
/// request accepts it and the body is a whole one over the threshold;
/// otherwise returns it unchanged. Large bodies are compressed off the
/// async workers.
pub async fn maybe_gzip(
    resp: Response<Body>,
    request_headers: &HeaderMap,
    enabled: bool,
) -> Response<Body> {
    let size = resp.body().size_hint().exact();
    let compress = enabled
        && size.is_some_and(|n| n > THRESHOLD_BYTES)
        && !resp.headers().contains_key(header::CONTENT_ENCODING)
        && accepts_gzip(request_headers);
    if !compress {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    // A body of exact size is already in memory: collecting it cannot wait.
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let gzipped = storage::offload::run(move || gzip(&bytes)).await;
    parts
        .headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(gzipped))
}

fn gzip(bytes: &[u8]) -> Bytes {
    let mut encoder = GzEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::new(LEVEL));
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    Bytes::from(encoder.finish().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn headers(accept: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in accept {
            map.append(
                header::ACCEPT_ENCODING,
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn only_a_plain_gzip_token_of_the_first_header_counts() {
        assert!(accepts_gzip(&headers(&["gzip"])));
        assert!(accepts_gzip(&headers(&["deflate, gzip "])));
        assert!(!accepts_gzip(&headers(&["gzip;q=1.0"])));
        assert!(!accepts_gzip(&headers(&["identity", "gzip"])));
        assert!(!accepts_gzip(&headers(&[])));
    }

    async fn body_of(resp: Response<Body>) -> Bytes {
        axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn bodies_over_the_threshold_are_gzipped() {
        let big = Bytes::from(vec![b'x'; THRESHOLD_BYTES as usize + 1]);
        let resp = maybe_gzip(
            Response::new(Body::from(big.clone())),
            &headers(&["gzip"]),
            true,
        )
        .await;
        assert_eq!(resp.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(resp.headers()[header::VARY], "Accept-Encoding");
        let zipped = body_of(resp).await;
        assert!(zipped.len() < big.len());
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&zipped[..])
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, big);
    }

    #[tokio::test]
    async fn small_bodies_unasked_or_gate_off_stay_plain() {
        let at = Bytes::from(vec![b'x'; THRESHOLD_BYTES as usize]);
        let over = Bytes::from(vec![b'x'; THRESHOLD_BYTES as usize + 1]);
        for (body, accept, enabled) in [
            (at, &["gzip"][..], true),
            (over.clone(), &[][..], true),
            (over.clone(), &["gzip"][..], false),
        ] {
            let resp = maybe_gzip(
                Response::new(Body::from(body.clone())),
                &headers(accept),
                enabled,
            )
            .await;
            assert!(!resp.headers().contains_key(header::CONTENT_ENCODING));
            assert_eq!(body_of(resp).await, body);
        }
    }
}
