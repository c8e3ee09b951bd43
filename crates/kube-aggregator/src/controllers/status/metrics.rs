//! The availability series of APIServices (upstream's
//! `pkg/controllers/status/metrics`): `aggregator_unavailable_apiservice`,
//! 1 for each APIService whose `Available` condition is not True (0 when
//! it is), set on every check; and `aggregator_unavailable_apiservice_total`,
//! counting the times an APIService turned unavailable, by reason.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;

use super::{available, Available};

/// The availability series shared by the local and remote controllers;
/// cloning shares them.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    unavailable: Family<[(&'static str, String); 2], Counter>,
    gauge: Family<[(&'static str, String); 1], Gauge>,
}

impl Metrics {
    /// The series in a registry of their own, to join the server's.
    pub fn registry(&self) -> Registry {
        let mut registry = Registry::default();
        // Counters without `_total` and help texts without their final
        // period: the encoder adds both.
        registry.register(
            "aggregator_unavailable_apiservice",
            "Counter of APIServices which are marked as unavailable broken down by APIService name and reason",
            self.unavailable.clone(),
        );
        registry.register(
            "aggregator_unavailable_apiservice",
            "Gauge of APIServices which are marked as unavailable broken down by APIService name",
            self.gauge.clone(),
        );
        registry
    }

    /// Records a check of the APIService `name`, whose condition was
    /// `original` and is to be `want` (`written`: the status was updated):
    /// upstream's `SetUnavailableGauge` on every check, and
    /// `SetUnavailableCounter`, which counts a change from available to
    /// unavailable by the new reason once the status is written.
    pub fn observe(&self, name: &str, original: &Value, want: &Available, written: bool) {
        let unavailable = want.status != "True";
        self.gauge
            .get_or_create(&[("name", name.to_owned())])
            .set(i64::from(unavailable));
        let was_available = available(original).is_some_and(|c| c["status"] == "True");
        if written && was_available && unavailable {
            let reason = if want.reason.is_empty() {
                "UnknownReason"
            } else {
                &want.reason
            };
            self.unavailable
                .get_or_create(&[("name", name.to_owned()), ("reason", reason.to_owned())])
                .inc();
        }
    }

    /// upstream's `ForgetAPIService`: a deleted APIService has no gauge.
    pub fn forget(&self, name: &str) {
        self.gauge.remove(&[("name", name.to_owned())]);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn service(status: &str) -> Value {
        json!({"status": {"conditions": [{"type": "Available", "status": status}]}})
    }

    fn want(status: &'static str, reason: &str) -> Available {
        Available {
            status,
            reason: reason.to_owned(),
            message: String::new(),
        }
    }

    fn text(metrics: &Metrics) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode_registry(&mut out, &metrics.registry()).unwrap();
        out
    }

    #[test]
    fn transitions_to_unavailable_are_counted_and_the_gauge_follows() {
        let m = Metrics::default();
        let name = "v1.example.com";
        let failed = want("False", "FailedDiscoveryCheck");
        m.observe(name, &service("True"), &failed, true);
        m.observe(name, &service("False"), &failed, true);
        m.observe(name, &service("True"), &failed, false);
        let out = text(&m);
        assert!(
            out.contains(r#"aggregator_unavailable_apiservice_total{name="v1.example.com",reason="FailedDiscoveryCheck"} 1"#),
            "{out}"
        );
        assert!(
            out.contains(r#"aggregator_unavailable_apiservice{name="v1.example.com"} 1"#),
            "{out}"
        );
        m.observe(name, &service("False"), &want("True", "Passed"), true);
        assert!(text(&m).contains(r#"aggregator_unavailable_apiservice{name="v1.example.com"} 0"#));
        m.forget(name);
        assert!(!text(&m).contains(r#"aggregator_unavailable_apiservice{"#));
    }
}
