//! The encryption-at-rest series (upstream's `storage/value` metrics and
//! `storage/value/encrypt/envelope/metrics`): value transformations by
//! resource, direction, provider prefix and status, their latency, DEK
//! cache misses and size, the key IDs KMS v2 providers write and read
//! under and the ones their plugins report, and the latency of every
//! plugin call. Like upstream's legacy registry they are process-wide:
//! storage is wrapped before any server's registry exists, and every
//! registry exposes them.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

type Labels<const N: usize> = [(&'static str, String); N];
type HistogramFamily<const N: usize> = Family<Labels<N>, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// How many key ID label sets are kept per series, as upstream's LRU.
const KEY_ID_LABEL_SETS: usize = 100;

/// 5µs doubling 25 times: in-process ciphers take microseconds, a KMS
/// plugin call may take hundreds of milliseconds.
fn transformation_histogram() -> Histogram {
    Histogram::new(exponential_buckets(5e-6, 2.0, 25))
}

/// 0.1ms doubling 20 times (the last bucket starts near 52s).
fn kms_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

/// `sha256:<hex>` of a value ("" for an empty one), as upstream labels
/// key IDs and server identities.
pub fn hash_label(value: &str) -> String {
    if value.is_empty() {
        return String::new();
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, value.as_bytes());
    let mut label = String::with_capacity(7 + 64);
    label.push_str("sha256:");
    for byte in digest.as_ref() {
        label.push_str(&format!("{byte:02x}"));
    }
    label
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The successful-transformation series of one resource, direction and
/// prefix, resolved once so a transformation only increments them.
#[derive(Debug, Clone)]
pub struct TransformationSeries {
    ok: Counter,
    duration: Histogram,
}

impl TransformationSeries {
    pub fn observe(&self, elapsed: Duration) {
        self.ok.inc();
        self.duration.observe(elapsed.as_secs_f64());
    }
}

/// One key ID label set in use, with its series.
struct KeyIdSeries {
    transformation: &'static str,
    provider: String,
    key_id: String,
    server_id: String,
    labels: Labels<4>,
    total: Counter,
    last: FloatGauge,
}

/// One key ID a plugin's `Status` returned, with its series.
struct StatusSeries {
    provider: String,
    key_id: String,
    server_id: String,
    labels: Labels<3>,
    last: FloatGauge,
}

/// Every encryption series; see the module doc.
pub struct EncryptionMetrics {
    transformations: Family<Labels<4>, Counter>,
    transformation_durations: HistogramFamily<2>,
    cache_misses: Counter,
    key_id_total: Family<Labels<4>, Counter>,
    key_id_last: Family<Labels<4>, FloatGauge>,
    status_key_id_last: Family<Labels<3>, FloatGauge>,
    invalid_status_key_ids: Family<Labels<2>, Counter>,
    /// KMS v1 only (not built): stays 0, as upstream shows it then.
    dek_cache_fill_percent: FloatGauge,
    dek_source_cache_size: Family<Labels<1>, Gauge>,
    kms_latency: HistogramFamily<3>,
    /// The key ID label sets in use, least recently used first.
    key_ids: Mutex<VecDeque<KeyIdSeries>>,
    status_key_ids: Mutex<VecDeque<StatusSeries>>,
}

impl std::fmt::Debug for EncryptionMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncryptionMetrics").finish_non_exhaustive()
    }
}

static ENCRYPTION: LazyLock<EncryptionMetrics> = LazyLock::new(EncryptionMetrics::new);

/// The process's encryption series.
pub fn encryption() -> &'static EncryptionMetrics {
    &ENCRYPTION
}

