use std::sync::Mutex;
use std::time::Duration;

use apimachinery::request_info::RequestInfoResolver;
use axum::extract::State as AxumState;
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use http::StatusCode;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tower::util::BoxCloneSyncService;
use tower::ServiceExt;

use super::*;
use crate::filters::request_info;
use crate::server::{Config, DiscoveryRegistry, NotFoundDelegate};

fn info(method: &str, uri: &str) -> RequestInfo {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    RequestInfoResolver::default()
        .resolve(method, path, query)
        .unwrap()
}

fn verb_of(method: Method, uri: &str, content_type: Option<&'static str>) -> Verb {
    let info = info(method.as_str(), uri);
    let mut headers = HeaderMap::new();
    if let Some(ct) = content_type {
        headers.insert(header::CONTENT_TYPE, http::HeaderValue::from_static(ct));
    }
    reported_verb(&method, &headers, &info, Scope::of(&info))
}

#[test]
fn verbs_follow_upstream() {
    let pods = "/api/v1/namespaces/ns/pods";
    assert_eq!(verb_of(Method::GET, pods, None), Verb::List);
    assert_eq!(verb_of(Method::GET, "/api/v1/pods", None), Verb::List);
    assert_eq!(verb_of(Method::GET, &format!("{pods}/p"), None), Verb::Get);
    assert_eq!(verb_of(Method::HEAD, &format!("{pods}/p"), None), Verb::Get);
    assert_eq!(
        verb_of(Method::GET, &format!("{pods}?watch=true"), None),
        Verb::Watch
    );
    assert_eq!(
        verb_of(Method::GET, "/api/v1/watch/namespaces/ns/pods", None),
        Verb::Watch
    );
    assert_eq!(
        verb_of(Method::GET, &format!("{pods}?watch=false"), None),
        Verb::List
    );
    assert_eq!(verb_of(Method::POST, pods, None), Verb::Post);
    assert_eq!(verb_of(Method::PUT, &format!("{pods}/p"), None), Verb::Put);
    assert_eq!(
        verb_of(Method::DELETE, &format!("{pods}/p"), None),
        Verb::Delete
    );
    // Upstream reports a delete-collection by its method.
    assert_eq!(verb_of(Method::DELETE, pods, None), Verb::Delete);
    let merge = Some("application/merge-patch+json");
    assert_eq!(
        verb_of(Method::PATCH, &format!("{pods}/p"), merge),
        Verb::Patch
    );
    let apply = Some("application/apply-patch+yaml");
    assert_eq!(
        verb_of(Method::PATCH, &format!("{pods}/p"), apply),
        Verb::Apply
    );
    assert_eq!(
        verb_of(Method::GET, &format!("{pods}/p/log"), None),
        Verb::Connect
    );
    assert_eq!(
        verb_of(Method::POST, &format!("{pods}/p/exec"), None),
        Verb::Connect
    );
    assert_eq!(
        verb_of(Method::GET, &format!("{pods}/p/status"), None),
        Verb::Get
    );
    assert_eq!(verb_of(Method::GET, "/healthz", None), Verb::Get);
    assert_eq!(verb_of(Method::OPTIONS, pods, None), Verb::Other);
}

