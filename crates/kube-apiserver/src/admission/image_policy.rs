//! ImagePolicyWebhook (deprecated upstream, still served): before a pod is
//! created or updated, or ephemeral containers are added to it, an
//! `imagepolicy.k8s.io/v1alpha1` ImageReview of its images, its
//! `*.image-policy.k8s.io/*` annotations and namespace is posted to the
//! backend named by the plugin's kubeconfig file. Answers are cached for
//! `allowTTL`/`denyTTL`; when the backend cannot be reached the pod is
//! refused unless `defaultAllow` is set.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use apiserver::util::webhook::Endpoint;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::config::ConfigError;
use apimachinery::go_duration::GoDuration;

const PLUGIN: &str = "ImagePolicyWebhook";
/// Prefix of the audit annotations the plugin adds.
const AUDIT_PREFIX: &str = "imagepolicywebhook.image-policy.k8s.io/";
/// Pod annotations forwarded to the backend contain this.
const FORWARDED_ANNOTATIONS: &str = ".image-policy.k8s.io/";
/// Upstream's response cache size.
const CACHE_ENTRIES: usize = 1024;
/// Upstream's timeout for webhooks configured by a kubeconfig.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

const MS: i64 = 1_000_000;
const SECOND: i64 = 1_000 * MS;
const MINUTE: i64 = 60 * SECOND;

/// The plugin's settings as written: TTLs in seconds, the backoff in
/// milliseconds; 0 means the default and -1 turns the setting off.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSettings {
    #[serde(default)]
    kube_config_file: String,
    #[serde(default, rename = "allowTTL")]
    allow_ttl: i64,
    #[serde(default, rename = "denyTTL")]
    deny_ttl: i64,
    #[serde(default)]
    retry_backoff: i64,
    #[serde(default)]
    default_allow: bool,
}

/// Both accepted documents (`imagepolicy.admission.k8s.io/v1alpha1`
/// ImagePolicyWebhookConfiguration, or the unversioned legacy form) carry
/// the settings under `imagePolicy`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConfig {
    #[serde(default)]
    image_policy: RawSettings,
}

/// The normalised settings.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Settings {
    allow_ttl: Duration,
    deny_ttl: Duration,
    retry_backoff: Duration,
    default_allow: bool,
}

/// Upstream's `normalizeConfigDuration`: -1 disables, 0 takes the
/// default, anything else is scaled and must lie within `[min, max]`.
fn normalize(value: i64, scale: i64, min: i64, max: i64, default: i64) -> Result<i64, String> {
    match value {
        -1 => Ok(0),
        0 => Ok(default),
        _ => {
            let scaled = value.saturating_mul(scale);
            if scaled < min || scaled > max {
                let go = |n| GoDuration::from_nanos(n);
                return Err(format!(
                    "valid value is between {} and {}, got {}",
                    go(min),
                    go(max),
                    go(scaled)
                ));
            }
            Ok(scaled)
        }
    }
}

fn nanos(n: i64) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(0))
}

impl Settings {
    fn from_raw(raw: &RawSettings) -> Result<Self, String> {
        let backoff = normalize(raw.retry_backoff, MS, 1, 5 * MINUTE, 500 * MS)?;
        let allow = normalize(raw.allow_ttl, SECOND, SECOND, 30 * MINUTE, 5 * MINUTE)?;
        let deny = normalize(raw.deny_ttl, SECOND, SECOND, 30 * MINUTE, 30 * SECOND)?;
        Ok(Settings {
            allow_ttl: nanos(allow),
            deny_ttl: nanos(deny),
            retry_backoff: nanos(backoff),
            default_allow: raw.default_allow,
        })
    }
}

/// The spec of an ImageReview; its JSON is also the cache key.
#[derive(Debug, Serialize)]
struct ReviewSpec<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    containers: Vec<ContainerSpec<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<&'a str, &'a str>,
    #[serde(skip_serializing_if = "str::is_empty")]
    namespace: &'a str,
}

#[derive(Debug, Serialize)]
struct ContainerSpec<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    image: &'a str,
}

/// What the backend answered.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct ReviewStatus {
    #[serde(default)]
    allowed: bool,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    audit_annotations: BTreeMap<String, String>,
}

/// The review of a pod write: its containers (init containers after the
/// others), or only the ephemeral ones for `pods/ephemeralcontainers`.
fn review_spec<'a>(pod: &'a Value, namespace: &'a str, ephemeral: bool) -> ReviewSpec<'a> {
    let lists: &[&str] = if ephemeral {
        &["ephemeralContainers"]
    } else {
        &["containers", "initContainers"]
    };
    let containers = lists
        .iter()
        .filter_map(|list| pod.get("spec")?.get(list)?.as_array())
        .flatten()
        .map(|c| ContainerSpec {
            image: c.get("image").and_then(Value::as_str).unwrap_or_default(),
        })
        .collect();
    let annotations = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.contains(FORWARDED_ANNOTATIONS))
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
        .collect();
    ReviewSpec {
        containers,
        annotations,
        namespace,
    }
}

/// Answers by review spec, each until its TTL, the least recently used
/// dropped first when full (upstream's LRU expire cache).
#[derive(Debug, Default)]
struct ReviewCache {
    entries: Mutex<HashMap<String, CacheEntry>>,
    uses: AtomicU64,
}

