//! The audit filters in a small chain (request info, a fixed user, audit)
//! writing to the real log backend.

use std::path::Path;
use std::time::Duration;

use axum::Router;
use serde_json::{json, Value};
use tower::util::BoxCloneSyncService;
use tower::ServiceExt;

use super::*;
use crate::audit::log::{Format, LogBackend, LogConfig};
use crate::audit::{Mode, Policy};
use crate::filters::request_info;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/healthz*"]
  - level: RequestResponse
    resources: [{group: "", resources: ["configmaps"]}]
    omitManagedFields: true
  - level: Request
    verbs: ["watch"]
  - level: Metadata
"#;

fn auditor(dir: &Path) -> Arc<Auditor> {
    let policy = Policy::from_bytes(POLICY.as_bytes(), "p").unwrap_or_else(|e| panic!("{e}"));
    let log = LogBackend::start(LogConfig {
        path: dir.join("audit.log"),
        max_age_days: 0,
        max_backups: 0,
        max_size_mb: 0,
        format: Format::Json,
        mode: Mode::Blocking,
        truncate: None,
        compress: false,
    })
    .unwrap_or_else(|e| panic!("{e}"));
    Arc::new(Auditor {
        policy,
        backends: vec![Arc::new(log)],
    })
}

async fn as_alice(mut req: Request<Body>, next: Next) -> Response<Body> {
    if req.headers().contains_key("x-refuse") {
        return Response::builder()
            .status(401)
            .body(Body::empty())
            .unwrap_or_default();
    }
    let mut alice = UserInfo::anonymous();
    alice.name = "alice".into();
    alice.groups = vec!["system:authenticated".into()];
    req.extensions_mut().insert(Arc::new(alice));
    next.run(req).await
}

async fn handler(req: Request<Body>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let watch = req.uri().query().is_some_and(|q| q.contains("watch=true"));
    let body = read_body(req.into_body()).await.unwrap_or_default();
    if path.ends_with("/boom") {
        panic!("boom");
    }
    if path.ends_with("/missing") {
        let status = json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"configmaps \"missing\" not found","reason":"NotFound",
            "details":{"name":"missing","kind":"configmaps"},"code":404});
        return response::respond(
            http::StatusCode::NOT_FOUND,
            Bytes::from(status.to_string()),
            Encoding::Json,
        );
    }
    if watch {
        return Response::new(Body::from("{\"type\":\"ADDED\"}\n"));
    }
    let mut obj: Value = serde_json::from_slice(&body).unwrap_or_else(|_| json!({}));
    obj["metadata"]["uid"] = json!("u-1");
    response::respond(
        http::StatusCode::CREATED,
        Bytes::from(obj.to_string()),
        Encoding::Json,
    )
}

fn router(auditor: AuditState) -> Next {
    Next::new(BoxCloneSyncService::new(Router::new().fallback(handler)))
        .layer(auditor.clone(), filter)
        .layer_fn(as_alice)
        .layer(auditor, init)
        .layer(
            Arc::new(apimachinery::request_info::RequestInfoResolver::default()),
            request_info::filter,
        )
}

async fn events(dir: &Path, want: usize) -> Vec<Value> {
    for _ in 0..200 {
        let text = std::fs::read_to_string(dir.join("audit.log")).unwrap_or_default();
        let events: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if events.len() >= want {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("fewer than {want} audit events");
}

async fn send(router: &Next, req: Request<Body>) -> Response<Body> {
    router
        .clone()
        .oneshot(req)
        .await
        .unwrap_or_else(|e| match e {})
}

#[tokio::test]
async fn create_at_request_response_records_both_objects() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let r = router(Some(auditor(dir.path())));
    let body = json!({"apiVersion":"v1","kind":"ConfigMap",
        "metadata":{"name":"cm1","managedFields":[{"manager":"kubectl"}]},"data":{"k":"v"}});
    let req = Request::post("/api/v1/namespaces/default/configmaps?fieldManager=kubectl")
        .header("content-type", "application/json")
        .header("user-agent", "kubectl/v1.32.0")
        .body(Body::from(body.to_string()))
        .unwrap_or_default();
    let resp = send(&r, req).await;
    assert_eq!(resp.status(), 201);
    let id = resp
        .headers()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    // The handler still got the whole body.
    let echoed = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    assert!(String::from_utf8_lossy(&echoed).contains("\"k\":\"v\""));
    let evs = events(dir.path(), 2).await;
    let stages: Vec<&str> = evs
        .iter()
        .map(|e| e["stage"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(stages, ["RequestReceived", "ResponseComplete"]);
    let done = &evs[1];
    assert_eq!(done["auditID"], id.as_str());
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["verb"], "create");
    assert_eq!(done["user"]["username"], "alice");
    assert_eq!(done["userAgent"], "kubectl/v1.32.0");
    assert_eq!(
        done["requestURI"],
        "/api/v1/namespaces/default/configmaps?fieldManager=kubectl"
    );
    assert_eq!(
        done["objectRef"],
        json!({"resource":"configmaps","namespace":"default","name":"cm1","apiVersion":"v1"})
    );
    assert_eq!(done["responseStatus"], json!({"metadata":{},"code":201}));
    assert_eq!(done["requestObject"]["data"], json!({"k":"v"}));
    assert!(done["requestObject"]["metadata"]
        .get("managedFields")
        .is_none());
    assert_eq!(done["responseObject"]["metadata"]["uid"], "u-1");
    assert!(evs[0].get("responseStatus").is_none());
}

#[tokio::test]
async fn metadata_level_keeps_bodies_out_but_records_error_status() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let r = router(Some(auditor(dir.path())));
    let get = Request::get("/apis/apps/v1/namespaces/ns1/deployments/missing")
        .header("audit-id", "client-chosen")
        .body(Body::empty())
        .unwrap_or_default();
    let resp = send(&r, get).await;
    assert_eq!(resp.status(), 404);
    assert_eq!(
        resp.headers().get("audit-id").and_then(|v| v.to_str().ok()),
        Some("client-chosen")
    );
    let health = Request::get("/healthz/etcd")
        .body(Body::empty())
        .unwrap_or_default();
    assert!(send(&r, health).await.headers().contains_key("audit-id"));
    let evs = events(dir.path(), 2).await;
    assert_eq!(evs.len(), 2, "/healthz is not audited: {evs:?}");
    let done = &evs[1];
    assert_eq!(done["auditID"], "client-chosen");
    assert_eq!(done["level"], "Metadata");
    assert_eq!(done["responseStatus"]["reason"], "NotFound");
    assert_eq!(done["responseStatus"]["code"], 404);
    assert!(done.get("requestObject").is_none() && done.get("responseObject").is_none());
}

#[tokio::test]
async fn watch_logs_response_started_then_complete_when_the_stream_ends() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let r = router(Some(auditor(dir.path())));
    let watch = Request::get("/api/v1/namespaces/default/pods?watch=true")
        .body(Body::empty())
        .unwrap_or_default();
    let resp = send(&r, watch).await;
    let evs = events(dir.path(), 2).await;
    assert_eq!(evs[1]["stage"], "ResponseStarted");
    assert_eq!(evs[1]["verb"], "watch");
    let _ = axum::body::to_bytes(resp.into_body(), 1 << 20).await;
    let evs = events(dir.path(), 3).await;
    assert_eq!(evs[2]["stage"], "ResponseComplete");
    assert_eq!(evs[2]["responseStatus"]["code"], 200);
}

