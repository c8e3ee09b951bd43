//! Cross-origin resource sharing for `--cors-allowed-origins` (upstream's
//! `WithCORS`): a request whose `Origin` matches one of the patterns gets
//! the CORS headers, and its preflight `OPTIONS` is answered 204 here. Any
//! other request passes through untouched (no headers, no refusal), and no
//! patterns means the filter does nothing.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ORIGIN,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use regex::Regex;

use super::handler::Next;

const ALLOW_METHODS: &str = "POST, GET, OPTIONS, PUT, DELETE, PATCH";
const ALLOW_HEADERS: &str = "Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, \
                             Authorization, X-Requested-With, If-Modified-Since";
const EXPOSE_HEADERS: &str = "Date";

/// An allowed-origin pattern that is not a valid regular expression; the
/// message is upstream's startup failure.
#[derive(Debug, thiserror::Error)]
#[error("Invalid CORS allowed origin, --cors-allowed-origins flag was set to {origins} - {source}")]
pub struct CorsError {
    origins: String,
    source: regex::Error,
}

/// The compiled `--cors-allowed-origins` patterns.
#[derive(Debug, Default)]
pub struct AllowedOrigins(Vec<Regex>);

impl AllowedOrigins {
    pub fn compile(patterns: &[String]) -> Result<Self, CorsError> {
        patterns
            .iter()
            .map(|p| Regex::new(p))
            .collect::<Result<Vec<_>, _>>()
            .map(AllowedOrigins)
            .map_err(|source| CorsError {
                origins: patterns.join(","),
                source,
            })
    }

    /// Patterns are unanchored searches, as Go's `MatchString`; validation
    /// makes the user pin them to the host.
    fn allows(&self, origin: &str) -> bool {
        self.0.iter().any(|re| re.is_match(origin))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

pub async fn filter(
    State(origins): State<Arc<AllowedOrigins>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    if origins.is_empty() {
        return next.run(req).await;
    }
    let allowed = req
        .headers()
        .get(ORIGIN)
        .filter(|o| !o.is_empty())
        .filter(|o| o.to_str().is_ok_and(|o| origins.allows(o)))
        .cloned();
    let Some(origin) = allowed else {
        return next.run(req).await;
    };
    if req.method() == Method::OPTIONS {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::NO_CONTENT;
        set_cors_headers(resp.headers_mut(), origin);
        return resp;
    }
    let mut resp = next.run(req).await;
    set_cors_headers(resp.headers_mut(), origin);
    resp
}

/// Upstream sets these before the handler runs, so a value the handler
/// chose itself wins; `entry` keeps it.
fn set_cors_headers(headers: &mut HeaderMap, origin: HeaderValue) {
    let fixed: [(HeaderName, &'static str); 4] = [
        (ACCESS_CONTROL_ALLOW_METHODS, ALLOW_METHODS),
        (ACCESS_CONTROL_ALLOW_HEADERS, ALLOW_HEADERS),
        (ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSE_HEADERS),
        (ACCESS_CONTROL_ALLOW_CREDENTIALS, "true"),
    ];
    headers.entry(ACCESS_CONTROL_ALLOW_ORIGIN).or_insert(origin);
    for (name, value) in fixed {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    }
}

#[cfg(test)]
mod tests {
    use axum::routing::get;
    use axum::Router;
    use tower::util::BoxCloneSyncService;
    use tower::ServiceExt;

    use super::*;

    fn router(patterns: &[&str]) -> Next {
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        let origins = AllowedOrigins::compile(&patterns).expect("valid patterns");
        Next::new(BoxCloneSyncService::new(Router::new().route(
            "/api",
            get(|| async { "ok" }).post(|| async { "created" }),
        )))
        .layer(Arc::new(origins), filter)
    }

    async fn send(router: Next, method: Method, origin: Option<&str>) -> Response<Body> {
        let mut req = Request::builder().method(method).uri("/api");
        if let Some(origin) = origin {
            req = req.header(ORIGIN, origin);
        }
        router
            .oneshot(req.body(Body::empty()).expect("request"))
            .await
            .expect("infallible")
    }

    fn header(resp: &Response<Body>, name: HeaderName) -> Option<&str> {
        resp.headers().get(name).and_then(|v| v.to_str().ok())
    }

    const PATTERNS: &[&str] = &["//example\\.com(:|$)", "^https://a\\.test$"];

    #[tokio::test]
    async fn allowed_origin_is_echoed_with_the_cors_headers() {
        let resp = send(
            router(PATTERNS),
            Method::GET,
            Some("https://example.com:8443"),
        )
        .await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            header(&resp, ACCESS_CONTROL_ALLOW_ORIGIN),
            Some("https://example.com:8443")
        );
        assert_eq!(
            header(&resp, ACCESS_CONTROL_ALLOW_METHODS),
            Some("POST, GET, OPTIONS, PUT, DELETE, PATCH")
        );
        assert_eq!(
            header(&resp, ACCESS_CONTROL_ALLOW_HEADERS),
            Some(
                "Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, Authorization, \
                 X-Requested-With, If-Modified-Since"
            )
        );
        assert_eq!(header(&resp, ACCESS_CONTROL_EXPOSE_HEADERS), Some("Date"));
        assert_eq!(
            header(&resp, ACCESS_CONTROL_ALLOW_CREDENTIALS),
            Some("true")
        );
        let body = axum::body::to_bytes(resp.into_body(), 1024)
            .await
            .expect("body");
        assert_eq!(&body[..], b"ok");
    }

    #[tokio::test]
    async fn other_origins_and_no_origin_pass_through_without_headers() {
        for origin in [
            Some("https://example.com.evil.test"),
            Some("http://b.test"),
            None,
        ] {
            let resp = send(router(PATTERNS), Method::GET, origin).await;
            assert_eq!(resp.status(), StatusCode::OK, "{origin:?}");
            assert!(
                resp.headers()
                    .keys()
                    .all(|k| !k.as_str().starts_with("access-control-")),
                "{origin:?}: {:?}",
                resp.headers()
            );
        }
    }

    #[tokio::test]
    async fn preflight_from_an_allowed_origin_is_answered_here() {
        let resp = send(router(PATTERNS), Method::OPTIONS, Some("https://a.test")).await;
        assert_eq!(resp.status(), StatusCode::NO_CONTENT);
        assert_eq!(
            header(&resp, ACCESS_CONTROL_ALLOW_ORIGIN),
            Some("https://a.test")
        );
        // A preflight from elsewhere reaches the handler (405: no OPTIONS route).
        let resp = send(router(PATTERNS), Method::OPTIONS, Some("https://c.test")).await;
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(header(&resp, ACCESS_CONTROL_ALLOW_ORIGIN), None);
    }

    #[tokio::test]
    async fn no_patterns_installs_nothing() {
        let resp = send(router(&[]), Method::OPTIONS, Some("https://a.test")).await;
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(header(&resp, ACCESS_CONTROL_ALLOW_ORIGIN), None);
    }

    #[test]
    fn an_invalid_pattern_is_upstreams_startup_error() {
        let err = AllowedOrigins::compile(&["^https://a$".to_string(), "(".to_string()])
            .expect_err("unbalanced group");
        assert!(
            err.to_string().starts_with(
                "Invalid CORS allowed origin, --cors-allowed-origins flag was set to ^https://a$,( - "
            ),
            "{err}"
        );
    }
}
