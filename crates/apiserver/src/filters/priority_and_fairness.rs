//! API Priority and Fairness (upstream's `WithPriorityAndFairness`): each
//! request waits for a seat of the priority level its FlowSchema names, or
//! is rejected with 429; the response names the schema and level by UID.
//! Long-running requests other than watches are not limited; a watch holds
//! its seat only until its response starts, as upstream releases it once
//! the watch is initialized.

use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use axum::body::Body;
use axum::extract::State;
use axum::middleware::Next;
use http::{header, HeaderName, HeaderValue, Request, Response, StatusCode};
use prometheus_client::metrics::gauge::Gauge;

use super::max_in_flight::is_long_running;
use crate::authentication::UserInfo;
use crate::flowcontrol::{Classification, FlowControl};
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
    if is_long_running(&info) && info.verb != "watch" {
        return next.run(req).await;
    }
    let Some(class) = control.classify(&user, &info) else {
        return next.run(req).await;
    };
    let labels = [
        ("flow_schema", class.flow_schema.clone()),
        ("priority_level", class.priority_level.clone()),
    ];
    let waiting = Held::new(metrics.apf_waiting.get_or_create(&labels).clone());
    let seat = class.acquire(control.wait_limit()).await;
    drop(waiting);
    let mut response = match seat {
        Ok(seat) => {
            metrics.apf_dispatched.get_or_create(&labels).inc();
            let executing = Held::new(metrics.apf_executing.get_or_create(&labels).clone());
            let response = next.run(req).await;
            drop((executing, seat));
            response
        }
        Err(rejection) => {
            let [fs, pl] = labels;
            metrics
                .apf_rejected
                .get_or_create(&[fs, pl, ("reason", rejection.reason().to_owned())])
                .inc();
            too_many_requests()
        }
    };
    set_headers(&mut response, &class);
    response
}

/// Counts a request in a gauge for as long as it lives, also when the
/// client goes away mid-wait and the request's future is dropped.
struct Held(Gauge);

impl Held {
    fn new(gauge: Gauge) -> Self {
        gauge.inc();
        Held(gauge)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.dec();
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
fn too_many_requests() -> Response<Body> {
    let mut response = Response::new(Body::from("Too many requests, please try again later.\n"));
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
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
