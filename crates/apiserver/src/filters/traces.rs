//! The request's span (upstream's `WithTracing` in
//! `endpoints/filters/traces.go`, which wraps the chain with `otelhttp`):
//! a server span named after the resource path with its parameters
//! elided (`GET /api/v1/namespaces/{:namespace}/pods/{:name}`) or after
//! the method for other paths, with the HTTP attributes of `otelhttp`
//! v0.69 (`component_base::tracing::httpconv`) plus `http.target` and
//! `audit-id`, ended once the response body is sent. It sits just inside
//! authentication, as upstream's, so that only `system:masters` and
//! `system:monitoring` continue an incoming `traceparent` (without one,
//! their span is a child of the `authentication` filter's span, as
//! upstream's); anyone else's becomes a link of a new trace. Everything the request does below runs in the span's
//! context, so layers below start child spans
//! (`component_base::tracing::in_span`) and outgoing calls carry it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use axum::body::Body;
use axum::extract::ConnectInfo;
use component_base::tracing::{self, httpconv};
use http::{Request, Response};
use http_body_util::BodyExt as _;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Link, Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};

use super::audit::AuditId;
use super::handler::Next;
use crate::authentication::user::{UserInfo, MONITORING_GROUP, PRIVILEGED_GROUP};

pub async fn filter(req: Request<Body>, next: Next) -> Response<Body> {
    if !tracing::enabled() {
        // No provider: the span would be a no-op carrying its parent's
        // context, so the request runs in that context.
        let parent = if privileged(&req) {
            tracing::extract(req.headers())
        } else {
            Context::new()
        };
        let cx = with_audit_id(&req, parent);
        return next.run(req).with_context(cx).await;
    }
    let incoming = tracing::extract(req.headers());
    let tracer = tracing::tracer(httpconv::OTELHTTP_SCOPE);
    let mut builder = tracer
        .span_builder(span_name(&req))
        .with_kind(SpanKind::Server);
    let parent = if privileged(&req) {
        incoming
    } else {
        // Upstream's public endpoint: a new root, linked to the caller's span.
        let remote = incoming.span().span_context().clone();
        if remote.is_valid() && remote.is_remote() {
            builder = builder.with_links(vec![Link::with_context(remote)]);
        }
        Context::new()
    };
    let mut span = builder.start_with_context(&tracer, &parent);
    // The sampler (parent-based, by trace ID ratio) does not look at
    // attributes, so an unsampled request skips building them and
    // counting its bytes.
    let recording = span.is_recording();
    if recording {
        span.set_attributes(request_attributes(&req));
    }
    let cx = with_audit_id(&req, parent.with_span(span));
    if !recording {
        return next.run(req).with_context(cx).await;
    }
    // Connects traces to audit events, as upstream's.
    cx.span()
        .set_attribute(KeyValue::new("audit-id", tracing::audit_id_of(&cx)));
    let read = Arc::new(AtomicU64::new(0));
    let counted = read.clone();
    let req = req.map(|body| {
        Body::new(body.map_frame(move |frame| {
            if let Some(data) = frame.data_ref() {
                counted.fetch_add(data.len() as u64, Ordering::Relaxed);
            }
            frame
        }))
    });
    let resp = next.run(req).with_context(cx.clone()).await;
    let mut end = SpanEnd {
        cx,
        read,
        written: 0,
        status: resp.status(),
    };
    // The span ends once the body is sent (or dropped), as otelhttp's ends
    // when the handler has written the response.
    resp.map(|body| {
        Body::new(body.map_frame(move |frame| {
            end.count(&frame);
            frame
        }))
    })
}

/// Ends the request's span with `otelhttp`'s response attributes: the
/// bytes read and written (when any) and the status code; 5xx is an error.
struct SpanEnd {
    cx: Context,
    read: Arc<AtomicU64>,
    written: u64,
    status: http::StatusCode,
}

impl SpanEnd {
    fn count(&mut self, frame: &hyper::body::Frame<bytes::Bytes>) {
        if let Some(data) = frame.data_ref() {
            self.written += data.len() as u64;
        }
    }
}

