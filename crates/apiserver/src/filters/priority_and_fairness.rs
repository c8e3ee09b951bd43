//! API Priority and Fairness (upstream's `WithPriorityAndFairness`): each
//! request's work is estimated, then it waits for that many seats of the
//! priority level its FlowSchema names, or is rejected with 429 and a
//! `Retry-After` that grows while the level keeps dropping requests; the
//! response names the schema and level by UID. Long-running requests other
//! than watches are not limited; a watch holds its seats only until its
//! response starts, as upstream releases them once the watch is
//! initialized, and counts towards the cost of writes while it streams.

use std::sync::Arc;
use std::time::Instant;

use apimachinery::request_info::RequestInfo;
use axum::body::Body;
use axum::extract::State;
use futures::StreamExt;
use http::{header, HeaderName, HeaderValue, Request, Response, StatusCode};
use prometheus_client::metrics::gauge::Gauge;

use super::handler::Next;
use super::max_in_flight::is_long_running;
use crate::authentication::user::UserInfo;
use crate::flowcontrol::{Classification, FlowControl, WatchRegistration};
use crate::metrics::Metrics;

const FLOW_SCHEMA_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
const PRIORITY_LEVEL_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");

/// The filter's state: the server's flow control and the metrics it feeds.
#[derive(Clone)]
pub struct PriorityAndFairness {
    pub control: Arc<FlowControl>,
    pub metrics: Arc<Metrics>,
}

pub async fn filter(
    State(apf): State<PriorityAndFairness>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let PriorityAndFairness { control, metrics } = apf;
    let info = req.extensions().get::<Arc<RequestInfo>>().cloned();
    let user = req.extensions().get::<Arc<UserInfo>>().cloned();
    let (Some(info), Some(user)) = (info, user) else {
        return next.run(req).await;
    };
    let is_watch = info.verb == "watch";
    if is_long_running(&info) && !is_watch {
        return next.run(req).await;
    }
    let Some(class) = control.classify(&user, &info) else {
        return next.run(req).await;
    };
    let apf = &metrics.apf;
    let series = class.series.clone();
    let estimate = class.estimate(&control, req.uri().query().unwrap_or(""));
    let seats = i64::try_from(estimate.max_seats()).unwrap_or(i64::MAX);
    series.work_estimated_seats(apf).observe(seats as f64);
    let waiting = (
        Held::new(series.waiting_requests(apf).clone(), 1),
        Held::new(series.waiting_seats(apf).clone(), seats),
    );
    let arrived = Instant::now();
    let seat = class.acquire(estimate, control.wait_limit()).await;
    drop(waiting);
    series
        .wait_duration(apf, seat.is_ok())
        .observe(arrived.elapsed().as_secs_f64());
    let mut response = match seat {
        Ok(mut seat) => {
            series.dispatched(apf).inc();
            seat.track(series.executing_seats(apf).clone());
            let executing = Held::new(series.executing_requests(apf).clone(), 1);
            let watch = if is_watch {
                control.register_watch(&info)
            } else {
                None
            };
            let started = Instant::now();
            let response = next.run(req).await;
            drop((executing, seat));
            series
                .execution_duration(apf, is_watch)
                .observe(started.elapsed().as_secs_f64());
            match watch {
                Some(watch) => counted_until_done(response, watch),
                None => response,
            }
        }
        Err(rejection) => {
            apf.rejected
                .get_or_create(&series.with(("reason", rejection.reason())))
                .inc();
            too_many_requests(control.note_rejected(&class.priority_level))
        }
    };
    set_headers(&mut response, &class);
    response
}

/// Keeps a watch counted until its response body ends.
fn counted_until_done(response: Response<Body>, watch: WatchRegistration) -> Response<Body> {
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _counted = &watch;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Counts a request in a gauge for as long as it lives, also when the
/// client goes away mid-wait and the request's future is dropped.
struct Held(Gauge, i64);

impl Held {
    fn new(gauge: Gauge, amount: i64) -> Self {
        gauge.inc_by(amount);
        Held(gauge, amount)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.dec_by(self.1);
    }
}

fn set_headers(response: &mut Response<Body>, class: &Classification) {
    let headers = response.headers_mut();
    for (name, uid) in [
        (PRIORITY_LEVEL_UID, &class.priority_level_uid),
        (FLOW_SCHEMA_UID, &class.flow_schema_uid),
    ] {
        if let Ok(value) = HeaderValue::from_str(uid) {
            headers.insert(name, value);
        }
    }
}

/// Upstream answers a rejected request in plain text, not with a Status.
fn too_many_requests(retry_after: i64) -> Response<Body> {
    let mut response = Response::new(Body::from("Too many requests, please try again later.\n"));
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
