//! Limits concurrent requests (upstream's `WithMaxInFlightLimit`): separate
//! budgets for reads and writes; long-running requests (watches) are not
//! counted; a request over the limit gets 429 with Retry-After.

use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use http::{Request, Response};
use tokio::sync::Semaphore;

use super::handler::Next;
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;

pub struct Limits {
    read: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

impl Limits {
    /// A limit of 0 means unlimited, as upstream.
    pub fn new(max_read: usize, max_mutating: usize) -> Self {
        let sem = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        Limits {
            read: sem(max_read),
            mutating: sem(max_mutating),
        }
    }
}

/// Watches, other streaming requests and profiles hold no slot (upstream's
/// long-running request check).
pub fn is_long_running(info: &RequestInfo) -> bool {
    info.verb == "watch"
        || matches!(
            info.subresource.as_str(),
            "proxy" | "log" | "exec" | "attach" | "portforward"
        )
        || (!info.is_resource_request && info.path.starts_with("/debug/pprof/"))
}

/// Whether `req`'s request info (set by the request-info filter) is that
/// of a long-running request.
pub fn is_long_running_request<B>(req: &Request<B>) -> bool {
    req.extensions()
        .get::<Arc<RequestInfo>>()
        .is_some_and(|info| is_long_running(info))
}

fn is_mutating(verb: &str) -> bool {
    matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

pub async fn filter(
    State(limits): State<Arc<Limits>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let info = req.extensions().get::<Arc<RequestInfo>>().cloned();
    let Some(info) = info.filter(|i| !is_long_running(i)) else {
        return next.run(req).await;
    };
    let sem = if is_mutating(&info.verb) {
        &limits.mutating
    } else {
        &limits.read
    };
    let Some(sem) = sem else {
        return next.run(req).await;
    };
    match sem.clone().try_acquire_owned() {
        Ok(_permit) => next.run(req).await,
        Err(_) => response::error(
            &ApiError::too_many_requests("Too many requests, please try again later.", 1),
            Encoding::Json,
        ),
    }
}
