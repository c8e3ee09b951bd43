//! `Cache-Control: no-cache, private` on every response (upstream's
//! `WithCacheControl`): everything served sits behind authentication and
//! authorization, so no shared cache may keep it. A value the handler set
//! itself is kept.

use axum::body::Body;
use http::header::CACHE_CONTROL;
use http::{HeaderValue, Request, Response};

use super::handler::Next;

const NO_CACHE_PRIVATE: HeaderValue = HeaderValue::from_static("no-cache, private");

pub async fn filter(req: Request<Body>, next: Next) -> Response<Body> {
    let mut resp = next.run(req).await;
    resp.headers_mut()
        .entry(CACHE_CONTROL)
        .or_insert(NO_CACHE_PRIVATE);
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

    async fn cache_control(path: &str) -> (StatusCode, Option<String>) {
        let router = Next::new(BoxCloneSyncService::new(
            Router::new().route("/ok", get(|| async { "ok" })).route(
                "/own",
                get(|| async { ([(CACHE_CONTROL, "public, max-age=60")], "own") }),
            ),
        ))
        .layer_fn(filter);
        let req = Request::builder()
            .uri(path)
            .body(Body::empty())
            .expect("request");
        let resp = router.oneshot(req).await.expect("infallible");
        let value = resp
            .headers()
            .get(CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (resp.status(), value)
    }

    #[tokio::test]
    async fn every_response_is_private_and_uncached() {
        let expected = Some("no-cache, private".to_owned());
        assert_eq!(
            cache_control("/ok").await,
            (StatusCode::OK, expected.clone())
        );
        assert_eq!(
            cache_control("/missing").await,
            (StatusCode::NOT_FOUND, expected)
        );
    }

    #[tokio::test]
    async fn a_value_set_by_the_handler_is_kept() {
        let (_, value) = cache_control("/own").await;
        assert_eq!(value.as_deref(), Some("public, max-age=60"));
    }
}
