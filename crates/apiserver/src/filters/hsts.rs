//! HTTP Strict Transport Security for
//! `--strict-transport-security-directives` (upstream's `WithHSTS`): every
//! response carries the directives joined by "; ", unless the handler set
//! the header itself. No directives means the filter does nothing.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use http::header::STRICT_TRANSPORT_SECURITY;
use http::{HeaderValue, Request, Response};

use super::handler::Next;

/// An invalid header value (e.g. a control character in a directive).
#[derive(Debug, thiserror::Error)]
#[error("invalid --strict-transport-security-directives {0:?}")]
pub struct HstsError(String);

/// The header value, built once; `None` when no directives are configured.
#[derive(Debug, Default)]
pub struct Hsts(Option<HeaderValue>);

impl Hsts {
    pub fn new(directives: &[String]) -> Result<Self, HstsError> {
        if directives.is_empty() {
            return Ok(Hsts(None));
        }
        let joined = directives.join("; ");
        HeaderValue::from_str(&joined)
            .map(|v| Hsts(Some(v)))
            .map_err(|_| HstsError(joined))
    }
}

pub async fn filter(
    State(hsts): State<Arc<Hsts>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let mut resp = next.run(req).await;
    if let Some(value) = &hsts.0 {
        resp.headers_mut()
            .entry(STRICT_TRANSPORT_SECURITY)
            .or_insert_with(|| value.clone());
    }
    resp
}

#[cfg(test)]
mod tests {
    use axum::routing::get;
    use axum::Router;
    use http::StatusCode;
    use tower::util::BoxCloneSyncService;
    use tower::ServiceExt;

    use super::*;

    async fn hsts_header(directives: &[&str], path: &str) -> (StatusCode, Option<String>) {
        let directives: Vec<String> = directives.iter().map(|d| d.to_string()).collect();
        let hsts = Hsts::new(&directives).expect("valid directives");
        let router = Next::new(BoxCloneSyncService::new(
            Router::new().route("/ok", get(|| async { "ok" })).route(
                "/own",
                get(|| async { ([(STRICT_TRANSPORT_SECURITY, "max-age=1")], "own") }),
            ),
        ))
        .layer(Arc::new(hsts), filter);
        let req = Request::builder()
            .uri(path)
            .body(Body::empty())
            .expect("request");
        let resp = router.oneshot(req).await.expect("infallible");
        let value = resp
            .headers()
            .get(STRICT_TRANSPORT_SECURITY)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (resp.status(), value)
    }

    #[tokio::test]
    async fn every_response_carries_the_joined_directives() {
        let directives = ["max-age=31536000", "includeSubDomains", "preload"];
        let expected = Some("max-age=31536000; includeSubDomains; preload".to_string());
        assert_eq!(
            hsts_header(&directives, "/ok").await,
            (StatusCode::OK, expected.clone())
        );
        assert_eq!(
            hsts_header(&directives, "/missing").await,
            (StatusCode::NOT_FOUND, expected)
        );
    }

    #[tokio::test]
    async fn a_header_set_by_the_handler_is_kept() {
        let (_, value) = hsts_header(&["max-age=31536000"], "/own").await;
        assert_eq!(value.as_deref(), Some("max-age=1"));
    }

    #[tokio::test]
    async fn no_directives_no_header() {
        assert_eq!(hsts_header(&[], "/ok").await, (StatusCode::OK, None));
    }

    #[test]
    fn an_unencodable_directive_is_refused() {
        assert!(Hsts::new(&["max-age=1\n".to_string()]).is_err());
    }
}
