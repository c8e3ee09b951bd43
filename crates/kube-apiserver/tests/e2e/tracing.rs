//! Traces end to end: the server started with a `--tracing-config-file`
//! exports its spans over OTLP/gRPC to a collector run by the test, with
//! upstream's span names and attributes (the request with otelhttp's HTTP
//! attributes, the filters' latency spans, the REST handler, the admission
//! webhook call and its client span, the writing of the answer, the
//! storage's reads and writes, the watch cache's get, list and watch, the
//! watch server, and on etcd otelgrpc's spans of the etcd requests),
//! continues the trace of a privileged caller's `traceparent` (and only
//! links an unprivileged caller's), and passes the trace on to admission
//! webhooks. Bad configuration files stop startup
//! with upstream's messages.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;

use crate::admission::start_recording_webhook;
use crate::crd_conversion;
use crate::harness::{startup_error, Backend, TestServer};
use crate::support::http::request;

/// One exported span, flattened for assertions.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: BTreeMap<String, String>,
    links: Vec<String>,
    events: Vec<String>,
    kind: i32,
    service: String,
}

impl Span {
    fn attr(&self, key: &str) -> &str {
        self.attributes.get(key).map_or("", String::as_str)
    }
}

#[derive(Default, Clone)]
struct Collector(Arc<Mutex<Vec<Span>>>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.0.lock().expect("spans");
        for resource_spans in request.into_inner().resource_spans {
            let resource = resource_spans.resource.map(|r| attributes(&r.attributes));
            let service = resource
                .and_then(|r| r.get("service.name").cloned())
                .unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                spans.push(Span {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes: attributes(&span.attributes),
                    links: span.links.iter().map(|l| hex(&l.trace_id)).collect(),
                    events: span.events.iter().map(|e| e.name.clone()).collect(),
                    kind: span.kind,
                    service: service.clone(),
                });
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(AnyValue::StringValue(s)) => s.clone(),
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                Some(other) => format!("{other:?}"),
                None => String::new(),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

/// Runs the collector on a free loopback port.
fn start_collector() -> (SocketAddr, Collector) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    let collector = Collector::default();
    let service = TraceServiceServer::new(collector.clone());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
    });
    (addr, collector)
}

impl Collector {
    /// Waits (the exporter batches for 5 s) until a span matches `find`.
    fn wait_for(&self, what: &str, find: impl Fn(&Span) -> bool) -> Span {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(span) = self.0.lock().expect("spans").iter().find(|s| find(s)) {
                return span.clone();
            }
            if Instant::now() > deadline {
                let names: Vec<String> = self
                    .0
                    .lock()
                    .expect("spans")
                    .iter()
                    .map(|s| format!("{} {}", s.name, s.trace_id))
                    .collect();
                panic!("no span {what} among {names:#?}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

fn webhook_configuration(addr: SocketAddr, ca: &str) -> String {
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: traced}}\nwebhooks:\n- name: traced.test.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  clientConfig:\n    url: https://{addr}/validate\n    caBundle: {bundle}\n  rules:\n  - operations: [CREATE]\n    apiGroups: [\"\"]\n    apiVersions: [v1]\n    resources: [configmaps]\n"
    )
}

/// A collector and the `--tracing-config-file` flag of a configuration
/// sampling every request into it (the file lives as long as the dir).
fn traced_to_collector() -> (Collector, tempfile::TempDir, String) {
    let (collector_addr, collector) = start_collector();
    let files = tempfile::tempdir().expect("temp dir");
    let config = files.path().join("tracing.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoint: {collector_addr}\nsamplingRatePerMillion: 1000000\n"
        ),
    )
    .expect("config");
    let flag = format!("--tracing-config-file={}", config.display());
    (collector, files, flag)
}

