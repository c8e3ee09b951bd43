//! The client span of a gRPC call, as upstream's etcd client records it
//! through `otelgrpc.NewClientHandler` (the stats handler
//! `storagebackend/factory/etcd3.go` installs; otelgrpc v0.68 with its
//! default semantic conventions, 1.40): named after the full method
//! (`etcdserverpb.KV/Range`), of kind client, a child of the current span
//! (a root span, sampled as any other, when there is none), with
//! `rpc.method` (the full method), `rpc.system.name` `grpc`,
//! `server.address` and `server.port`; when the call ends,
//! `rpc.response.status_code` (the code's canonical name, `OK` for a
//! success) and, for a failure, an error status with the status message.

use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};

use super::httpconv::split_host_port;

/// otelgrpc's instrumentation scope.
pub const OTELGRPC_SCOPE: &str =
    "go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc";

/// gRPC's `Canceled`: the code of a call given up before it ended.
const CANCELLED: i32 = 1;

/// The span of one gRPC call; ends when [`GrpcClientSpan::ok`] or
/// [`GrpcClientSpan::failed`] records the outcome, or as `CANCELLED`
/// when dropped before (the call was given up).
pub struct GrpcClientSpan {
    cx: Context,
    ended: bool,
}

impl GrpcClientSpan {
    /// Starts the span of a call of `method` (`service/method`, without the
    /// leading slash) to the server at `hostport`.
    pub fn start(method: &'static str, hostport: &str) -> GrpcClientSpan {
        let parent = Context::current();
        if !super::enabled() {
            return GrpcClientSpan {
                cx: parent,
                ended: false,
            };
        }
        let tracer = super::tracer(OTELGRPC_SCOPE);
        let (host, port) = split_host_port(hostport);
        let mut attributes = vec![
            KeyValue::new("rpc.method", method),
            KeyValue::new("rpc.system.name", "grpc"),
            KeyValue::new("server.address", host),
        ];
        if let Some(port) = port {
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
        let span = tracer
            .span_builder(method)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(&tracer, &parent);
        GrpcClientSpan {
            cx: parent.with_span(span),
            ended: false,
        }
    }

    /// Ends the span of a call that succeeded.
    pub fn ok(mut self) {
        self.end(0, None);
    }

    /// Ends the span of a call that failed with the gRPC status `code`
    /// (its number) and `message`.
    pub fn failed(mut self, code: i32, message: String) {
        self.end(code, Some(message));
    }

    fn end(&mut self, code: i32, message: Option<String>) {
        let span = self.cx.span();
        if let Some(message) = message {
            span.set_status(Status::error(message));
        }
        span.set_attribute(KeyValue::new(
            "rpc.response.status_code",
            canonical_code(code),
        ));
        span.end();
        self.ended = true;
    }
}

impl Drop for GrpcClientSpan {
    fn drop(&mut self) {
        if !self.ended {
            self.end(CANCELLED, Some("context canceled".to_owned()));
        }
    }
}

/// otelgrpc's `canonicalString`: the name of a gRPC status code.
pub fn canonical_code(code: i32) -> String {
    let name = match code {
        0 => "OK",
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        other => return format!("CODE({other})"),
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_grpcs_canonical_names() {
        assert_eq!(canonical_code(0), "OK");
        assert_eq!(canonical_code(4), "DEADLINE_EXCEEDED");
        assert_eq!(canonical_code(14), "UNAVAILABLE");
        assert_eq!(canonical_code(99), "CODE(99)");
    }
}