#[derive(Debug)]
struct CacheEntry {
    status: ReviewStatus,
    expires: Instant,
    used: u64,
}

impl ReviewCache {
    fn get(&self, key: &str, now: Instant) -> Option<ReviewStatus> {
        let use_id = self.uses.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let entry = entries.get_mut(key)?;
        if entry.expires <= now {
            entries.remove(key);
            return None;
        }
        entry.used = use_id;
        Some(entry.status.clone())
    }

    fn insert(&self, key: String, status: ReviewStatus, ttl: Duration, now: Instant) {
        if ttl.is_zero() {
            return;
        }
        let used = self.uses.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if !entries.contains_key(&key) && entries.len() >= CACHE_ENTRIES {
            let oldest = entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                entries.remove(&oldest);
            }
        }
        let expires = now + ttl;
        entries.insert(
            key,
            CacheEntry {
                status,
                expires,
                used,
            },
        );
    }
}

pub struct ImagePolicyWebhook {
    endpoint: Endpoint,
    settings: Settings,
    cache: ReviewCache,
}

impl ImagePolicyWebhook {
    /// The plugin from its configuration (reads the kubeconfig file; called
    /// once at startup).
    pub fn from_config(doc: Option<&Value>) -> Result<Self, ConfigError> {
        let invalid = |message: String| ConfigError::Plugin {
            plugin: PLUGIN,
            message,
        };
        let doc = doc.ok_or_else(|| invalid("no config specified".into()))?;
        let raw: RawConfig =
            serde_json::from_value(doc.clone()).map_err(|e| invalid(e.to_string()))?;
        let settings = Settings::from_raw(&raw.image_policy).map_err(invalid)?;
        let endpoint = Endpoint::load(Path::new(&raw.image_policy.kube_config_file))
            .map_err(|e| invalid(e.to_string()))?;
        Ok(ImagePolicyWebhook {
            endpoint,
            settings,
            cache: ReviewCache::default(),
        })
    }

    fn ttl(&self, status: &ReviewStatus) -> Duration {
        if status.allowed {
            self.settings.allow_ttl
        } else {
            self.settings.deny_ttl
        }
    }

    /// Asks the backend (with upstream's retries).
    async fn ask(&self, spec: &ReviewSpec<'_>) -> Result<ReviewStatus, String> {
        let spec = serde_json::to_value(spec).map_err(|e| e.to_string())?;
        let review = json!({
            "apiVersion": "imagepolicy.k8s.io/v1alpha1",
            "kind": "ImageReview",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": {"allowed": false},
        });
        let answer = self
            .endpoint
            .post_with_backoff(&review, CALL_TIMEOUT, self.settings.retry_backoff)
            .await?;
        let status = answer.get("status").cloned().unwrap_or(Value::Null);
        if status.is_null() {
            return Ok(ReviewStatus::default());
        }
        serde_json::from_value(status).map_err(|e| e.to_string())
    }

    /// The backend's answer for `spec`, from the cache when fresh; an
    /// allowing answer when the backend failed and `defaultAllow` is set.
    async fn status(
        &self,
        a: &Attributes,
        spec: &ReviewSpec<'_>,
    ) -> Result<ReviewStatus, ApiError> {
        let key = serde_json::to_string(spec).map_err(|e| a.forbidden(e))?;
        if let Some(hit) = self.cache.get(&key, Instant::now()) {
            return Ok(hit);
        }
        match self.ask(spec).await {
            Ok(status) => {
                self.cache
                    .insert(key, status.clone(), self.ttl(&status), Instant::now());
                Ok(status)
            }
            Err(e) if self.settings.default_allow => {
                tracing::warn!(error = %e, "image policy webhook backend failed; the pod is allowed (defaultAllow)");
                a.request
                    .add_audit_annotation(&format!("{AUDIT_PREFIX}failed-open"), "true");
                Ok(ReviewStatus {
                    allowed: true,
                    ..ReviewStatus::default()
                })
            }
            Err(e) => Err(a.forbidden(e)),
        }
    }
}

impl Handler for ImagePolicyWebhook {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

#[async_trait]
impl ValidationInterface for ImagePolicyWebhook {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let ephemeral = match a.subresource.as_str() {
            "" => false,
            "ephemeralcontainers" => true,
            _ => return Ok(()),
        };
        if !a.is("", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Err(ApiError::bad_request(
                "Resource was marked with kind Pod but was unable to be converted",
            ));
        };
        let spec = review_spec(pod, &a.namespace, ephemeral);
        let status = self.status(a, &spec).await?;
        for (key, value) in &status.audit_annotations {
            a.request
                .add_audit_annotation(&format!("{AUDIT_PREFIX}{key}"), value.as_str());
        }
        match (status.allowed, status.reason.is_empty()) {
            (true, _) => Ok(()),
            (false, false) => Err(a.forbidden(format_args!(
                "image policy webhook backend denied one or more images: {}",
                status.reason
            ))),
            (false, true) => Err(a.forbidden("one or more images rejected by webhook backend")),
        }
    }
}

#[cfg(test)]
#[path = "image_policy_tests.rs"]
mod tests;
