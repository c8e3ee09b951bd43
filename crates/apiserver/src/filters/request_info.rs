//! Resolves what a request addresses (verb, group, version, resource,
//! namespace, name, subresource) once, for every later filter and handler
//! (upstream's `WithRequestInfo`).

use std::sync::Arc;

use apimachinery::request_info::RequestInfoResolver;
use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use http::{Request, Response};

use super::handler::Next;
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;

pub async fn filter(
    State(resolver): State<Arc<RequestInfoResolver>>,
    mut req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let info = resolver.resolve(
        req.method().as_str(),
        req.uri().path(),
        req.uri().query().unwrap_or(""),
    );
    match info {
        Ok(info) => {
            req.extensions_mut().insert(Arc::new(info));
            next.run(req).await
        }
        Err(e) => response::error(
            &ApiError::internal_error(format!("failed to create RequestInfo: {e}")),
            Encoding::Json,
        ),
    }
}
