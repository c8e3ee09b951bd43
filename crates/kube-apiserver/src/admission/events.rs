//! EventRateLimit: writes of core Events are limited by token buckets per
//! server, namespace, user or event source and object, as configured in
//! its `eventratelimit.admission.k8s.io` Configuration; a refused write
//! answers 429.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use apimachinery::field_errors::{aggregate_message, FieldError, Path};
use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::config::ConfigError;
use apiserver::admission::initializer::text;

const TYPES: [&str; 4] = ["Namespace", "Server", "SourceAndObject", "User"];
const DEFAULT_CACHE_SIZE: usize = 4096;

/// One configured limit.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limit {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub qps: i32,
    #[serde(default)]
    pub burst: i32,
    #[serde(default)]
    pub cache_size: i32,
}

#[derive(Debug, Default, Deserialize)]
struct Configuration {
    #[serde(default)]
    limits: Vec<Limit>,
}

/// A token bucket holding up to `burst` tokens, refilled at `qps`; it
/// starts full.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of one limit, by key, dropping the least recently used
/// beyond the cache size.
#[derive(Debug)]
struct Enforcer {
    limit: Limit,
    capacity: usize,
    buckets: Mutex<HashMap<String, (Bucket, u64)>>,
    uses: std::sync::atomic::AtomicU64,
}

impl Enforcer {
    fn new(limit: Limit) -> Self {
        let capacity = match (limit.kind.as_str(), limit.cache_size) {
            ("Server", _) => 1,
            (_, 0) => DEFAULT_CACHE_SIZE,
            (_, n) => usize::try_from(n).unwrap_or(DEFAULT_CACHE_SIZE),
        };
        Enforcer {
            limit,
            capacity,
            buckets: Mutex::new(HashMap::new()),
            uses: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn key(&self, a: &Attributes) -> String {
        match self.limit.kind.as_str() {
            "Namespace" => a.namespace.clone(),
            "User" => a.user().name.clone(),
            "SourceAndObject" => {
                let event = a.object.as_ref().unwrap_or(&Value::Null);
                [
                    "/source/component",
                    "/source/host",
                    "/involvedObject/kind",
                    "/involvedObject/namespace",
                    "/involvedObject/name",
                    "/involvedObject/uid",
                    "/involvedObject/apiVersion",
                ]
                .iter()
                .map(|p| text(event, p).unwrap_or_default())
                .collect()
            }
            _ => String::new(),
        }
    }

    /// Takes a token for `key`; false when there is none.
    fn accept(&self, key: &str, now: Instant) -> bool {
        let use_id = self.uses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Ok(mut buckets) = self.buckets.lock() else {
            return true;
        };
        let burst = f64::from(self.limit.burst);
        if !buckets.contains_key(key) && buckets.len() >= self.capacity {
            let oldest = buckets
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                buckets.remove(&oldest);
            }
        }
        let (bucket, used) = buckets.entry(key.to_owned()).or_insert((
            Bucket {
                tokens: burst,
                at: now,
            },
            use_id,
        ));
        *used = use_id;
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * f64::from(self.limit.qps)).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return true;
        }
        false
    }
}

pub struct EventRateLimit {
    enforcers: Vec<Enforcer>,
}

impl EventRateLimit {
    /// The plugin from its configuration; without one nothing is limited.
    pub fn from_config(doc: Option<&Value>) -> Result<Self, ConfigError> {
        let invalid = |message: String| ConfigError::Plugin {
            plugin: "EventRateLimit",
            message,
        };
        let Some(doc) = doc else {
            return Ok(EventRateLimit {
                enforcers: Vec::new(),
            });
        };
        let config: Configuration =
            serde_json::from_value(doc.clone()).map_err(|e| invalid(e.to_string()))?;
        if let Some(message) = aggregate_message(&validate(&config)) {
            return Err(invalid(message));
        }
        Ok(EventRateLimit {
            enforcers: config.limits.into_iter().map(Enforcer::new).collect(),
        })
    }
}

