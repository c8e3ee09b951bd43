//! OpenTelemetry tracing as upstream's `k8s.io/component-base/tracing`:
//! [`api::v1::TracingConfiguration`], [`new_provider`] (OTLP/gRPC), the
//! W3C trace-context propagation of requests ([`extract`], [`inject`],
//! upstream's `Propagators()`) and [`in_span`], upstream's `tracing.Start`
//! for a step of a request: a child span of the request's current span,
//! or nothing when the request is not traced.
//!
//! The request's span travels as the OpenTelemetry [`Context`] the
//! request's future is polled in (`FutureExt::with_context`), as Go passes
//! it in a `context.Context`.

pub mod api;
mod client;
pub mod httpconv;
pub mod otelgrpc;
mod provider;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use http::HeaderMap;
use opentelemetry::baggage::BaggageExt as _;
use opentelemetry::context::FutureExt as _;
use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};

pub use client::ClientSpan;
pub use opentelemetry::KeyValue as Attribute;
pub use provider::{new_provider, ProviderError};

/// The instrumentation scope of the spans [`in_span`] starts (upstream's).
pub const INSTRUMENTATION_SCOPE: &str = "k8s.io/component-base/tracing";

/// Makes `provider` the process's: every span after this goes to it.
/// Until then spans are no-ops, while [`extract`] and [`inject`] still
/// pass an incoming trace context on, as upstream's no-op provider does.
pub fn set_provider(provider: opentelemetry_sdk::trace::SdkTracerProvider) {
    global::set_tracer_provider(provider);
    PROVIDER_SET.store(true, Ordering::Release);
}

static PROVIDER_SET: AtomicBool = AtomicBool::new(false);

/// Whether [`set_provider`] was called. Until then every span is a no-op
/// that carries its parent's trace context on, so code may skip starting
/// spans (and building their names and attributes) and run in its
/// parent's context instead: what it passes on is the same.
pub fn enabled() -> bool {
    PROVIDER_SET.load(Ordering::Acquire)
}

/// A tracer of the process's provider with the instrumentation scope `name`.
pub fn tracer(name: &'static str) -> BoxedTracer {
    global::tracer(name)
}

/// Upstream's `Propagators()`: W3C `traceparent`/`tracestate` and `baggage`.
pub fn propagator() -> &'static TextMapCompositePropagator {
    static PROPAGATOR: LazyLock<TextMapCompositePropagator> = LazyLock::new(|| {
        TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ])
    });
    &PROPAGATOR
}

/// The trace context (and baggage) a request carries in its headers, over
/// the current context (which it keeps when the headers carry none, as
/// Go's propagators keep the request context's span).
pub fn extract(headers: &HeaderMap) -> Context {
    propagator().extract_with_context(&Context::current(), &HeaderExtractor(headers))
}

/// Writes the current trace context into an outgoing request's headers,
/// as upstream's `otelhttp` transport does; nothing when there is none.
pub fn inject(headers: &mut HeaderMap) {
    inject_context(&Context::current(), headers);
}

/// [`inject`] of `cx`'s trace context.
pub fn inject_context(cx: &Context, headers: &mut HeaderMap) {
    if cx.span().span_context().is_valid() || !cx.baggage().is_empty() {
        propagator().inject_context(cx, &mut HeaderInjector(headers));
    }
}

/// Runs `work` in a child span `name` of the current span and ends the
/// span when `work` completes (upstream's `tracing.Start` and `span.End`);
/// `attributes` is called only when the span is recorded (upstream's lazy
/// attribute values). Without a current span, `work` just runs.
pub async fn in_span<F, A>(name: &'static str, attributes: A, work: F) -> F::Output
where
    F: Future,
    A: FnOnce() -> Vec<KeyValue>,
{
    let started = start(name, attributes);
    work.with_context(started.context()).await
}

/// Starts a child span `name` of the current span, as [`in_span`] does,
/// for work that outlives a future (a response body): it ends when the
/// returned [`Started`] is dropped.
pub fn start<A>(name: &'static str, attributes: A) -> Started
where
    A: FnOnce() -> Vec<KeyValue>,
{
    let parent = Context::current();
    if !enabled() || !parent.has_active_span() {
        return Started {
            cx: parent,
            own: false,
        };
    }
    let tracer = tracer(INSTRUMENTATION_SCOPE);
    let mut builder = tracer.span_builder(name);
    if parent.span().is_recording() {
        builder = builder.with_attributes(attributes());
    }
    Started {
        cx: parent.with_span(builder.start_with_context(&tracer, &parent)),
        own: true,
    }
}

/// A span [`start`] began (or the current context, when there was no span
/// to be a child of); the span ends when this is dropped.
pub struct Started {
    cx: Context,
    own: bool,
}

impl Started {
    /// The context to run the span's work in.
    pub fn context(&self) -> Context {
        self.cx.clone()
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.own {
            self.cx.span().end();
        }
    }
}

/// Whether the current span is recorded (to skip work done only for its
/// attributes or events).
pub fn recording() -> bool {
    Context::current().span().is_recording()
}

/// Adds the event `name` to the current span (upstream's `span.AddEvent`).
pub fn add_event(name: &'static str, attributes: Vec<KeyValue>) {
    Context::current().span().add_event(name, attributes);
}

/// The request's audit ID, carried with its trace context so that spans
/// of any layer can name it (upstream reads it from the request context).
#[derive(Debug, Clone)]
struct AuditId(Arc<str>);

/// Upstream's limit on the audit ID spans carry (`GetAuditIDTruncated`).
const MAX_AUDIT_ID_LENGTH: usize = 64;

/// `cx` carrying the request's audit ID.
pub fn with_audit_id(cx: Context, id: Arc<str>) -> Context {
    cx.with_value(AuditId(id))
}

/// The current request's audit ID, cut to upstream's 64 bytes (upstream's
/// `audit.GetAuditIDTruncated`); empty outside a request.
pub fn audit_id() -> String {
    audit_id_of(&Context::current())
}

/// [`audit_id`] of `cx`.
pub fn audit_id_of(cx: &Context) -> String {
    let Some(AuditId(id)) = cx.get::<AuditId>() else {
        return String::new();
    };
    let mut end = id.len().min(MAX_AUDIT_ID_LENGTH);
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    id[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn incoming() -> Context {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", PARENT.parse().unwrap());
        extract(&headers)
    }

    #[test]
    fn outgoing_calls_carry_the_incoming_trace_context() {
        let _guard = incoming().attach();
        let mut out = HeaderMap::new();
        inject(&mut out);
        assert_eq!(out["traceparent"], PARENT);
    }

    #[test]
    fn nothing_is_injected_outside_a_trace() {
        let mut out = HeaderMap::new();
        inject(&mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn audit_ids_are_cut_to_upstreams_length() {
        let long: Arc<str> = "a".repeat(100).into();
        let _guard = with_audit_id(Context::new(), long).attach();
        assert_eq!(audit_id(), "a".repeat(64));
    }

    #[tokio::test]
    async fn steps_run_with_or_without_a_trace() {
        let called = std::cell::Cell::new(false);
        let out = in_span(
            "step",
            || {
                called.set(true);
                Vec::new()
            },
            async { 7 },
        )
        .await;
        assert_eq!(out, 7);
        assert!(
            !called.get(),
            "attributes are computed only for recorded spans"
        );
        let traced = in_span("step", Vec::new, async {
            Context::current().span().span_context().trace_id()
        })
        .with_context(incoming())
        .await;
        assert_eq!(traced.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    }
}
