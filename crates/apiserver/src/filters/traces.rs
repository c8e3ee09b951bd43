//! The request's span (upstream's `WithTracing` in
//! `endpoints/filters/traces.go`, which wraps the chain with `otelhttp`):
//! a server span named after the resource path with its parameters
//! elided (`GET /api/v1/namespaces/{:namespace}/pods/{:name}`) or after
//! the method for other paths, with the HTTP attributes of `otelhttp`
//! plus `http.target` and `audit-id`. It sits just inside authentication,
//! as upstream's, so that only `system:masters` and `system:monitoring`
//! continue an incoming `traceparent`; anyone else's becomes a link of a
//! new trace. Everything the request does below runs in the span's
//! context, so layers below start child spans
//! (`component_base::tracing::in_span`) and outgoing calls carry it.

use std::net::SocketAddr;
use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::middleware::Next;
use component_base::tracing;
use http::{Request, Response, Version};
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Link, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};

use super::audit::AuditId;
use crate::authentication::user::{UserInfo, MONITORING_GROUP, PRIVILEGED_GROUP};

/// The instrumentation scope of the request spans (upstream's `otelhttp`).
pub const SCOPE: &str = "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp";

pub async fn filter(req: Request<Body>, next: Next) -> Response<Body> {
    let incoming = tracing::extract(req.headers());
    let tracer = tracing::tracer(SCOPE);
    let mut builder = tracer
        .span_builder(span_name(&req))
        .with_kind(SpanKind::Server)
        .with_attributes(request_attributes(&req));
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
    let span = builder.start_with_context(&tracer, &parent);
    let mut cx = parent.with_span(span);
    if let Some(AuditId(id)) = req.extensions().get::<AuditId>() {
        cx = tracing::with_audit_id(cx, id.clone());
    }
    // Connects traces to audit events, as upstream's.
    cx.span()
        .set_attribute(KeyValue::new("audit-id", tracing::audit_id_of(&cx)));
    let resp = next.run(req).with_context(cx.clone()).await;
    let span = cx.span();
    let status = resp.status();
    span.set_attribute(KeyValue::new(
        "http.response.status_code",
        i64::from(status.as_u16()),
    ));
    if status.is_server_error() {
        span.set_status(Status::error(""));
    }
    span.end();
    resp
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

/// The HTTP server attributes `otelhttp` records (stable semantic
/// conventions), and upstream's `http.target`.
fn request_attributes(req: &Request<Body>) -> Vec<KeyValue> {
    let header = |name: http::header::HeaderName| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let mut attributes = vec![
        KeyValue::new("http.request.method", req.method().as_str().to_owned()),
        KeyValue::new("url.scheme", "https"),
        KeyValue::new("url.path", req.uri().path().to_owned()),
        KeyValue::new("network.protocol.version", protocol_version(req.version())),
        KeyValue::new(
            "http.target",
            req.uri()
                .path_and_query()
                .map_or_else(|| req.uri().path().to_owned(), ToString::to_string),
        ),
    ];
    let host =
        header(http::header::HOST).or_else(|| req.uri().authority().map(ToString::to_string));
    if let Some(host) = host {
        let (address, port) = match host.rsplit_once(':') {
            Some((address, port)) if port.parse::<u16>().is_ok() => {
                (address.to_owned(), port.parse::<i64>().ok())
            }
            _ => (host.clone(), None),
        };
        attributes.push(KeyValue::new("server.address", address));
        if let Some(port) = port {
            attributes.push(KeyValue::new("server.port", port));
        }
    }
    if let Some(agent) = header(http::header::USER_AGENT) {
        attributes.push(KeyValue::new("user_agent.original", agent));
    }
    if let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>() {
        let peer_ip = peer.ip().to_canonical().to_string();
        let client = crate::audit::request::source_ips(req)
            .into_iter()
            .next()
            .unwrap_or_else(|| peer_ip.clone());
        attributes.push(KeyValue::new("client.address", client));
        attributes.push(KeyValue::new("network.peer.address", peer_ip));
        attributes.push(KeyValue::new("network.peer.port", i64::from(peer.port())));
    }
    attributes
}

fn protocol_version(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "0.9",
        Version::HTTP_10 => "1.0",
        Version::HTTP_2 => "2",
        Version::HTTP_3 => "3",
        _ => "1.1",
    }
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
