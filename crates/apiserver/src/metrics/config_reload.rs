//! The series of a configuration file the server reloads when it changes
//! (upstream's `authorizationconfig/metrics`): reloads by status, the time
//! of the last one by status, and the hash of the configuration in force,
//! each labelled with the hash of the server's identity.

use std::sync::atomic::AtomicU64;
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use sha2::{Digest, Sha256};

type Labels = [(&'static str, String); 2];

/// Reload series of one configuration file.
#[derive(Debug, Default)]
pub struct ConfigReloadMetrics {
    reloads: Family<Labels, Counter>,
    last_reload: Family<Labels, Gauge<f64, AtomicU64>>,
    last_config: Family<Labels, Gauge>,
}

/// `sha256:<hex>` of `data` ("" for no data), as upstream labels hashes.
pub fn hash_label(data: &[u8]) -> String {
    if data.is_empty() {
        return String::new();
    }
    let digest = Sha256::digest(data);
    let mut label = String::with_capacity(7 + 64);
    label.push_str("sha256:");
    for byte in digest {
        label.push_str(&format!("{byte:02x}"));
    }
    label
}

impl ConfigReloadMetrics {
    /// Registers the series under `<subsystem>_…` (e.g.
    /// `apiserver_authorization_config_controller`); `what` names the
    /// configuration in the help texts.
    pub(crate) fn register(&self, registry: &mut Registry, subsystem: &str, what: &str) {
        // Counters are registered without `_total`, which the encoder appends.
        registry.register(
            format!("{subsystem}_automatic_reloads"),
            format!("Total number of automatic reloads of {what} configuration split by status and apiserver identity"),
            self.reloads.clone(),
        );
        registry.register(
            format!("{subsystem}_automatic_reload_last_timestamp_seconds"),
            format!("Timestamp of the last automatic reload of {what} configuration split by status and apiserver identity"),
            self.last_reload.clone(),
        );
        registry.register(
            format!("{subsystem}_last_config_info"),
            format!("Information about the last applied {what} configuration with hash as label, split by apiserver identity"),
            self.last_config.clone(),
        );
    }

    fn record(&self, status: &'static str, server_hash: &str) {
        let labels = [
            ("status", status.to_owned()),
            ("apiserver_id_hash", server_hash.to_owned()),
        ];
        self.reloads.get_or_create(&labels).inc();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.last_reload.get_or_create(&labels).set(now);
    }

    /// A successful (re)load of `config` by the server whose identity
    /// hashes to `server_hash` (see [`hash_label`]).
    pub fn record_success(&self, server_hash: &str, config: &[u8]) {
        self.record("success", server_hash);
        // Only the configuration in force has an info series.
        self.last_config.clear();
        let labels = [
            ("apiserver_id_hash", server_hash.to_owned()),
            ("hash", hash_label(config)),
        ];
        self.last_config.get_or_create(&labels).set(1);
    }

    /// A reload that failed; the previous configuration stays.
    pub fn record_failure(&self, server_hash: &str) {
        self.record("failure", server_hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reloads_are_counted_by_status_with_the_config_in_force() {
        let metrics = ConfigReloadMetrics::default();
        let mut registry = Registry::default();
        metrics.register(
            &mut registry,
            "apiserver_authorization_config_controller",
            "authorization",
        );
        metrics.record_success("sha256:id", b"one");
        metrics.record_failure("sha256:id");
        metrics.record_success("sha256:id", b"two");
        let mut text = String::new();
        assert!(prometheus_client::encoding::text::encode(&mut text, &registry).is_ok());
        assert!(text.contains(
            "apiserver_authorization_config_controller_automatic_reloads_total{status=\"success\",apiserver_id_hash=\"sha256:id\"} 2"
        ), "{text}");
        assert!(text.contains(
            "apiserver_authorization_config_controller_automatic_reloads_total{status=\"failure\",apiserver_id_hash=\"sha256:id\"} 1"
        ));
        assert!(text.contains("apiserver_authorization_config_controller_automatic_reload_last_timestamp_seconds{status=\"failure\""));
        let two = hash_label(b"two");
        assert!(text.contains(&format!(
            "last_config_info{{apiserver_id_hash=\"sha256:id\",hash=\"{two}\"}} 1"
        )));
        assert!(!text.contains(&hash_label(b"one")));
        assert_eq!(hash_label(b""), "");
        assert_eq!(two.len(), 71);
    }
}
