//! `--shutdown-send-retry-after` (upstream's `WithRetryAfter` in
//! `pkg/server/filters/with_retry_after.go`): once shutdown stops accepting
//! new requests (`NotAcceptingNewRequest`: the shutdown delay passed and
//! the pre-shutdown hooks ran), every new request is answered 429 with
//! `Retry-After: 5` and `Connection: close` (on HTTP/2 the connection is
//! sent GOAWAY), so clients retry on another server while the in-flight
//! ones drain. Health probes, `/metrics` and the server's own loopback
//! requests (user agent `kube-apiserver/…`) are still served.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use http::header::{CONNECTION, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use http::{HeaderValue, Request, Response, StatusCode};

use super::handler::Next;

/// Paths answered normally even while refusing (upstream's
/// `pathPrefixesExemptFromRetryAfter`).
const EXEMPT_PATH_PREFIXES: [&str; 4] = ["/readyz", "/livez", "/healthz", "/metrics"];

const MESSAGE: &str = "The apiserver is shutting down, please try again later.\n";

/// Whether `req` is served even while the server refuses new requests
/// (upstream's `isRequestExemptFromRetryAfter`).
pub fn is_exempt<B>(req: &Request<B>) -> bool {
    let loopback = req
        .headers()
        .get(USER_AGENT)
        .and_then(|agent| agent.to_str().ok())
        .is_some_and(|agent| agent.starts_with("kube-apiserver/"));
    let path = req.uri().path();
    loopback || EXEMPT_PATH_PREFIXES.iter().any(|p| path.starts_with(p))
}

/// `not_accepting` is set once shutdown no longer accepts new requests.
pub async fn filter(
    State(not_accepting): State<Arc<AtomicBool>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    if !not_accepting.load(Ordering::SeqCst) || is_exempt(&req) {
        return next.run(req).await;
    }
    let mut resp = Response::new(Body::from(MESSAGE));
    *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = resp.headers_mut();
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    headers.insert(RETRY_AFTER, HeaderValue::from_static("5"));
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use axum::routing::get;
    use axum::Router;
    use tower::util::BoxCloneSyncService;
    use tower::ServiceExt;

    use super::*;

    async fn answer(not_accepting: bool, path: &str, agent: &str) -> Response<Body> {
        let router = Next::new(BoxCloneSyncService::new(
            Router::new().fallback(get(|| async { "served" })),
        ))
        .layer(Arc::new(AtomicBool::new(not_accepting)), filter);
        let req = Request::get(path)
            .header(USER_AGENT, agent)
            .body(Body::empty())
            .unwrap();
        router.oneshot(req).await.unwrap()
    }

    #[tokio::test]
    async fn new_requests_get_429_once_not_accepting_except_probes_and_loopback() {
        let before = answer(false, "/api/v1/pods", "kubectl/v1.37.0").await;
        assert_eq!(before.status(), StatusCode::OK);
        let refused = answer(true, "/api/v1/pods", "kubectl/v1.37.0").await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[RETRY_AFTER], "5");
        assert_eq!(refused.headers()[CONNECTION], "close");
        let body = axum::body::to_bytes(refused.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(body, MESSAGE.as_bytes());
        for path in ["/readyz", "/livez/ping", "/healthz", "/metrics"] {
            assert_eq!(answer(true, path, "curl").await.status(), StatusCode::OK);
        }
        let loopback = answer(true, "/api/v1/pods", "kube-apiserver/v1.37.0 (linux/amd64)").await;
        assert_eq!(loopback.status(), StatusCode::OK);
    }
}