/// Upstream's `ValidateConfiguration`.
fn validate(config: &Configuration) -> Vec<FieldError> {
    let path = Path::new("limits");
    let mut errors = Vec::new();
    if config.limits.is_empty() {
        errors.push(FieldError::invalid(&path, "null", "must not be empty"));
    }
    for (i, limit) in config.limits.iter().enumerate() {
        let at = path.index(i);
        if !TYPES.contains(&limit.kind.as_str()) {
            errors.push(FieldError::not_supported(
                &at.child("type"),
                limit.kind.as_str(),
                &TYPES,
            ));
        }
        if limit.qps <= 0 {
            errors.push(FieldError::invalid(
                &at.child("qps"),
                limit.qps,
                "must be positive",
            ));
        }
        if limit.burst <= 0 {
            errors.push(FieldError::invalid(
                &at.child("burst"),
                limit.burst,
                "must be positive",
            ));
        }
        if limit.cache_size < 0 {
            errors.push(FieldError::invalid(
                &at.child("cacheSize"),
                limit.cache_size,
                "must not be negative",
            ));
        }
    }
    errors
}

impl Handler for EventRateLimit {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

#[async_trait]
impl ValidationInterface for EventRateLimit {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        // Dry runs reach no storage, so they take no tokens.
        if !a.kind.group.is_empty() || a.kind.kind != "Event" || a.dry_run {
            return Ok(());
        }
        let now = Instant::now();
        let refusals: Vec<String> = self
            .enforcers
            .iter()
            .filter_map(|e| {
                let key = e.key(a);
                (!e.accept(&key, now))
                    .then(|| format!("limit reached on type {} for key {key}", e.limit.kind))
            })
            .collect();
        let message = match refusals.len() {
            0 => return Ok(()),
            1 => refusals.concat(),
            _ => format!("[{}]", refusals.join(", ")),
        };
        Err(ApiError::too_many_requests_error(&message))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::admission::testing::{refusal, user, Write};

    fn event(namespace: &str) -> Attributes {
        Write::new("", "events", Operation::Create)
            .object(json!({"metadata": {"name": "e", "namespace": namespace},
                "involvedObject": {"kind": "Pod", "name": "p"}}))
            .by(user("alice", &[]))
    }

    #[tokio::test]
    async fn events_beyond_the_burst_are_refused_per_namespace() {
        let plugin = EventRateLimit::from_config(Some(&json!({
            "apiVersion": "eventratelimit.admission.k8s.io/v1alpha1", "kind": "Configuration",
            "limits": [{"type": "Namespace", "qps": 1, "burst": 2}]})));
        let Ok(plugin) = plugin else {
            panic!("configuration refused");
        };
        assert_eq!(refusal(plugin.validate(&event("a")).await), "");
        assert_eq!(refusal(plugin.validate(&event("a")).await), "");
        assert_eq!(
            refusal(plugin.validate(&event("a")).await),
            "Too many requests: limit reached on type Namespace for key a"
        );
        assert_eq!(refusal(plugin.validate(&event("b")).await), "");
    }

    #[test]
    fn buckets_refill_at_the_rate() {
        let enforcer = Enforcer::new(Limit {
            kind: "Server".into(),
            qps: 2,
            burst: 1,
            cache_size: 0,
        });
        let start = Instant::now();
        assert!(enforcer.accept("", start));
        assert!(!enforcer.accept("", start));
        assert!(enforcer.accept("", start + Duration::from_millis(500)));
    }

    #[test]
    fn invalid_configurations_stop_startup() {
        let err = EventRateLimit::from_config(Some(&json!({"limits": [
            {"type": "Pod", "qps": 0, "burst": 0}]})))
        .err()
        .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("failed to initialize admission: couldn't init admission plugin \"EventRateLimit\": [limits[0].type: Unsupported value: \"Pod\": supported values: \"Namespace\", \"Server\", \"SourceAndObject\", \"User\", limits[0].qps: Invalid value: 0: must be positive, limits[0].burst: Invalid value: 0: must be positive]")
        );
        assert!(EventRateLimit::from_config(Some(&json!({"limits": []}))).is_err());
    }
}
