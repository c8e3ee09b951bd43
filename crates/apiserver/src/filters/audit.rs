//! Auditing in the handler chain (upstream's `WithAuditInit`, `WithAudit`
//! and `WithFailedAuthenticationAudit`):
//!
//! * [`init`] (outside authentication) gives every request its audit ID
//!   (the client's `Audit-ID` header or a new UUID), returns it in the
//!   `Audit-Id` response header, and audits requests refused with 401.
//! * [`filter`] (after authentication, before impersonation and
//!   authorization) evaluates the policy and writes the events: at
//!   RequestReceived, at ResponseStarted for long-running requests (the
//!   watch's ResponseComplete follows when its stream ends), at
//!   ResponseComplete, or at Panic. Bodies are read only when the level
//!   records them (and for a create's object name).

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use bytes::Bytes;
use futures::FutureExt;
use http::{HeaderValue, Request, Response};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde_json::Value;

use super::authorization::attributes;
use super::handler::Next;
use super::max_in_flight::is_long_running;
use crate::audit::event::{MicroTime, ResponseStatus};
use crate::audit::request::{complete_object_ref, log_request_metadata, omit_managed_fields};
use crate::audit::{
    metrics, AuditContext, Auditor, Event, Level, RequestAuditConfig, Stage, HEADER_AUDIT_ID,
};
use crate::authentication::user::UserInfo;
use crate::endpoints::body;
use crate::endpoints::handlers::read_body;
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;

/// The server's auditing, if configured.
pub type AuditState = Option<Arc<Auditor>>;

/// A request's audit ID.
#[derive(Debug, Clone)]
pub struct AuditId(pub Arc<str>);

/// Set once the request reached [`filter`], so [`init`] knows a 401 came
/// from authentication.
#[derive(Debug, Default)]
struct Reached(AtomicBool);

pub async fn init(
    State(auditor): State<AuditState>,
    mut req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let id: Arc<str> = req
        .headers()
        .get(HEADER_AUDIT_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map_or_else(|| uuid::Uuid::new_v4().to_string().into(), Into::into);
    req.extensions_mut().insert(AuditId(id.clone()));
    let Some(auditor) = auditor else {
        return with_id_header(next.run(req).await, &id);
    };
    let reached = Arc::new(Reached::default());
    req.extensions_mut().insert(reached.clone());
    // Authentication may annotate the events (legacy tokens), also those
    // of a refused request.
    let ctx = Arc::new(AuditContext::default());
    req.extensions_mut().insert(ctx.clone());
    let info = req.extensions().get::<Arc<RequestInfo>>().cloned();
    let received = MicroTime::now();
    // What a failed-authentication event needs of the request, which the
    // chain consumes: its URI, the client-address and agent headers, the peer.
    let mut probe = Request::new(());
    *probe.uri_mut() = req.uri().clone();
    for name in ["user-agent", "x-forwarded-for", "x-real-ip"] {
        if let Some(v) = req.headers().get(name) {
            probe.headers_mut().insert(name, v.clone());
        }
    }
    if let Some(c) = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
    {
        probe.extensions_mut().insert(*c);
    }
    let resp = with_id_header(next.run(req).await, &id);
    if resp.status() == http::StatusCode::UNAUTHORIZED && !reached.0.load(Ordering::Relaxed) {
        if let Some(info) = info {
            audit_failed_authentication(&auditor, &probe, &info, id, received, &ctx).await;
        }
    }
    resp
}

fn with_id_header(mut resp: Response<Body>, id: &str) -> Response<Body> {
    if let Ok(v) = HeaderValue::from_str(id) {
        resp.headers_mut().insert(HEADER_AUDIT_ID, v);
    }
    resp
}

/// Upstream audits refused credentials with an empty user at the levels
/// the policy gives such requests.
async fn audit_failed_authentication(
    auditor: &Auditor,
    req: &Request<()>,
    info: &RequestInfo,
    id: Arc<str>,
    received: MicroTime,
    ctx: &AuditContext,
) {
    // No identity: rules naming users or groups do not match.
    let nobody = UserInfo::default();
    let rac = auditor.policy.evaluate(&attributes(&nobody, info));
    metrics::global().observe_level(rac.level);
    if rac.level == Level::None {
        return;
    }
    let mut ev = Event::new(rac.level, id.to_string());
    ev.request_received_timestamp = received;
    log_request_metadata(&mut ev, req, info, &nobody);
    ev.response_status = Some(ResponseStatus {
        message: "Authentication failed".into(),
        code: 401,
        ..ResponseStatus::default()
    });
    for stage in [Stage::ResponseStarted, Stage::ResponseComplete] {
        emit(auditor, &rac, &mut ev, Some(ctx), stage).await;
    }
}

/// Writes `ev` at `stage` unless the policy omits it; false when a
/// backend refused it.
async fn emit(
    auditor: &Auditor,
    rac: &RequestAuditConfig,
    ev: &mut Event,
    ctx: Option<&AuditContext>,
    stage: Stage,
) -> bool {
    if rac.omits(stage) {
        return true;
    }
    metrics::global().observe_event();
    if let Some(ctx) = ctx {
        ctx.apply(ev);
    }
    ev.stage = stage;
    ev.stage_timestamp = MicroTime::now();
    auditor.process(ev).await
}

fn decoded(
    content_type: Option<&HeaderValue>,
    body: &[u8],
    rac: &RequestAuditConfig,
) -> Option<serde_json::Value> {
    let mut obj = decode_body(content_type.and_then(|v| v.to_str().ok()), body)?;
    if rac.omit_managed_fields {
        omit_managed_fields(&mut obj);
    }
    Some(obj)
}

pub async fn filter(
    State(auditor): State<AuditState>,
    mut req: Request<Body>,
    next: Next,
) -> Response<Body> {
    if let Some(reached) = req.extensions().get::<Arc<Reached>>() {
        reached.0.store(true, Ordering::Relaxed);
    }
    let Some(auditor) = auditor else {
        return next.run(req).await;
    };
    let info = req.extensions().get::<Arc<RequestInfo>>().cloned();
    let user = req.extensions().get::<Arc<UserInfo>>().cloned();
    let (Some(info), Some(user)) = (info, user) else {
        return next.run(req).await;
    };
    let rac = auditor.policy.evaluate(&attributes(&user, &info));
    metrics::global().observe_level(rac.level);
    if rac.level == Level::None {
        return next.run(req).await;
    }
    let id = req
        .extensions()
        .get::<AuditId>()
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), |a| a.0.to_string());
    let mut ev = Event::new(rac.level, id);
    log_request_metadata(&mut ev, &req, &info, &user);
    let ctx = match req.extensions().get::<Arc<AuditContext>>() {
        Some(ctx) => ctx.clone(),
        None => {
            let ctx = Arc::new(AuditContext::default());
            req.extensions_mut().insert(ctx.clone());
            ctx
        }
    };
    // The body is read here only when the event records it, or for a
    // create's object name (upstream fills it in from the decoded object).
    if rac.level >= Level::Request || info.verb == "create" {
        let (parts, body) = req.into_parts();
        let bytes = match read_body(body).await {
            Ok(b) => b,
            Err(e) => {
                ev.response_status = Some(ResponseStatus::code(e.code));
                emit(&auditor, &rac, &mut ev, Some(&ctx), Stage::ResponseComplete).await;
                return response::error(&e, Encoding::Json);
            }
        };
        if let Some(obj) = decoded(parts.headers.get(http::header::CONTENT_TYPE), &bytes, &rac) {
            complete_object_ref(&mut ev, &obj);
            if rac.level >= Level::Request {
                ev.request_object = Some(obj);
            }
        }
        req = Request::from_parts(parts, Body::from(bytes));
    }
    if !emit(&auditor, &rac, &mut ev, Some(&ctx), Stage::RequestReceived).await {
        metrics::global().request_rejected();
        let err = ApiError::internal_error("failed to store audit event");
        return response::error(&err, Encoding::Json);
    }
    let long_running = is_long_running(&info);
    let resp = match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(panic) => {
            ev.response_status = Some(ResponseStatus {
                status: "Failure".into(),
                reason: "InternalError".into(),
                message: format!("APIServer panic'd: {}", panic_reason(&*panic)),
                code: 500,
                ..ResponseStatus::default()
            });
            emit(&auditor, &rac, &mut ev, Some(&ctx), Stage::Panic).await;
            std::panic::resume_unwind(panic);
        }
    };
    ev.response_status = Some(ResponseStatus::code(resp.status().as_u16()));
    if long_running {
        emit(&auditor, &rac, &mut ev, Some(&ctx), Stage::ResponseStarted).await;
        let (parts, body) = resp.into_parts();
        let body = CompletingBody {
            inner: body,
            done: Some(Completion {
                auditor,
                rac,
                ev,
                ctx,
            }),
        };
        return Response::from_parts(parts, Body::new(body));
    }
    let resp = record_response(&rac, &mut ev, resp).await;
    emit(&auditor, &rac, &mut ev, Some(&ctx), Stage::ResponseComplete).await;
    resp
}