#[test]
fn scopes_follow_upstream() {
    let scope = |m: &str, uri: &str| Scope::of(&info(m, uri));
    assert_eq!(
        scope("GET", "/api/v1/namespaces/ns/pods/p"),
        Scope::Resource
    );
    // A create is scoped to the object it makes.
    assert_eq!(scope("POST", "/api/v1/namespaces/ns/pods"), Scope::Resource);
    assert_eq!(scope("GET", "/api/v1/namespaces/ns/pods"), Scope::Namespace);
    assert_eq!(scope("GET", "/api/v1/pods"), Scope::Cluster);
    assert_eq!(
        scope("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
        Scope::Cluster
    );
    assert_eq!(scope("GET", "/healthz"), Scope::None);
}

#[test]
fn dry_run_label() {
    assert_eq!(dry_run(None), DryRun::No);
    assert_eq!(dry_run(Some("limit=5")), DryRun::No);
    assert_eq!(dry_run(Some("dryRun=All")), DryRun::All);
    assert_eq!(dry_run(Some("a=b&dryRun=All&dryRun=All")), DryRun::All);
    assert_eq!(dry_run(Some("dryRun=Some")), DryRun::Invalid);
    assert_eq!(dry_run(Some("dryRun=All&dryRun=")), DryRun::Invalid);
}

#[test]
fn request_kinds() {
    let mutating = |m: &str, uri: &str| is_mutating(&info(m, uri));
    assert!(!mutating("GET", "/api/v1/pods"));
    assert!(!mutating("GET", "/api/v1/namespaces/ns/pods/p"));
    assert!(!mutating("GET", "/api/v1/pods?watch=1"));
    assert!(!mutating("GET", "/healthz"));
    assert!(mutating("POST", "/api/v1/namespaces/ns/pods"));
    assert!(mutating("DELETE", "/api/v1/namespaces/ns/pods"));
    assert!(mutating("PATCH", "/api/v1/namespaces/ns/pods/p"));
}

type WatchFeed = Arc<Mutex<Option<mpsc::Receiver<Result<Bytes, std::io::Error>>>>>;

/// Answers by path: `/missing` paths 404, creates 201, watches stream what
/// the test feeds them, anything else 200 with a 5-byte body.
async fn handler(AxumState(feed): AxumState<WatchFeed>, req: Request<Body>) -> Response<Body> {
    let watch = req.uri().query().is_some_and(|q| q.contains("watch=true"));
    let status = if req.uri().path().contains("missing") {
        StatusCode::NOT_FOUND
    } else if req.method() == Method::POST {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let body = match feed.lock().unwrap().take().filter(|_| watch) {
        Some(rx) => Body::from_stream(ReceiverStream::new(rx)),
        None => Body::from("hello"),
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp
}

fn router(metrics: Arc<Metrics>, feed: WatchFeed) -> Router {
    let chain = Next::new(BoxCloneSyncService::new(
        Router::new().fallback(any(handler)).with_state(feed),
    ))
    .layer(metrics, filter)
    .layer(
        Arc::new(RequestInfoResolver::default()),
        request_info::filter,
    );
    Router::new().fallback_service(chain)
}

async fn send(router: &Router, method: Method, uri: &str) -> Response<Body> {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .body(Body::empty())
        .unwrap();
    router.clone().oneshot(req).await.unwrap()
}

/// Sends a request and reads its whole body, which completes it.
async fn call(router: &Router, method: Method, uri: &str) -> StatusCode {
    let resp = send(router, method, uri).await;
    let status = resp.status();
    resp.into_body().collect().await.unwrap();
    status
}

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

#[tokio::test]
async fn counts_requests_with_upstream_labels() {
    let metrics = Arc::new(Metrics::new());
    let feed: WatchFeed = Arc::default();
    let r = router(metrics.clone(), feed);
    assert_eq!(
        call(&r, Method::GET, "/api/v1/namespaces/ns/pods").await,
        StatusCode::OK
    );
    assert_eq!(
        call(&r, Method::GET, "/api/v1/namespaces/ns/pods").await,
        StatusCode::OK
    );
    let create = "/apis/apps/v1/namespaces/ns/deployments?dryRun=All";
    assert_eq!(call(&r, Method::POST, create).await, StatusCode::CREATED);
    let missing = "/api/v1/namespaces/ns/pods/missing";
    assert_eq!(call(&r, Method::GET, missing).await, StatusCode::NOT_FOUND);
    call(&r, Method::GET, "/healthz").await;
    call(&r, Method::GET, "/missing/path").await;

    let text = metrics.render().unwrap();
    let list = r#"verb="LIST",dry_run="",group="",version="v1",resource="pods",subresource="",scope="namespace",component="apiserver""#;
    assert!(
        has_line(&text, "# TYPE apiserver_request_total counter"),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            &format!("apiserver_request_total{{{list},code=\"200\"}} 2")
        ),
        "{text}"
    );
    let post = r#"verb="POST",dry_run="All",group="apps",version="v1",resource="deployments",subresource="",scope="resource",component="apiserver""#;
    assert!(
        has_line(
            &text,
            &format!("apiserver_request_total{{{post},code=\"201\"}} 1")
        ),
        "{text}"
    );
    let get = r#"verb="GET",dry_run="",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver""#;
    assert!(
        has_line(
            &text,
            &format!("apiserver_request_total{{{get},code=\"404\"}} 1")
        ),
        "{text}"
    );
    let healthz = r#"verb="GET",dry_run="",group="",version="",resource="",subresource="/healthz",scope="",component="""#;
    assert!(
        has_line(
            &text,
            &format!("apiserver_request_total{{{healthz},code=\"200\"}} 1")
        ),
        "{text}"
    );
    // Unknown paths do not name a series each.
    assert!(!text.contains("/missing/path"), "{text}");
    let unknown = r#"verb="GET",dry_run="",group="",version="",resource="",subresource="",scope="",component="""#;
    assert!(
        has_line(
            &text,
            &format!("apiserver_request_total{{{unknown},code=\"404\"}} 1")
        ),
        "{text}"
    );

    assert!(
        has_line(&text, "# TYPE apiserver_request_duration_seconds histogram"),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            &format!("apiserver_request_duration_seconds_count{{{list}}} 2")
        ),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            &format!("apiserver_request_duration_seconds_bucket{{le=\"60.0\",{list}}} 2")
        ),
        "{text}"
    );
    // Read responses are sized: two 5-byte bodies, both under 1 KB.
    let sized = list.replace(r#"dry_run="","#, "");
    assert!(
        has_line(
            &text,
            &format!("apiserver_response_sizes_sum{{{sized}}} 10.0")
        ),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            &format!("apiserver_response_sizes_bucket{{le=\"1000.0\",{sized}}} 2")
        ),
        "{text}"
    );
    assert!(
        !text.contains(r#"apiserver_response_sizes_count{verb="POST""#),
        "{text}"
    );
    // Every non-streaming request has finished.
    assert!(
        has_line(
            &text,
            r#"apiserver_current_inflight_requests{request_kind="readOnly"} 0"#
        ),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            r#"apiserver_current_inflight_requests{request_kind="mutating"} 0"#
        ),
        "{text}"
    );
}

