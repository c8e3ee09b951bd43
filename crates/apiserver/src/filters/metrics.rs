//! Records every request in the request metrics (upstream's
//! `MonitorRequest` and `RecordLongRunning`). It sits just inside the
//! request-info filter, so it sees each request's `RequestInfo` and the
//! final status code, rejections by later filters (429, 504, 401/403)
//! included. A request is counted when its response body ends or is
//! dropped, so a watch counts in `apiserver_longrunning_requests` while it
//! streams and in `apiserver_request_total` when it ends.

use std::sync::Arc;
use std::time::Instant;

use apimachinery::request_info::RequestInfo;
use axum::body::Body;
use axum::extract::State;
use http::{header, HeaderMap, Method, Request, Response};
use http_body_util::BodyExt;
use prometheus_client::metrics::gauge::Gauge;

use super::handler::Next;
use super::max_in_flight::is_long_running;
use crate::metrics::{CountLabels, DryRun, DurationLabels, Metrics, RequestLabels, Scope, Verb};

/// Subresources upstream reports as `CONNECT`.
const CONNECT_SUBRESOURCES: [&str; 5] = ["log", "exec", "portforward", "attach", "proxy"];

const APPLY_PATCH: &[u8] = b"application/apply-patch+yaml";

pub async fn filter(
    State(metrics): State<Arc<Metrics>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let started = Instant::now();
    let Some(info) = req.extensions().get::<Arc<RequestInfo>>().cloned() else {
        return next.run(req).await;
    };
    let scope = Scope::of(&info);
    let verb = reported_verb(req.method(), req.headers(), &info, scope);
    let dry_run = dry_run(req.uri().query());
    let long_running = is_long_running(&info);
    let mut labels = RequestLabels {
        verb,
        scope,
        info,
        with_path: false,
    };
    // Held across the handler so a panic or a dropped connection still
    // brings the gauges back down.
    let active = if long_running {
        Active::new(&metrics.longrunning.get_or_create(&labels))
    } else {
        Active::new(metrics.inflight(is_mutating(&labels.info)))
    };
    let resp = next.run(req).await;
    let code = resp.status();
    // Only paths that answered can name a series: 404s, or 401/403 from
    // scanners, could name any path.
    labels.with_path = code.is_success() || code.is_redirection();
    let mut done = Completion {
        metrics,
        labels,
        dry_run,
        code: code.as_u16(),
        started,
        bytes: 0,
        _active: active,
    };
    let (parts, body) = resp.into_parts();
    let body = body.map_frame(move |frame| {
        if let Some(data) = frame.data_ref() {
            done.sent(data.len());
        }
        frame
    });
    Response::from_parts(parts, Body::new(body))
}

/// Upstream's reported verb: the HTTP method, with GET split into GET and
/// LIST by scope, watches as WATCH, server-side apply as APPLY and
/// streaming subresources as CONNECT.
pub fn reported_verb(
    method: &Method,
    headers: &HeaderMap,
    info: &RequestInfo,
    scope: Scope,
) -> Verb {
    if info.is_resource_request && CONNECT_SUBRESOURCES.contains(&info.subresource.as_str()) {
        return Verb::Connect;
    }
    if info.verb == "watch" {
        return Verb::Watch;
    }
    match *method {
        Method::GET | Method::HEAD => match scope {
            Scope::Namespace | Scope::Cluster => Verb::List,
            Scope::Resource | Scope::None => Verb::Get,
        },
        Method::POST => Verb::Post,
        Method::PUT => Verb::Put,
        Method::PATCH => {
            let content_type = headers.get(header::CONTENT_TYPE).map(|v| v.as_bytes());
            if content_type == Some(APPLY_PATCH) {
                Verb::Apply
            } else {
                Verb::Patch
            }
        }
        Method::DELETE => Verb::Delete,
        _ => Verb::Other,
    }
}

/// The `dry_run` label from the query: `All` when every `dryRun` value is
/// `All`, `invalid` when any is not.
pub fn dry_run(query: Option<&str>) -> DryRun {
    // Most requests carry no dryRun; skip parsing them.
    let Some(query) = query.filter(|q| q.contains("dryRun")) else {
        return DryRun::No;
    };
    let mut result = DryRun::No;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key == "dryRun" {
            if value != "All" {
                return DryRun::Invalid;
            }
            result = DryRun::All;
        }
    }
    result
}

/// Whether a request counts as `mutating` (else `readOnly`), as upstream's
/// max-in-flight filter splits them.
pub fn is_mutating(info: &RequestInfo) -> bool {
    !matches!(info.verb.as_str(), "get" | "list" | "watch")
}

/// One unit of a gauge, given back on drop.
struct Active(Gauge);

impl Active {
    fn new(gauge: &Gauge) -> Active {
        gauge.inc();
        Active(gauge.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Records a request when its response body is finished with (sent in
/// full, or dropped when the client went away).
struct Completion {
    metrics: Arc<Metrics>,
    labels: RequestLabels,
    dry_run: DryRun,
    code: u16,
    started: Instant,
    bytes: u64,
    _active: Active,
}

impl Completion {
    // A method (not a field update) so the body closure owns the whole
    // value, whose drop records the request.
    fn sent(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        let m = &self.metrics;
        // Upstream sizes only read responses.
        if matches!(self.labels.verb, Verb::Get | Verb::List) {
            m.response_sizes
                .get_or_create(&self.labels)
                .observe(self.bytes as f64);
        }
        let request = self.labels.clone();
        let elapsed = self.started.elapsed().as_secs_f64();
        m.durations
            .get_or_create(&DurationLabels {
                request: request.clone(),
                dry_run: self.dry_run,
            })
            .observe(elapsed);
        m.requests
            .get_or_create(&CountLabels {
                request,
                dry_run: self.dry_run,
                code: self.code,
            })
            .inc();
    }
}

#[cfg(test)]
mod tests;