/// Finds the entry `matches` picks and marks it most recently used, or
/// adds the one `make` builds, dropping the least recently used beyond
/// [`KEY_ID_LABEL_SETS`] (handed to `evicted`). Returns the entry in use.
fn touch<T>(
    entries: &mut VecDeque<T>,
    matches: impl Fn(&T) -> bool,
    make: impl FnOnce() -> T,
    evicted: impl Fn(T),
) -> Option<&T> {
    match entries.iter().position(matches) {
        Some(i) => {
            let entry = entries.remove(i)?;
            entries.push_back(entry);
        }
        None => {
            entries.push_back(make());
            while entries.len() > KEY_ID_LABEL_SETS {
                if let Some(old) = entries.pop_front() {
                    evicted(old);
                }
            }
        }
    }
    entries.back()
}

impl EncryptionMetrics {
    fn new() -> Self {
        EncryptionMetrics {
            transformations: Family::default(),
            transformation_durations: Family::new_with_constructor(transformation_histogram),
            cache_misses: Counter::default(),
            key_id_total: Family::default(),
            key_id_last: Family::default(),
            status_key_id_last: Family::default(),
            invalid_status_key_ids: Family::default(),
            dek_cache_fill_percent: FloatGauge::default(),
            dek_source_cache_size: Family::default(),
            kms_latency: Family::new_with_constructor(kms_histogram),
            key_ids: Mutex::new(VecDeque::new()),
            status_key_ids: Mutex::new(VecDeque::new()),
        }
    }

    /// The series of successful transformations of `resource` (upstream's
    /// `group.resource` form) in one direction (`from_storage`,
    /// `to_storage`) by the provider of `prefix`.
    pub fn transformation_series(
        &self,
        resource: &str,
        transformation: &'static str,
        prefix: &str,
    ) -> TransformationSeries {
        let ok = self
            .transformations
            .get_or_create(&transformation_labels(
                resource,
                transformation,
                prefix,
                "OK",
            ))
            .clone();
        let duration = self
            .transformation_durations
            .get_or_create(&[
                ("transformation_type", transformation.to_owned()),
                ("transformer_prefix", prefix.to_owned()),
            ])
            .clone();
        TransformationSeries { ok, duration }
    }

    /// A failed transformation, with the gRPC code of its cause or
    /// `unknown-non-grpc`.
    pub fn transformation_failed(
        &self,
        resource: &str,
        transformation: &'static str,
        prefix: &str,
        status: &str,
    ) {
        self.transformations
            .get_or_create(&transformation_labels(
                resource,
                transformation,
                prefix,
                status,
            ))
            .inc();
    }

    /// A read needed a KMS plugin to decrypt its DEK.
    pub fn dek_cache_miss(&self) {
        self.cache_misses.inc();
    }

    /// A value was transformed under `key_id` by a KMS provider of the
    /// server identified by `server_id`.
    pub fn key_id_used(
        &self,
        transformation: &'static str,
        provider: &str,
        key_id: &str,
        server_id: &str,
    ) {
        let mut entries = self.key_ids.lock().unwrap_or_else(|p| p.into_inner());
        let entry = touch(
            &mut entries,
            |e| {
                e.transformation == transformation
                    && e.provider == provider
                    && e.key_id == key_id
                    && e.server_id == server_id
            },
            || {
                let labels = [
                    ("transformation_type", transformation.to_owned()),
                    ("provider_name", provider.to_owned()),
                    ("key_id_hash", hash_label(key_id)),
                    ("apiserver_id_hash", hash_label(server_id)),
                ];
                KeyIdSeries {
                    transformation,
                    provider: provider.to_owned(),
                    key_id: key_id.to_owned(),
                    server_id: server_id.to_owned(),
                    total: self.key_id_total.get_or_create(&labels).clone(),
                    last: self.key_id_last.get_or_create(&labels).clone(),
                    labels,
                }
            },
            |old| {
                self.key_id_total.remove(&old.labels);
                self.key_id_last.remove(&old.labels);
            },
        );
        if let Some(e) = entry {
            e.total.inc();
            e.last.set(now_seconds());
        }
    }