/// What a panic was raised with, as Go's `%v` of the recovered value.
fn panic_reason(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "unknown panic"
    }
}

/// The response's Status (any level) and object (RequestResponse), read
/// only when needed: error answers are small Status objects.
async fn record_response(
    rac: &RequestAuditConfig,
    ev: &mut Event,
    resp: Response<Body>,
) -> Response<Body> {
    let wants_object = rac.level >= Level::RequestResponse;
    if !wants_object && resp.status().as_u16() < 300 {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let bytes: Bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, "audit: reading the response failed");
            return Response::from_parts(parts, Body::empty());
        }
    };
    if let Some(obj) = decoded(parts.headers.get(http::header::CONTENT_TYPE), &bytes, rac) {
        if let Some(status) = ResponseStatus::from_status(&obj) {
            ev.response_status = Some(ResponseStatus {
                code: parts.status.as_u16(),
                ..status
            });
        }
        if wants_object {
            ev.response_object = Some(obj);
        }
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The ResponseComplete event of a long-running request, written when its
/// body ends or is dropped (the client went away).
struct Completion {
    auditor: Arc<Auditor>,
    rac: RequestAuditConfig,
    ev: Event,
    ctx: Arc<AuditContext>,
}

struct CompletingBody {
    inner: Body,
    done: Option<Completion>,
}

impl Drop for CompletingBody {
    fn drop(&mut self) {
        let Some(mut c) = self.done.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        handle.spawn(async move {
            emit(
                &c.auditor,
                &c.rac,
                &mut c.ev,
                Some(&c.ctx),
                Stage::ResponseComplete,
            )
            .await;
        });
    }
}

impl HttpBody for CompletingBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Decodes a body by its content type; None for what is not an object.
pub fn decode_body(content_type: Option<&str>, body: &[u8]) -> Option<Value> {
    if body.is_empty() {
        return None;
    }
    let media = content_type
        .and_then(|ct| ct.split(';').next())
        .map(str::trim)
        .unwrap_or("application/json");
    let encoding = match media {
        "application/vnd.kubernetes.protobuf" => Encoding::Protobuf,
        "application/yaml" | "application/apply-patch+yaml" => Encoding::Yaml,
        _ => Encoding::Json,
    };
    body::decode(encoding, body).ok()
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
