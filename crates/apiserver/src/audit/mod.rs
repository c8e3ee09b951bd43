//! Auditing (upstream's `k8s.io/apiserver/pkg/audit` and its log and
//! webhook plugins): the policy decides each request's level and omitted
//! stages, the audit filter ([`crate::filters::audit`]) builds the
//! audit.k8s.io/v1 events, and the backends record them: a log file
//! ([`log`]) and a webhook ([`webhook`]), each in blocking, blocking-strict
//! or batch mode. Later filters add annotations (the authorization
//! decision) and the impersonated user through the request's
//! [`AuditContext`].

pub mod event;
pub mod log;
pub mod metrics;
pub mod policy;
pub mod request;
pub mod truncate;
pub mod webhook;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

pub use event::{Event, EventUser, Level, Stage};
pub use policy::{Policy, PolicyError, RequestAuditConfig};

use crate::authentication::user::UserInfo;

/// The request and response header carrying the audit ID.
pub const HEADER_AUDIT_ID: &str = "audit-id";

/// Annotation keys of the authorization filter.
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// Records events. `process` returns false when the event could not be
/// recorded (a blocking-strict backend then fails the request).
#[async_trait]
pub trait Backend: Send + Sync {
    async fn process(&self, event: &Event) -> bool;
    /// The plugin name, for logs.
    fn name(&self) -> &'static str;
}

/// How a backend hands events over (`--audit-<backend>-mode`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Each event is recorded before the request goes on; failures are
    /// logged and otherwise ignored.
    Blocking,
    /// As blocking, but a failure to record the first event fails the request.
    BlockingStrict,
    /// Events are buffered and recorded in the background; when the buffer
    /// is full new events are dropped instead of slowing requests down.
    Batch(BatchConfig),
}

/// `--audit-<backend>-batch-*`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchConfig {
    pub buffer_size: usize,
    pub max_batch_size: usize,
    pub max_batch_wait: Duration,
    /// Batches per second and burst, when throttling is on.
    pub throttle: Option<(f32, usize)>,
}

impl Mode {
    /// Parses `--audit-<backend>-mode` with its batch settings.
    pub fn parse(mode: &str, batch: BatchConfig) -> Option<Mode> {
        match mode {
            "blocking" => Some(Mode::Blocking),
            "blocking-strict" => Some(Mode::BlockingStrict),
            "batch" => Some(Mode::Batch(batch)),
            _ => None,
        }
    }

    /// What `process` reports for a failed write.
    fn result(self, ok: bool) -> bool {
        ok || self != Mode::BlockingStrict
    }
}

/// The server's auditing: the policy and where events go.
pub struct Auditor {
    pub policy: Policy,
    pub backends: Vec<Arc<dyn Backend>>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.backends.iter().map(|b| b.name()).collect();
        f.debug_struct("Auditor").field("backends", &names).finish()
    }
}

impl Auditor {
    /// Hands `event` to every backend; false when any refused it.
    pub async fn process(&self, event: &Event) -> bool {
        let mut ok = true;
        for backend in &self.backends {
            ok &= backend.process(event).await;
        }
        ok
    }
}

/// What later filters and handlers add to a request's events.
#[derive(Debug, Default)]
pub struct AuditContext {
    state: Mutex<Additions>,
}

#[derive(Debug, Default)]
pub(crate) struct Additions {
    /// Each annotation with the least level of the events that carry it.
    pub annotations: Vec<(String, String, Level)>,
    pub impersonated_user: Option<EventUser>,
}

impl AuditContext {
    /// Adds an annotation; a key already set keeps its first value (as upstream).
    pub fn add_annotation(&self, key: &str, value: impl Into<String>) {
        self.add_annotation_with_level(key, value, Level::Metadata);
    }

    /// Adds an annotation that only events of at least `level` carry
    /// (upstream's `AddAnnotationWithLevel`, e.g. a webhook's patch, which
    /// shows the request's content).
    pub fn add_annotation_with_level(&self, key: &str, value: impl Into<String>, level: Level) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.annotations.iter().any(|(k, ..)| k == key) {
            tracing::debug!(key, "audit annotation already set; keeping the first value");
            return;
        }
        state
            .annotations
            .push((key.to_owned(), value.into(), level));
    }

    /// The annotations added so far, in order.
    pub fn annotations(&self) -> Vec<(String, String)> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let pairs = state.annotations.iter();
        pairs.map(|(k, v, _)| (k.clone(), v.clone())).collect()
    }

    /// Records who the request acts as (impersonation).
    pub fn log_impersonated_user(&self, user: &UserInfo) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.impersonated_user = Some(EventUser {
            username: user.name.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
        });
    }

    /// Copies what was added so far into `event`.
    pub fn apply(&self, event: &mut Event) {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let carried = state.annotations.iter().filter(|(.., l)| *l <= event.level);
        for (k, v, _) in carried {
            event
                .annotations
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        if state.impersonated_user.is_some() {
            event.impersonated_user.clone_from(&state.impersonated_user);
        }
    }
}

tokio::task_local! {
    /// The audit context of the request being authenticated.
    static AUTHENTICATING: Arc<AuditContext>;
}

/// Runs `fut` (a request's authentication) so that authenticators can
/// annotate the request's audit events with
/// [`add_authentication_annotation`] (upstream passes them in the context).
pub async fn authenticating<F: std::future::Future>(ctx: Arc<AuditContext>, fut: F) -> F::Output {
    AUTHENTICATING.scope(ctx, fut).await
}

/// Adds an annotation to the audit events of the request being
/// authenticated, if any (e.g. which legacy token was used).
pub fn add_authentication_annotation(key: &str, value: impl Into<String>) {
    // Outside authentication (token reviews, tests) there is nothing to annotate.
    let _ = AUTHENTICATING.try_with(|ctx| ctx.add_annotation(key, value));
}

/// Adds an annotation to the request's audit events, if it is audited.
pub fn add_annotation(extensions: &http::Extensions, key: &str, value: impl Into<String>) {
    if let Some(ctx) = extensions.get::<Arc<AuditContext>>() {
        ctx.add_annotation(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_reach_only_events_of_their_level() {
        let ctx = AuditContext::default();
        ctx.add_annotation("a.example.com/meta", "1");
        ctx.add_annotation_with_level("a.example.com/patch", "2", Level::Request);
        ctx.add_annotation("a.example.com/meta", "ignored");
        let mut metadata = Event::new(Level::Metadata, "id".into());
        ctx.apply(&mut metadata);
        assert_eq!(metadata.annotations.len(), 1);
        assert_eq!(metadata.annotations["a.example.com/meta"], "1");
        let mut request = Event::new(Level::Request, "id".into());
        ctx.apply(&mut request);
        assert_eq!(request.annotations.len(), 2);
        assert_eq!(request.annotations["a.example.com/patch"], "2");
    }
}