#[test]
fn spans_reach_the_collector_with_upstreams_names() {
    let (collector, _files, flag) = traced_to_collector();
    let s = TestServer::start_with(&[&flag]);
    let (hook_addr, ca, seen) = start_recording_webhook();
    s.apply_yaml(&webhook_configuration(hook_addr, &ca));

    // The admin (system:masters) continues the caller's trace.
    let traceparent = format!("traceparent: 00-{TRACE_ID}-{PARENT_ID}-01");
    let created = request(
        &s,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[
            &traceparent,
            "Content-Type: application/json",
            "User-Agent: tracing-test/1.0",
        ],
        Some(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"traced"}}"#),
    );
    assert_eq!(created.code, 201, "{}", created.body);
    // Every request before any wait: the exporter sends spans in 5 s batches.
    let rv = created.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    request(&s, "GET", "/api/v1/namespaces/default", &[], None);
    send_reads(&s, &rv);
    let anonymous = anonymous_request(&s);

    let in_trace = |name: &'static str| {
        collector.wait_for(name, move |s| s.name == name && s.trace_id == TRACE_ID)
    };
    let server = in_trace("POST /api/v1/namespaces/{:namespace}/configmaps");
    assert_eq!(server.parent_span_id, PARENT_ID, "{server:#?}");
    assert_eq!(server.service, "apiserver");
    assert_eq!(server.kind, 2, "a server span: {server:#?}");
    let port = s.port.to_string();
    for (key, value) in [
        ("http.target", "/api/v1/namespaces/default/configmaps"),
        ("http.request.method", "POST"),
        ("http.response.status_code", "201"),
        ("user_agent.original", "tracing-test/1.0"),
        ("url.scheme", "https"),
        ("url.path", "/api/v1/namespaces/default/configmaps"),
        ("server.address", "127.0.0.1"),
        ("server.port", port.as_str()),
        ("client.address", "127.0.0.1"),
        ("network.peer.address", "127.0.0.1"),
        ("network.protocol.version", "2.0"),
    ] {
        assert_eq!(server.attr(key), value, "{key}: {server:#?}");
    }
    for size in ["http.request.body.size", "http.response.body.size"] {
        assert!(
            server.attr(size).parse::<u64>().unwrap_or(0) > 0,
            "{size}: {server:#?}"
        );
    }
    let audit_id = server.attr("audit-id").to_owned();
    assert_eq!(audit_id.len(), 36, "{server:#?}");

    // Upstream's filterlatency spans, each around the filters inside it.
    let mut parent = server.span_id.clone();
    for filter in [
        "audit",
        "impersonation",
        "priorityandfairness",
        "authorization",
    ] {
        let span = in_trace(filter);
        assert_eq!(span.parent_span_id, parent, "{span:#?}");
        parent = span.span_id;
    }

    let handler = in_trace("Create");
    assert_eq!(handler.parent_span_id, parent, "{handler:#?}");
    for (key, value) in [
        ("audit-id", audit_id.as_str()),
        ("user-agent", "tracing-test/1.0"),
        ("client", "127.0.0.1"),
        ("verb", "create"),
        ("resource", "configmaps"),
        ("namespace", "default"),
        ("api-version", "v1"),
        ("protocol", "HTTP/2.0"),
    ] {
        assert_eq!(handler.attr(key), value, "{key}: {handler:#?}");
    }

    let webhook = in_trace("Call validating webhook");
    assert_eq!(webhook.attr("configuration"), "traced");
    assert_eq!(webhook.attr("webhook"), "traced.test.example.com");
    assert_eq!(webhook.attr("resource"), "/v1, Resource=configmaps");
    assert_eq!(webhook.attr("operation"), "CREATE");

    // otelhttp's client span of the call, whose context the webhook got.
    let call = in_trace("HTTP POST");
    assert_eq!(call.parent_span_id, webhook.span_id, "{call:#?}");
    assert_eq!(call.kind, 3, "a client span: {call:#?}");
    assert_eq!(
        call.attr("url.full"),
        format!("https://{hook_addr}/validate?timeout=10s")
    );
    assert_eq!(call.attr("http.response.status_code"), "200");
    assert_eq!(call.attr("server.port"), hook_addr.port().to_string());
    let headers = seen.lock().expect("headers").clone();
    let sent: Vec<&str> = headers
        .iter()
        .filter_map(|h| h.get("traceparent").and_then(|v| v.to_str().ok()))
        .collect();
    let expected = format!("00-{TRACE_ID}-{}-01", call.span_id);
    assert!(
        sent.contains(&expected.as_str()),
        "{expected} not in {sent:?}"
    );

    let storage = in_trace("Create etcd3");
    assert_eq!(storage.attr("key"), "/registry/configmaps/default/traced");
    assert_eq!(storage.attr("resource"), "configmaps");
    assert_eq!(storage.attr("audit-id"), audit_id);
    assert_eq!(storage.parent_span_id, handler.span_id, "{storage:#?}");

    // The answer is written in responsewriters' span, under the handler's.
    let written = in_trace("SerializeObject");
    assert_eq!(written.parent_span_id, handler.span_id, "{written:#?}");
    for (key, value) in [
        ("audit-id", audit_id.as_str()),
        ("method", "POST"),
        ("url", "/api/v1/namespaces/default/configmaps"),
        ("protocol", "HTTP/2.0"),
        ("mediaType", "application/json"),
        (
            "encoder",
            r#"{"encodeGV":"v1","encoder":"{\"name\":\"json\",\"pretty\":\"false\",\"strict\":\"false\",\"yaml\":\"false\"}","name":"versioning"}"#,
        ),
    ] {
        assert_eq!(written.attr(key), value, "{key}: {written:#?}");
    }
    assert_eq!(
        written.events,
        ["About to start writing response", "Write call succeeded"],
        "{written:#?}"
    );

    // The admin without a traceparent: the request's span is a child of
    // the authentication filter's. (Upstream's request info reads this
    // path as namespace and name both `default`.)
    let get = collector.wait_for("GET of the namespace", |s| {
        s.name == "GET /api/v1/namespaces/{:namespace}/namespaces/{:name}"
    });
    collector.wait_for("authentication, the root above it", |s| {
        s.name == "authentication" && s.span_id == get.parent_span_id && s.parent_span_id.is_empty()
    });

    reads_and_watches(&s, &collector);
    storage_reads(&collector, &rv);
    anonymous_callers_start_a_new_trace(&collector, &anonymous);
}

