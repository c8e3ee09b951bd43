//! The request log (upstream's `WithHTTPLogging`,
//! `k8s.io/apiserver/pkg/server/httplog`): when V(3) is enabled (`-v=3`,
//! or `--vmodule=httplog=3`), one `"HTTP"` entry per request once its
//! response has been sent, with upstream's keys in upstream's order:
//!
//! ```text
//! I1127 21:11:12.834976   18332 httplog.rs:80] "HTTP" verb="LIST" URI="/api/v1/pods?limit=500" latency="1.234ms" userAgent="kubectl/v1.37.0" contentType="" audit-ID="0b5e…" srcIP="127.0.0.1:53412" resp=200
//! ```
//!
//! The verb is the metrics' (LIST, WATCH, APPLY, CONNECT), `contentType`
//! the request's `Content-Type` header (empty without one), the audit ID
//! is cut to 64 characters, the latency is Go's duration text, and an
//! upgraded connection logs `hijacked=true` instead of `resp`. Filters
//! slower than 100 ms add `fl_<filter>` before `resp` (upstream's
//! `filterlatency`). Upstream's `statusStack` (a Go stack trace for 5xx)
//! and `addedInfo` are not written. It sits inside the request-info and audit-ID filters, as
//! upstream.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use apimachinery::go_duration::GoDuration;
use apimachinery::request_info::RequestInfo;
use axum::body::Body;
use axum::extract::ConnectInfo;
use http::{header, Request, Response, StatusCode};
use http_body_util::BodyExt;

use super::audit::AuditId;
use super::handler::Next;
use super::metrics::reported_verb;
use crate::metrics::{Scope, Verb};

/// Upstream's `maxAuditIDLength` for logged audit IDs.
const MAX_AUDIT_ID_LENGTH: usize = 64;

/// Key/values filters add to the entry (upstream's `AddKeyValue`): the
/// latencies of slow filters, by filter name.
#[derive(Clone, Default)]
struct Added(Arc<Mutex<Vec<(&'static str, String)>>>);

/// Adds `fl_<filter>=<latency>` to the request's entry, when one is written.
pub fn add_filter_latency(extensions: &http::Extensions, filter: &'static str, latency: String) {
    if let Some(Added(added)) = extensions.get::<Added>() {
        added
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((filter, latency));
    }
}

pub async fn filter(mut req: Request<Body>, next: Next) -> Response<Body> {
    if !component_base::logs::verbosity::enabled(3, Some(file!())) {
        return next.run(req).await;
    }
    let entry = Entry::of(&req);
    let added = Added::default();
    req.extensions_mut().insert(added.clone());
    let resp = next.run(req).await;
    let done = Done {
        entry,
        added,
        status: resp.status(),
    };
    let (parts, body) = resp.into_parts();
    // Logged when the body has been sent or dropped, as upstream logs when
    // the handler returns.
    let body = body.map_frame(move |frame| {
        let _ = &done;
        frame
    });
    Response::from_parts(parts, Body::new(body))
}

/// What the entry says of the request.
struct Entry {
    started: Instant,
    verb: String,
    uri: String,
    user_agent: String,
    content_type: String,
    audit_id: String,
    src_ip: String,
}

impl Entry {
    fn of(req: &Request<Body>) -> Entry {
        let verb = match req.extensions().get::<Arc<RequestInfo>>() {
            Some(info) => match reported_verb(req.method(), req.headers(), info, Scope::of(info)) {
                Verb::Other => req.method().as_str().to_owned(),
                verb => verb.as_str().to_owned(),
            },
            None => req.method().as_str().to_owned(),
        };
        let header = |name| {
            req.headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default()
        };
        Entry {
            started: Instant::now(),
            verb,
            uri: req
                .uri()
                .path_and_query()
                .map_or_else(|| req.uri().path().to_owned(), |pq| pq.as_str().to_owned()),
            user_agent: header(header::USER_AGENT),
            content_type: header(header::CONTENT_TYPE),
            audit_id: req
                .extensions()
                .get::<AuditId>()
                .map(|id| id.0.chars().take(MAX_AUDIT_ID_LENGTH).collect())
                .unwrap_or_default(),
            src_ip: req
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.to_string())
                .unwrap_or_default(),
        }
    }
}

/// Writes the entry when dropped.
struct Done {
    entry: Entry,
    added: Added,
    status: StatusCode,
}

impl Drop for Done {
    fn drop(&mut self) {
        let e = &self.entry;
        let latency = GoDuration::from_nanos(
            i64::try_from(e.started.elapsed().as_nanos()).unwrap_or(i64::MAX),
        )
        .to_string();
        // An upgraded connection logs `hijacked=true` where others log `resp`.
        let hijacked = self.status == StatusCode::SWITCHING_PROTOCOLS;
        let added = self.added.0.lock().unwrap_or_else(PoisonError::into_inner);
        let fl = |filter: &str| {
            added
                .iter()
                .find(|(name, _)| *name == filter)
                .map(|(_, latency)| latency.as_str())
        };
        // In the order the filters complete.
        tracing::info!(
            verb = e.verb,
            URI = e.uri,
            latency,
            userAgent = e.user_agent,
            contentType = e.content_type,
            "audit-ID" = e.audit_id,
            srcIP = e.src_ip,
            fl_authentication = fl("authentication"),
            fl_audit = fl("audit"),
            fl_impersonation = fl("impersonation"),
            fl_priorityandfairness = fl("priorityandfairness"),
            fl_authorization = fl("authorization"),
            hijacked = hijacked.then_some(true),
            resp = (!hijacked).then_some(self.status.as_u16()),
            "HTTP"
        );
    }
}
