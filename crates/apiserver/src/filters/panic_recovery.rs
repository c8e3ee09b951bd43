//! Turns a panic inside a handler into a 500 Status instead of a dropped
//! connection (upstream's `WithPanicRecovery`).

use std::panic::AssertUnwindSafe;

use apimachinery::status::ApiError;
use axum::body::Body;
use futures::FutureExt;
use http::{Request, Response};

use super::handler::Next;
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;

pub async fn filter(req: Request<Body>, next: Next) -> Response<Body> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(%method, %path, panic = %what, "handler panicked");
            response::error(
                &ApiError::internal_error("an unexpected error occurred"),
                Encoding::Json,
            )
        }
    }
}
