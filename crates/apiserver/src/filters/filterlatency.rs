//! How long each filter of the handler chain takes (upstream's
//! `k8s.io/apiserver/pkg/endpoints/filterlatency`): [`started`] sits just
//! outside a filter and [`completed`] just inside it. Each tracked filter
//! (`authentication`, `audit`, `impersonation`, `priorityandfairness`,
//! `authorization`) opens a span of its name around itself and the rest of
//! the chain (the `authentication` one, started before the request's
//! span, is a root as upstream's), and the time until it passes the
//! request on goes to `apiserver_request_filter_duration_seconds` and, at
//! V(3) when over 100 ms, to the request log as `fl_<name>`.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use apimachinery::go_duration::GoDuration;
use axum::body::Body;
use axum::extract::State;
use http::{Request, Response};
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{TraceContextExt as _, Tracer as _};
use opentelemetry::Context;
use prometheus_client::metrics::histogram::Histogram;

use super::handler::Next;
use super::httplog;
use crate::metrics::Metrics;

/// Upstream's instrumentation scope, spelled as upstream spells it.
pub const SCOPE: &str = "k8s.op/apiserver/pkg/endpoints/filterlatency";

/// Upstream's `minFilterLatencyToLog`.
const MIN_LATENCY_TO_LOG: Duration = Duration::from_millis(100);

/// One tracked filter of a handler chain: its name and its latency series,
/// looked up once, on its first request, rather than on every request.
pub struct Tracked {
    name: &'static str,
    series: OnceLock<Histogram>,
}

impl Tracked {
    pub fn new(name: &'static str) -> Arc<Tracked> {
        Arc::new(Tracked {
            name,
            series: OnceLock::new(),
        })
    }
}

/// The filter a request is in, since when.
#[derive(Clone)]
struct Record {
    filter: Arc<Tracked>,
    started: Instant,
}

/// Upstream's `TrackStarted`: the span named after the filter around it
/// and what follows it, and the filter's start time.
pub async fn started(
    State(filter): State<Arc<Tracked>>,
    mut req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let name = filter.name;
    req.extensions_mut().insert(Record {
        filter,
        started: Instant::now(),
    });
    let parent = Context::current();
    // Under a span that does not record (tracing off, or the request not
    // sampled) the filter's span would not either, as the sampler follows
    // the parent: none is started. The first filter's span is a root.
    let unrecorded = parent.has_active_span() && !parent.span().is_recording();
    if unrecorded || !component_base::tracing::enabled() {
        return next.run(req).await;
    }
    let tracer = component_base::tracing::tracer(SCOPE);
    let cx = parent.with_span(tracer.start_with_context(name, &parent));
    let resp = next.run(req).with_context(cx.clone()).await;
    cx.span().end();
    resp
}

/// Upstream's `TrackCompleted`: the filter passed the request on.
pub async fn completed(
    State(metrics): State<Arc<Metrics>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    record(&req, &metrics);
    next.run(req).await
}

/// Records the latency of the filter `req` is leaving (for a filter that
/// answers itself, such as a refused authentication).
pub fn record(req: &Request<Body>, metrics: &Metrics) {
    let Some(record) = req.extensions().get::<Record>() else {
        return;
    };
    let latency = record.started.elapsed();
    let Tracked { name, series } = record.filter.as_ref();
    let series = series.get_or_init(|| metrics.filter_latency(name));
    series.observe(latency.as_secs_f64());
    if latency > MIN_LATENCY_TO_LOG {
        let nanos = i64::try_from(latency.as_nanos()).unwrap_or(i64::MAX);
        let text = GoDuration::from_nanos(nanos).to_string();
        httplog::add_filter_latency(req.extensions(), name, text);
    }
}