    /// A plugin's `Status` returned a valid `key_id`.
    pub fn status_key_id(&self, provider: &str, key_id: &str, server_id: &str) {
        let mut entries = self
            .status_key_ids
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let entry = touch(
            &mut entries,
            |e| e.provider == provider && e.key_id == key_id && e.server_id == server_id,
            || {
                let labels = [
                    ("provider_name", provider.to_owned()),
                    ("key_id_hash", hash_label(key_id)),
                    ("apiserver_id_hash", hash_label(server_id)),
                ];
                StatusSeries {
                    provider: provider.to_owned(),
                    key_id: key_id.to_owned(),
                    server_id: server_id.to_owned(),
                    last: self.status_key_id_last.get_or_create(&labels).clone(),
                    labels,
                }
            },
            |old| {
                self.status_key_id_last.remove(&old.labels);
            },
        );
        if let Some(e) = entry {
            e.last.set(now_seconds());
        }
    }

    /// A plugin's `Status` returned an invalid key ID (`error`: `empty`,
    /// `too_long`).
    pub fn invalid_status_key_id(&self, provider: &str, error: &str) {
        self.invalid_status_key_ids
            .get_or_create(&[
                ("provider_name", provider.to_owned()),
                ("error", error.to_owned()),
            ])
            .inc();
    }

    /// How many decrypted DEKs a KMS provider holds.
    pub fn dek_source_cache_size(&self, provider: &str, size: usize) {
        self.dek_source_cache_size
            .get_or_create(&[("provider_name", provider.to_owned())])
            .set(i64::try_from(size).unwrap_or(i64::MAX));
    }

    /// One KMS plugin call: its gRPC method, latency and status code.
    pub fn kms_operation(&self, provider: &str, method: &str, elapsed: Duration, code: &str) {
        self.kms_latency
            .get_or_create(&[
                ("provider_name", provider.to_owned()),
                ("method_name", method.to_owned()),
                ("grpc_status_code", code.to_owned()),
            ])
            .observe(elapsed.as_secs_f64());
    }

    pub(crate) fn register(&self, registry: &mut Registry) {
        // Counters are registered without `_total`, which the encoder
        // appends; help texts without their final period, which it adds.
        registry.register(
            "apiserver_storage_transformation_operations",
            "Total number of transformations. Successful transformations have status 'OK', failed ones the gRPC code of their cause or 'unknown-non-grpc'",
            self.transformations.clone(),
        );
        registry.register(
            "apiserver_storage_transformation_duration_seconds",
            "Latencies in seconds of value transformation operations",
            self.transformation_durations.clone(),
        );
        registry.register(
            "apiserver_storage_envelope_transformation_cache_misses",
            "Total number of cache misses while accessing key decryption key(KEK)",
            self.cache_misses.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_key_id_hash",
            "Number of times a keyID is used split by transformation type, provider, and apiserver identity",
            self.key_id_total.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds",
            "The last time in seconds when a keyID was used",
            self.key_id_last.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds",
            "The last time in seconds when a keyID was returned by the Status RPC call",
            self.status_key_id_last.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_invalid_key_id_from_status",
            "Number of times an invalid keyID is returned by the Status RPC call split by error",
            self.invalid_status_key_ids.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_dek_cache_fill_percent",
            "Percent of the cache slots currently occupied by cached DEKs",
            self.dek_cache_fill_percent.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_dek_source_cache_size",
            "Number of records in data encryption key (DEK) source cache. On a restart, this value is an approximation of the number of decrypt RPC calls the server will make to the KMS plugin",
            self.dek_source_cache_size.clone(),
        );
        registry.register(
            "apiserver_envelope_encryption_kms_operations_latency_seconds",
            "KMS operation duration with gRPC error code status total",
            self.kms_latency.clone(),
        );
    }
}

