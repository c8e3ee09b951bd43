//! The client span of an outgoing HTTP call, as upstream's
//! `tracing.WrapperFor` (`otelhttp.NewTransport`) records it around the
//! calls of webhooks: a span `HTTP POST` of kind client, a child of the
//! current span, with `http.request.method`, `url.full`,
//! `server.address`, `server.port` (unless the scheme's default) and
//! `network.protocol.version`; then `http.response.status_code`, and
//! `error.type` with an error status for 4xx, 5xx and failed calls. The
//! call's `traceparent` names this span. It ends when dropped (upstream's
//! ends when the response body is closed).

use http::{HeaderMap, Method, StatusCode, Uri, Version};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};

use super::httpconv::{self, OTELHTTP_SCOPE};

/// `error.type` of a failure the conventions have no type name for (Go's
/// error type names have no counterpart here).
const ERROR_TYPE_OTHER: &str = "_OTHER";

/// The span of one outgoing call.
pub struct ClientSpan {
    cx: Context,
}

impl ClientSpan {
    /// Starts the span of a `method` call to `url` and writes its trace
    /// context into the call's `headers`. Go's client requests say
    /// `HTTP/1.1` whatever the connection speaks, hence the fixed version.
    pub fn start(method: &Method, url: &Uri, headers: &mut HeaderMap) -> ClientSpan {
        let parent = Context::current();
        if !super::enabled() {
            super::inject_context(&parent, headers);
            return ClientSpan { cx: parent };
        }
        let tracer = super::tracer(OTELHTTP_SCOPE);
        let name = match httpconv::standard_method(method) {
            Some(name) => format!("HTTP {name}"),
            None => format!("HTTP {method}"),
        };
        let mut attributes = httpconv::method_attributes(method);
        attributes.push(KeyValue::new("url.full", without_user_info(url)));
        let https = url.scheme_str() == Some("https");
        let authority = url.authority().map_or("", |a| a.as_str());
        let hostport = authority.rsplit('@').next().unwrap_or_default();
        attributes.extend(httpconv::server_attributes(hostport, https));
        attributes.push(KeyValue::new(
            "network.protocol.version",
            httpconv::protocol_version(Version::HTTP_11),
        ));
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(&tracer, &parent);
        let cx = parent.with_span(span);
        super::inject_context(&cx, headers);
        ClientSpan { cx }
    }

    /// Records the answer's status.
    pub fn response(&self, status: StatusCode) {
        let span = self.cx.span();
        let code = status.as_u16();
        span.set_attribute(KeyValue::new("http.response.status_code", i64::from(code)));
        if !(100..400).contains(&code) {
            span.set_attribute(KeyValue::new("error.type", code.to_string()));
            span.set_status(Status::error(""));
        }
    }

    /// Records a call that got no answer.
    pub fn failed(&self, error: &dyn std::fmt::Display) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("error.type", ERROR_TYPE_OTHER));
        span.set_status(Status::error(error.to_string()));
    }
}

impl Drop for ClientSpan {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

/// The URL without credentials, as `url.full` holds it.
fn without_user_info(url: &Uri) -> String {
    let text = url.to_string();
    match url.authority().map(|a| a.as_str()) {
        Some(authority) if authority.contains('@') => {
            let host = authority.rsplit('@').next().unwrap_or_default();
            text.replacen(authority, host, 1)
        }
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn credentials_stay_out_of_the_url() {
        let url: Uri = "https://user:pw@hook.example.com:8443/validate?timeout=10s"
            .parse()
            .unwrap();
        assert_eq!(
            without_user_info(&url),
            "https://hook.example.com:8443/validate?timeout=10s"
        );
    }

    #[test]
    fn the_call_carries_the_trace_without_a_provider() {
        let mut incoming = HeaderMap::new();
        incoming.insert("traceparent", PARENT.parse().unwrap());
        let _guard = super::super::extract(&incoming).attach();
        let mut out = HeaderMap::new();
        let url: Uri = "https://hook.example.com/validate".parse().unwrap();
        let span = ClientSpan::start(&Method::POST, &url, &mut out);
        span.response(StatusCode::OK);
        // The no-op provider's span is the caller's: its context goes on.
        assert_eq!(out["traceparent"], PARENT);
    }
}