const LIST_TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4737";
const WATCH_TRACE: &str = "6bf92f3577b34da6a3ce929d0e0e4738";
const GET_TRACE: &str = "7bf92f3577b34da6a3ce929d0e0e4739";
const CACHED_TRACE: &str = "8bf92f3577b34da6a3ce929d0e0e473a";
const EXACT_TRACE: &str = "9bf92f3577b34da6a3ce929d0e0e473b";

fn get_traced(s: &TestServer, path: &str, trace: &str) {
    let traceparent = format!("traceparent: 00-{trace}-{PARENT_ID}-01");
    let got = request(s, "GET", path, &[&traceparent], None);
    assert_eq!(got.code, 200, "{path}: {}", got.body);
}

/// The reads [`reads_and_watches`] and [`storage_reads`] look at, each in
/// its own trace; `rv` is the revision the exact list is read at.
fn send_reads(s: &TestServer, rv: &str) {
    let configmaps = "/api/v1/namespaces/default/configmaps";
    get_traced(s, configmaps, LIST_TRACE);
    get_traced(s, &format!("{configmaps}/traced"), GET_TRACE);
    get_traced(
        s,
        &format!("{configmaps}/traced?resourceVersion=0"),
        CACHED_TRACE,
    );
    let exact = format!("{configmaps}?limit=1&resourceVersion={rv}&resourceVersionMatch=Exact");
    get_traced(s, &exact, EXACT_TRACE);
    get_traced(
        s,
        &format!("{configmaps}?watch=true&timeoutSeconds=1"),
        WATCH_TRACE,
    );
}

/// A list's `List` and `cacher.GetList` spans, a watch's
/// `WatchServer.HandleHTTP` (and no `List`), and the filters' latency
/// metric.
fn reads_and_watches(s: &TestServer, collector: &Collector) {
    let list = collector.wait_for("List", |s| s.name == "List" && s.trace_id == LIST_TRACE);
    assert_eq!(list.attr("verb"), "list");
    let cached = collector.wait_for("cacher.GetList", |s| {
        s.name == "cacher.GetList" && s.trace_id == LIST_TRACE
    });
    assert_eq!(cached.parent_span_id, list.span_id, "{cached:#?}");
    assert_eq!(cached.attr("type"), "configmaps");
    assert_eq!(
        cached.events,
        ["Ready", "Listed items from cache", "Filtered items"],
        "{cached:#?}"
    );

    let cacher_watch = collector.wait_for("cacher.Watch", |s| {
        s.name == "cacher.Watch" && s.trace_id == WATCH_TRACE
    });
    assert_eq!(cacher_watch.attr("type"), "configmaps", "{cacher_watch:#?}");
    let watch = collector.wait_for("WatchServer.HandleHTTP", |s| {
        s.name == "WatchServer.HandleHTTP" && s.trace_id == WATCH_TRACE
    });
    assert_eq!(watch.attr("mediaType"), "application/json");
    assert_eq!(watch.attr("method"), "GET");
    let spans = collector.0.lock().expect("spans").clone();
    assert!(
        !spans
            .iter()
            .any(|s| s.trace_id == WATCH_TRACE && s.name == "List"),
        "a watch has no List span"
    );

    let metrics = s.ok(&["get", "--raw", "/metrics"]);
    for filter in [
        "authentication",
        "audit",
        "impersonation",
        "priorityandfairness",
        "authorization",
    ] {
        let series =
            format!("apiserver_request_filter_duration_seconds_count{{filter=\"{filter}\"}}");
        assert!(metrics.contains(&series), "no {series}");
    }
}