fn transformation_labels(
    resource: &str,
    transformation: &'static str,
    prefix: &str,
    status: &str,
) -> Labels<4> {
    [
        ("resource", resource.to_owned()),
        ("transformation_type", transformation.to_owned()),
        ("transformer_prefix", prefix.to_owned()),
        ("status", status.to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(m: &EncryptionMetrics) -> String {
        let mut registry = Registry::default();
        m.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap_or_default();
        text
    }

    #[test]
    fn transformations_are_counted_by_resource_prefix_and_status() {
        let m = EncryptionMetrics::new();
        let series = m.transformation_series("secrets", "to_storage", "k8s:enc:kms:v2:p:");
        series.observe(Duration::from_micros(30));
        series.observe(Duration::from_micros(30));
        m.transformation_failed(
            "secrets",
            "from_storage",
            "k8s:enc:kms:v2:p:",
            "Unavailable",
        );
        let text = render(&m);
        assert!(text.contains("apiserver_storage_transformation_operations_total{resource=\"secrets\",transformation_type=\"to_storage\",transformer_prefix=\"k8s:enc:kms:v2:p:\",status=\"OK\"} 2"), "{text}");
        assert!(text.contains("status=\"Unavailable\"} 1"), "{text}");
        assert!(text.contains("apiserver_storage_transformation_duration_seconds_count{transformation_type=\"to_storage\",transformer_prefix=\"k8s:enc:kms:v2:p:\"} 2"), "{text}");
        assert!(
            text.contains("apiserver_envelope_encryption_dek_cache_fill_percent 0"),
            "{text}"
        );
        assert!(
            text.contains("apiserver_storage_envelope_transformation_cache_misses_total 0"),
            "{text}"
        );
    }

    #[test]
    fn key_ids_are_hashed_and_their_label_sets_bounded() {
        let m = EncryptionMetrics::new();
        m.key_id_used("to_storage", "p", "key-1", "apiserver-a");
        m.key_id_used("to_storage", "p", "key-1", "apiserver-a");
        let key_hash = hash_label("key-1");
        assert!(key_hash.starts_with("sha256:") && key_hash.len() == 71);
        let text = render(&m);
        let line = format!(
            "apiserver_envelope_encryption_key_id_hash_total{{transformation_type=\"to_storage\",provider_name=\"p\",key_id_hash=\"{key_hash}\",apiserver_id_hash=\"{}\"}} 2",
            hash_label("apiserver-a")
        );
        assert!(text.contains(&line), "{text}");
        for i in 0..KEY_ID_LABEL_SETS {
            m.key_id_used("from_storage", "p", &format!("k{i}"), "apiserver-a");
        }
        // The oldest label set (key-1) was dropped from both series.
        let text = render(&m);
        assert!(!text.contains(&key_hash), "{text}");
        assert_eq!(
            text.matches("apiserver_envelope_encryption_key_id_hash_total{")
                .count(),
            KEY_ID_LABEL_SETS
        );
        m.status_key_id("p", "key-2", "apiserver-a");
        m.invalid_status_key_id("p", "empty");
        let text = render(&m);
        assert!(text.contains(&format!("apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds{{provider_name=\"p\",key_id_hash=\"{}\"", hash_label("key-2"))), "{text}");
        assert!(text.contains("apiserver_envelope_encryption_invalid_key_id_from_status_total{provider_name=\"p\",error=\"empty\"} 1"), "{text}");
        assert_eq!(hash_label(""), "");
    }

    #[test]
    fn kms_calls_and_cache_sizes_are_recorded() {
        let m = EncryptionMetrics::new();
        m.kms_operation(
            "p",
            "/v2.KeyManagementService/Status",
            Duration::from_millis(2),
            "OK",
        );
        m.dek_source_cache_size("p", 3);
        m.dek_cache_miss();
        let text = render(&m);
        assert!(text.contains("apiserver_envelope_encryption_kms_operations_latency_seconds_count{provider_name=\"p\",method_name=\"/v2.KeyManagementService/Status\",grpc_status_code=\"OK\"} 1"), "{text}");
        assert!(
            text.contains(
                "apiserver_envelope_encryption_dek_source_cache_size{provider_name=\"p\"} 3"
            ),
            "{text}"
        );
        assert!(
            text.contains("apiserver_storage_envelope_transformation_cache_misses_total 1"),
            "{text}"
        );
    }
}
