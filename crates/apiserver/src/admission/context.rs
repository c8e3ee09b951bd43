//! The request a write belongs to, as admission needs it: who asked, the
//! warnings plugins add for the response and the annotations they add to
//! its audit events. Upstream carries these in the
//! request's context; here the REST handler runs the request inside a task
//! scope, so writes made by the server itself (bootstrap, repair) carry none
//! and are not admitted, as upstream's direct registry writes are not.

use std::future::Future;
use std::sync::{Arc, Mutex};

use crate::audit::AuditContext;
use crate::authentication::user::UserInfo;

tokio::task_local! {
    static CURRENT: Arc<RequestContext>;
}

#[derive(Debug)]
pub struct RequestContext {
    pub user: Arc<UserInfo>,
    warnings: Mutex<Vec<String>>,
    /// The request's audit context, when it is audited.
    audit: Option<Arc<AuditContext>>,
}

impl RequestContext {
    pub fn new(user: Arc<UserInfo>) -> Arc<Self> {
        Self::audited(user, None)
    }

    /// A request whose audit events plugins may annotate.
    pub fn audited(user: Arc<UserInfo>, audit: Option<Arc<AuditContext>>) -> Arc<Self> {
        Arc::new(RequestContext {
            user,
            warnings: Mutex::new(Vec::new()),
            audit,
        })
    }

    /// Runs `fut` as part of this request.
    pub async fn scope<F: Future>(self: &Arc<Self>, fut: F) -> F::Output {
        CURRENT.scope(self.clone(), fut).await
    }

    /// The request the current task serves, if any.
    pub fn current() -> Option<Arc<Self>> {
        CURRENT.try_with(Arc::clone).ok()
    }

    /// A warning for the response's `Warning` headers.
    pub fn add_warning(&self, message: impl Into<String>) {
        if let Ok(mut w) = self.warnings.lock() {
            w.push(message.into());
        }
    }

    /// An annotation for the request's audit events (upstream's
    /// `audit.AddAuditAnnotation`); a key already set keeps its first value.
    pub fn add_audit_annotation(&self, key: &str, value: impl Into<String>) {
        if let Some(audit) = &self.audit {
            audit.add_annotation(key, value);
        }
    }

    /// An annotation only audit events of at least `level` carry.
    pub fn add_audit_annotation_with_level(
        &self,
        key: &str,
        value: impl Into<String>,
        level: crate::audit::Level,
    ) {
        if let Some(audit) = &self.audit {
            audit.add_annotation_with_level(key, value, level);
        }
    }

    pub fn take_warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }
}