impl Drop for SpanEnd {
    fn drop(&mut self) {
        let span = self.cx.span();
        let size = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let read = self.read.load(Ordering::Relaxed);
        if read > 0 {
            span.set_attribute(KeyValue::new("http.request.body.size", size(read)));
        }
        if self.written > 0 {
            span.set_attribute(KeyValue::new("http.response.body.size", size(self.written)));
        }
        span.set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(self.status.as_u16()),
        ));
        if self.status.is_server_error() {
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

/// `cx` carrying the request's audit ID, when it has one.
fn with_audit_id(req: &Request<Body>, cx: Context) -> Context {
    match req.extensions().get::<AuditId>() {
        Some(AuditId(id)) => tracing::with_audit_id(cx, id.clone()),
        None => cx,
    }
}

/// Whether the user may continue a caller's trace (upstream's
/// `notSystemPrivilegedGroup`, negated).
fn privileged(req: &Request<Body>) -> bool {
    req.extensions().get::<Arc<UserInfo>>().is_some_and(|user| {
        user.groups
            .iter()
            .any(|g| g == PRIVILEGED_GROUP || g == MONITORING_GROUP)
    })
}

/// Upstream's span name: the method, then the resource path for resource
/// requests.
fn span_name(req: &Request<Body>) -> String {
    let method = req.method().as_str();
    match req.extensions().get::<Arc<RequestInfo>>() {
        Some(info) if info.is_resource_request => format!("{method} {}", resource_path(info)),
        _ => method.to_owned(),
    }
}

fn resource_path(info: &RequestInfo) -> String {
    let mut path = format!("/{}", info.api_prefix);
    if !info.api_group.is_empty() {
        path.push('/');
        path.push_str(&info.api_group);
    }
    path.push('/');
    path.push_str(&info.api_version);
    if !info.namespace.is_empty() {
        path.push_str("/namespaces/{:namespace}");
    }
    path.push('/');
    path.push_str(&info.resource);
    if !info.name.is_empty() {
        path.push_str("/{:name}");
    }
    if !info.subresource.is_empty() {
        path.push('/');
        path.push_str(&info.subresource);
    }
    path
}

/// The HTTP server attributes `otelhttp` v0.69 records at the start of
/// the span (its `RequestTraceAttrs`), and upstream's `http.target`.
fn request_attributes(req: &Request<Body>) -> Vec<KeyValue> {
    let header = |name: http::header::HeaderName| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let host = header(http::header::HOST)
        .or_else(|| req.uri().authority().map(ToString::to_string))
        .unwrap_or_default();
    let mut attributes = httpconv::server_attributes(&host, true);
    attributes.extend(httpconv::method_attributes(req.method()));
    attributes.push(KeyValue::new("url.scheme", "https"));
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    if let Some(peer) = peer {
        let ip = peer.ip().to_canonical().to_string();
        attributes.push(KeyValue::new("network.peer.address", ip));
        attributes.push(KeyValue::new("network.peer.port", i64::from(peer.port())));
    }
    if let Some(agent) = header(http::header::USER_AGENT).filter(|a| !a.is_empty()) {
        attributes.push(KeyValue::new("user_agent.original", agent));
    }
    // The first X-Forwarded-For entry as sent, else the peer.
    let forwarded = header(http::header::HeaderName::from_static("x-forwarded-for"))
        .map(|v| v.split(',').next().unwrap_or_default().to_owned())
        .filter(|v| !v.is_empty());
    if let Some(client) = forwarded.or_else(|| peer.map(|p| p.ip().to_canonical().to_string())) {
        attributes.push(KeyValue::new("client.address", client));
    }
    attributes.push(KeyValue::new("url.path", req.uri().path().to_owned()));
    attributes.push(KeyValue::new(
        "network.protocol.version",
        httpconv::protocol_version(req.version()),
    ));
    attributes.push(KeyValue::new(
        "http.target",
        req.uri()
            .path_and_query()
            .map_or_else(|| req.uri().path().to_owned(), ToString::to_string),
    ));
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(namespace: &str, name: &str, subresource: &str) -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            api_prefix: "apis".into(),
            api_group: "apps".into(),
            api_version: "v1".into(),
            namespace: namespace.into(),
            resource: "deployments".into(),
            name: name.into(),
            subresource: subresource.into(),
            ..RequestInfo::default()
        }
    }

    #[test]
    fn span_names_elide_namespace_and_name_as_upstream() {
        assert_eq!(
            resource_path(&info("", "", "")),
            "/apis/apps/v1/deployments"
        );
        assert_eq!(
            resource_path(&info("default", "web", "scale")),
            "/apis/apps/v1/namespaces/{:namespace}/deployments/{:name}/scale"
        );
        let core = RequestInfo {
            api_prefix: "api".into(),
            api_group: String::new(),
            resource: "pods".into(),
            ..info("kube-system", "", "")
        };
        assert_eq!(resource_path(&core), "/api/v1/namespaces/{:namespace}/pods");
    }

    #[test]
    fn only_privileged_groups_continue_a_trace() {
        let with_groups = |groups: &[&str]| {
            let mut req = Request::new(Body::empty());
            let user = UserInfo {
                name: "u".into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                ..UserInfo::anonymous()
            };
            req.extensions_mut().insert(Arc::new(user));
            privileged(&req)
        };
        assert!(with_groups(&["system:masters"]));
        assert!(with_groups(&["system:monitoring", "system:authenticated"]));
        assert!(!with_groups(&["system:authenticated"]));
        assert!(!privileged(&Request::new(Body::empty())));
    }
}
