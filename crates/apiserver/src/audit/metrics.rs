//! Audit series (upstream's `pkg/audit/metrics.go`): events generated,
//! events a backend failed to record (by plugin), the policy level of each
//! audited request, and requests refused because their event could not be
//! stored. Process-wide, as upstream's legacy registry: the server's
//! `/metrics` registry renders them.

use std::sync::LazyLock;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::event::Level;

/// The audit counters.
#[derive(Debug, Default)]
pub struct AuditMetrics {
    events: Counter,
    errors: Family<[(&'static str, &'static str); 1], Counter>,
    levels: Family<[(&'static str, &'static str); 1], Counter>,
    rejected: Counter,
}

static METRICS: LazyLock<AuditMetrics> = LazyLock::new(AuditMetrics::default);

/// The process's audit counters.
pub fn global() -> &'static AuditMetrics {
    &METRICS
}

impl AuditMetrics {
    /// Adds the series to `registry`.
    pub(crate) fn register(&self, registry: &mut Registry) {
        // Counters are registered without `_total`, which the encoder
        // appends; help texts without their final period, which it adds.
        registry.register(
            "apiserver_audit_event",
            "Counter of audit events generated and sent to the audit backend",
            self.events.clone(),
        );
        registry.register(
            "apiserver_audit_error",
            "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error",
            self.errors.clone(),
        );
        registry.register(
            "apiserver_audit_level",
            "Counter of policy levels for audit events (1 per request)",
            self.levels.clone(),
        );
        registry.register(
            "apiserver_audit_requests_rejected",
            "Counter of apiserver requests rejected due to an error in audit logging backend",
            self.rejected.clone(),
        );
    }

    /// An event was handed to the backends.
    pub fn observe_event(&self) {
        self.events.inc();
    }

    /// A request's policy level was decided.
    pub fn observe_level(&self, level: Level) {
        self.levels
            .get_or_create(&[("level", level.as_str())])
            .inc();
    }

    /// `plugin` failed to record `events` events.
    pub fn plugin_error(&self, plugin: &'static str, events: u64) {
        self.errors
            .get_or_create(&[("plugin", plugin)])
            .inc_by(events);
    }

    /// A request failed because its event could not be stored.
    pub fn request_rejected(&self) {
        self.rejected.inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(metrics: &AuditMetrics) -> String {
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry)
            .unwrap_or_else(|e| panic!("{e}"));
        text
    }

    #[test]
    fn counters_render_with_upstream_names_and_labels() {
        let m = AuditMetrics::default();
        m.observe_event();
        m.observe_event();
        m.observe_level(Level::Metadata);
        m.plugin_error("webhook", 3);
        m.request_rejected();
        let text = render(&m);
        for line in [
            "apiserver_audit_event_total 2",
            "apiserver_audit_level_total{level=\"Metadata\"} 1",
            "apiserver_audit_error_total{plugin=\"webhook\"} 3",
            "apiserver_audit_requests_rejected_total 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
    }
}