/// The storage spans of reads: a get from storage (`Get etcd3`) and from
/// the watch cache (`cacher.Get`), each under the `Get` handler, and a list
/// the cache passes to storage (`List(recursive=true) etcd3`).
fn storage_reads(collector: &Collector, rv: &str) {
    let span_of = |name: &'static str, trace: &'static str| {
        collector.wait_for(name, move |s| s.name == name && s.trace_id == trace)
    };
    let handler = span_of("Get", GET_TRACE);
    let read = span_of("Get etcd3", GET_TRACE);
    assert_eq!(read.parent_span_id, handler.span_id, "{read:#?}");
    assert_eq!(read.attr("key"), "/registry/configmaps/default/traced");
    assert_eq!(read.attr("resource"), "configmaps");
    assert_eq!(read.attr("audit-id"), handler.attr("audit-id"));
    assert_eq!(read.events, ["Get call succeeded", "Decode succeeded"]);

    let handler = span_of("Get", CACHED_TRACE);
    let cached = span_of("cacher.Get", CACHED_TRACE);
    assert_eq!(cached.parent_span_id, handler.span_id, "{cached:#?}");
    assert_eq!(cached.attr("key"), "/registry/configmaps/default/traced");
    assert_eq!(cached.attr("resource-version"), "0");

    // A list at an exact resourceVersion is storage's to answer.
    let handler = span_of("List", EXACT_TRACE);
    let list = span_of("List(recursive=true) etcd3", EXACT_TRACE);
    assert_eq!(list.parent_span_id, handler.span_id, "{list:#?}");
    for (key, value) in [
        ("key", "/registry/configmaps/default"),
        ("resourceVersion", rv),
        ("resourceVersionMatch", "Exact"),
        ("limit", "1"),
        ("continue", ""),
    ] {
        assert_eq!(list.attr(key), value, "{key}: {list:#?}");
    }
}

/// An unprivileged caller's request with a `traceparent`: its status.
fn anonymous_request(s: &TestServer) -> String {
    let pki = s.dir.path().join("pki");
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
        .arg(pki.join("ca.crt"))
        .args(["-H", &format!("traceparent: 00-{TRACE_ID}-{PARENT_ID}-01")])
        .arg(format!("https://127.0.0.1:{}/api/v1/namespaces", s.port))
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An unprivileged caller's `traceparent` becomes a link, not the parent.
fn anonymous_callers_start_a_new_trace(collector: &Collector, status: &str) {
    assert_eq!(status, "403");
    let span = collector.wait_for("GET /api/v1/namespaces linked", |s| {
        s.name == "GET /api/v1/namespaces" && s.links.iter().any(|l| l == TRACE_ID)
    });
    assert_ne!(span.trace_id, TRACE_ID, "{span:#?}");
    assert_eq!(span.parent_span_id, "", "{span:#?}");
    assert_eq!(span.attr("http.response.status_code"), "403");
}

/// On etcd, each request to etcd is a client span of otelgrpc's under the
/// storage span that sent it, as upstream's etcd client records them.
#[test]
fn etcd_requests_have_grpc_client_spans() {
    const CREATE_TRACE: &str = "abf92f3577b34da6a3ce929d0e0e473c";
    const GET_TRACE: &str = "bbf92f3577b34da6a3ce929d0e0e473d";
    let (collector, _files, flag) = traced_to_collector();
    let s = Backend::Etcd.start_with(&[&flag]);
    let traced = |method: &str, path: &str, trace: &str, body: Option<&str>| {
        let traceparent = format!("traceparent: 00-{trace}-{PARENT_ID}-01");
        let headers = [traceparent.as_str(), "Content-Type: application/json"];
        request(&s, method, path, &headers, body).code
    };
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"on-etcd"}}"#;
    let path = "/api/v1/namespaces/default/configmaps";
    assert_eq!(traced("POST", path, CREATE_TRACE, Some(body)), 201);
    assert_eq!(
        traced("GET", &format!("{path}/on-etcd"), GET_TRACE, None),
        200
    );
    for (trace, storage, method) in [
        (CREATE_TRACE, "Create etcd3", "etcdserverpb.KV/Txn"),
        (GET_TRACE, "Get etcd3", "etcdserverpb.KV/Range"),
    ] {
        let parent = collector.wait_for(storage, |s| s.name == storage && s.trace_id == trace);
        let call = collector.wait_for(method, |s| s.name == method && s.trace_id == trace);
        assert_eq!(call.parent_span_id, parent.span_id, "{call:#?}");
        assert_eq!(call.kind, 3, "a client span: {call:#?}");
        for (key, value) in [
            ("rpc.method", method),
            ("rpc.system.name", "grpc"),
            ("server.address", "127.0.0.1"),
            ("rpc.response.status_code", "OK"),
        ] {
            assert_eq!(call.attr(key), value, "{key}: {call:#?}");
        }
        assert!(call.attr("server.port").parse::<u16>().is_ok(), "{call:#?}");
    }
}

