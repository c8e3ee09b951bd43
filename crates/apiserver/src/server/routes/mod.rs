//! Non-resource routes a server installs on its own mux or on the debug
//! socket (upstream's `k8s.io/apiserver/pkg/server/routes`): `/debug/pprof`
//! ([`profiling`]), `/debug/flags` ([`flags`]) and `/logs` ([`logs`]). On
//! the mux, like every non-resource path, they are behind authentication
//! and authorization (`nonResourceURLs`).

pub mod debugsocket;
pub mod flags;
pub mod logs;
mod pprof;
pub mod profiling;

use std::sync::Arc;

use axum::body::Body;
use futures::future::BoxFuture;
use http::{header, HeaderValue, Request, Response, StatusCode};

/// A handler of one path.
pub type RouteHandler =
    Arc<dyn Fn(Request<Body>) -> BoxFuture<'static, Response<Body>> + Send + Sync>;

/// What routes are installed on (upstream's `mux.PathRecorderMux`).
pub trait PathRecorder {
    /// Serves `path` (exact match) without listing it in the `/` index.
    fn unlisted_handle(&mut self, path: &str, handler: RouteHandler);
    /// Serves every path below `prefix` that no exact path claims.
    fn unlisted_handle_prefix(&mut self, prefix: &str, handler: RouteHandler);
}

/// Upstream's `writePlainText`: the text and a newline.
fn plain_text(status: StatusCode, text: &str) -> Response<Body> {
    let mut resp = Response::new(Body::from(format!("{text}\n")));
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}