#[tokio::test]
async fn watches_count_while_streaming_and_when_done() {
    let metrics = Arc::new(Metrics::new());
    let (tx, rx) = mpsc::channel(4);
    let feed: WatchFeed = Arc::new(Mutex::new(Some(rx)));
    let r = router(metrics.clone(), feed);
    let resp = send(&r, Method::GET, "/api/v1/namespaces/ns/pods?watch=true").await;
    tx.send(Ok(Bytes::from_static(b"event"))).await.unwrap();
    let mut body = resp.into_body();
    let frame = body.frame().await.unwrap().unwrap();
    assert_eq!(frame.into_data().unwrap(), "event");

    let labels = r#"verb="WATCH",group="",version="v1",resource="pods",subresource="",scope="namespace",component="apiserver""#;
    let open = metrics.render().unwrap();
    assert!(
        has_line(
            &open,
            &format!("apiserver_longrunning_requests{{{labels}}} 1")
        ),
        "{open}"
    );
    assert!(
        !open.contains(r#"apiserver_request_total{verb="WATCH""#),
        "{open}"
    );

    drop(tx);
    assert!(body.frame().await.is_none());
    drop(body);
    let done = metrics.render().unwrap();
    assert!(
        has_line(
            &done,
            &format!("apiserver_longrunning_requests{{{labels}}} 0")
        ),
        "{done}"
    );
    let counted = labels.replace(r#"verb="WATCH","#, r#"verb="WATCH",dry_run="","#);
    assert!(
        has_line(
            &done,
            &format!("apiserver_request_total{{{counted},code=\"200\"}} 1")
        ),
        "{done}"
    );
}

#[tokio::test]
async fn dropped_response_still_counts() {
    let metrics = Arc::new(Metrics::new());
    let r = router(metrics.clone(), Arc::default());
    // The client goes away without reading the body.
    drop(send(&r, Method::GET, "/api/v1/pods").await);
    let text = metrics.render().unwrap();
    let list = r#"verb="LIST",dry_run="",group="",version="v1",resource="pods",subresource="",scope="cluster",component="apiserver",code="200""#;
    assert!(
        has_line(&text, &format!("apiserver_request_total{{{list}}} 1")),
        "{text}"
    );
}

/// The whole chain: the layer sits in
/// `server::handler_chain::build_handler_chain`, and `/metrics` serves the
/// text format with its content type.
#[tokio::test]
async fn metrics_endpoint_serves_the_chain_metrics() {
    let config = Config {
        request_timeout: Duration::from_secs(60),
        min_request_timeout: Duration::from_secs(1800),
        max_requests_inflight: 400,
        max_mutating_requests_inflight: 200,
        enable_priority_and_fairness: true,
        livez_grace_period: Duration::ZERO,
        shutdown_delay: Duration::ZERO,
        shutdown_send_retry_after: false,
        external_address: "127.0.0.1:6443".to_owned(),
        health_checks: Vec::new(),
        authentication: Default::default(),
        authorization_modes: vec![crate::filters::authorization::AuthorizationMode::AlwaysAllow],
        version: serde_json::json!({}),
        discovery: DiscoveryRegistry::default(),
        cors_allowed_origins: Vec::new(),
        hsts_directives: Vec::new(),
        enable_profiling: false,
        debug_socket_path: None,
        watch_list: true,
        response_compression: true,
        audit: None,
    }
    .complete()
    .expect("a valid configuration");
    let r = config
        .new_server("test", &NotFoundDelegate)
        .prepare_run()
        .router();
    assert_eq!(call(&r, Method::GET, "/version").await, StatusCode::OK);
    let resp = send(&r, Method::GET, "/metrics").await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()[header::CONTENT_TYPE],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let text = std::str::from_utf8(&body).unwrap();
    let version = r#"verb="GET",dry_run="",group="",version="",resource="",subresource="/version",scope="",component="",code="200""#;
    assert!(
        has_line(text, &format!("apiserver_request_total{{{version}}} 1")),
        "{text}"
    );
    // The scrape itself is still in flight.
    assert!(
        has_line(
            text,
            r#"apiserver_current_inflight_requests{request_kind="readOnly"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("process_start_time_seconds ")),
        "{text}"
    );
}
