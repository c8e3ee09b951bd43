//! The `/metrics` route (upstream's `k8s.io/apiserver/pkg/server/routes`
//! metrics): the server's [`Metrics`] rendered as Prometheus text.

use std::fmt;
use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use http::{header, HeaderValue, Response, StatusCode};

use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;
use crate::metrics::{Metrics, TEXT_CONTENT_TYPE};

/// `/metrics`: renders on a blocking thread, since it reads /proc.
pub async fn serve(metrics: Arc<Metrics>) -> Response<Body> {
    match tokio::task::spawn_blocking(move || metrics.render()).await {
        Ok(Ok(text)) => {
            let mut resp = Response::new(Body::from(text));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(TEXT_CONTENT_TYPE),
            );
            *resp.status_mut() = StatusCode::OK;
            resp
        }
        Ok(Err(e)) => internal_error(e),
        Err(e) => internal_error(e),
    }
}

fn internal_error(e: impl fmt::Display) -> Response<Body> {
    response::error(
        &ApiError::internal_error(format_args!("failed to encode metrics: {e}")),
        Encoding::Json,
    )
}