#[tokio::test]
async fn refused_credentials_are_audited_without_a_user() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let r = router(Some(auditor(dir.path())));
    let req = Request::get("/api/v1/namespaces")
        .header("x-refuse", "1")
        .body(Body::empty())
        .unwrap_or_default();
    assert_eq!(send(&r, req).await.status(), 401);
    let evs = events(dir.path(), 2).await;
    let stages: Vec<&str> = evs
        .iter()
        .map(|e| e["stage"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(stages, ["ResponseStarted", "ResponseComplete"]);
    assert_eq!(evs[1]["responseStatus"]["code"], 401);
    assert_eq!(evs[1]["user"], json!({}));
}

#[tokio::test]
async fn without_auditing_only_the_id_header_is_added() {
    let r = router(None);
    let req = Request::get("/api/v1/namespaces")
        .body(Body::empty())
        .unwrap_or_default();
    let resp = send(&r, req).await;
    let id = resp
        .headers()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id:?}");
}

#[tokio::test]
async fn metrics_count_levels_events_and_rejections() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let r = router(Some(auditor(dir.path())));
    let get = |uri: &str| Request::get(uri).body(Body::empty()).unwrap_or_default();
    send(&r, get("/healthz")).await;
    send(&r, get("/api/v1/namespaces/default/pods/p1")).await;
    events(dir.path(), 2).await;
    let mut registry = prometheus_client::registry::Registry::default();
    metrics::global().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .unwrap_or_else(|e| panic!("{e}"));
    // Each test runs in its own process, so the counts are this test's.
    for line in [
        "apiserver_audit_level_total{level=\"None\"} 1",
        "apiserver_audit_level_total{level=\"Metadata\"} 1",
        "apiserver_audit_event_total 2",
        "apiserver_audit_requests_rejected_total 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
}

#[tokio::test]
async fn a_panicking_handler_is_audited_at_the_panic_stage() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let r = router(Some(auditor(dir.path())));
    let req = Request::get("/api/v1/namespaces/default/pods/boom")
        .body(Body::empty())
        .unwrap_or_default();
    let outcome = tokio::spawn(async move { send(&r, req).await }).await;
    assert!(outcome.is_err_and(|e| e.is_panic()), "the panic goes on");
    let events = events(dir.path(), 2).await;
    let panicked = events.last().cloned().unwrap_or_default();
    assert_eq!(panicked["stage"], "Panic");
    assert_eq!(panicked["responseStatus"]["code"], 500);
    assert_eq!(panicked["responseStatus"]["reason"], "InternalError");
    assert_eq!(
        panicked["responseStatus"]["message"],
        "APIServer panic'd: boom"
    );
}

#[test]
fn bodies_decode_by_content_type() {
    let yaml = decode_body(Some("application/yaml"), b"metadata:\n  name: x\n");
    assert_eq!(yaml, Some(json!({"metadata": {"name": "x"}})));
    let json = decode_body(Some("application/json; charset=utf-8"), b"{\"a\":1}");
    assert_eq!(json, Some(json!({"a": 1})));
    assert_eq!(decode_body(None, b""), None);
}