/// A conversion webhook's call: upstream's `Call conversion webhook` span
/// under the request's, with otelhttp's client span `HTTP POST` in it.
#[test]
fn conversion_webhook_calls_are_traced() {
    const TRACE: &str = "cbf92f3577b34da6a3ce929d0e0e473e";
    let (collector, _files, flag) = traced_to_collector();
    let s = TestServer::start_with(&[&flag]);
    let (addr, ca, _fail) = crd_conversion::start_webhook();
    crd_conversion::install_crd(&s, addr, &ca);
    s.apply_yaml(
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {replicas: 3}\n",
    );
    let traceparent = format!("traceparent: 00-{TRACE}-{PARENT_ID}-01");
    let path = "/apis/example.com/v2/namespaces/default/gadgets/g1";
    let got = request(&s, "GET", path, &[&traceparent], None);
    assert_eq!(got.code, 200, "{}", got.body);
    let in_trace = |name: &'static str| {
        collector.wait_for(name, move |s| s.name == name && s.trace_id == TRACE)
    };
    let call = in_trace("Call conversion webhook");
    for (key, value) in [
        ("custom-resource-definition", "gadgets.example.com"),
        ("desired-api-version", "example.com/v2"),
        ("object-count", "1"),
    ] {
        assert_eq!(call.attr(key), value, "{key}: {call:#?}");
    }
    assert_eq!(call.attr("UID").len(), 36, "{call:#?}");
    assert_eq!(call.events, ["Request completed"], "{call:#?}");
    let post = in_trace("HTTP POST");
    assert_eq!(post.parent_span_id, call.span_id, "{post:#?}");
    assert_eq!(post.kind, 3, "a client span: {post:#?}");
    assert_eq!(post.attr("url.full"), format!("https://{addr}/convert"));
    assert_eq!(post.attr("http.response.status_code"), "200");
}

#[test]
fn bad_tracing_configuration_stops_startup_as_upstream() {
    let files = tempfile::tempdir().expect("temp dir");
    let flag = |name: &str, body: Option<&str>| {
        let path = files.path().join(name);
        if let Some(body) = body {
            std::fs::write(&path, body).expect("config");
        }
        format!("--tracing-config-file={}", path.display())
    };
    let missing = startup_error(&[&flag("missing.yaml", None)]);
    assert!(
        missing.contains(&format!(
            "tracing-config-file {} does not exist",
            files.path().join("missing.yaml").display()
        )),
        "{missing}"
    );
    let header = "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n";
    for (name, body, expected) in [
        (
            "rate.yaml",
            format!("{header}samplingRatePerMillion: -1\n"),
            "failed to validate tracing configuration: samplingRatePerMillion: Invalid value: -1: sampling rate must be positive",
        ),
        (
            "scheme.yaml",
            format!("{header}endpoint: https://collector:4317\n"),
            "failed to validate tracing configuration: endpoint: Invalid value: \"https://collector:4317\": unsupported scheme: https.  Options are none, dns, unix, or unix-abstract.",
        ),
        (
            "unknown.yaml",
            format!("{header}endpoints: collector:4317\n"),
            "failed to read tracing config: unable to decode tracing configuration data: strict decoding error: unknown field \"endpoints\"",
        ),
        (
            "kind.yaml",
            "apiVersion: apiserver.config.k8s.io/v1\nkind: Tracing\n".to_owned(),
            "failed to read tracing config: unable to decode tracing configuration data: no kind \"Tracing\" is registered for version \"apiserver.config.k8s.io/v1\"",
        ),
    ] {
        let stderr = startup_error(&[&flag(name, Some(&body))]);
        assert!(stderr.contains(expected), "{name}: {stderr}");
    }
}
