//! Ends requests that run past `--request-timeout` with a 504 Status
//! (upstream's `WithTimeoutForNonLongRunningRequests`); watches are bounded
//! by their own timeout instead.

use std::time::Duration;

use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use http::{Request, Response};

use super::handler::Next;
use super::max_in_flight::is_long_running_request;
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;

pub async fn filter(
    State(timeout): State<Duration>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let long_running = is_long_running_request(&req);
    if long_running || timeout.is_zero() {
        return next.run(req).await;
    }
    match tokio::time::timeout(timeout, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => response::error(
            &ApiError::timeout(
                "request did not complete within requested timeout - context deadline exceeded",
                0,
            ),
            Encoding::Json,
        ),
    }
}
