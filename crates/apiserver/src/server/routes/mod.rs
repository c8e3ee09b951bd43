//! Debugging routes of a generic server (upstream's
//! `k8s.io/apiserver/pkg/server/routes`): `/debug/flags` ([`flags`]) and
//! `/logs` ([`logs`]). Like every non-resource path they are behind
//! authentication and authorization (`nonResourceURLs`).

pub mod flags;
pub mod logs;

use axum::body::Body;
use http::{header, HeaderValue, Response, StatusCode};

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
