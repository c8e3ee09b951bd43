//! Upstream's encryption-at-rest metrics for the configured providers:
//! every transformation of a resource's values is counted and timed by
//! direction and by the prefix of the provider that did it (upstream's
//! prefix transformers record them), and KMS v2 providers report their
//! key IDs, DEK cache and plugin calls under this server's identity.

use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, Instant};

use crate::metrics::encryption::{encryption, TransformationSeries};
use bytes::Bytes;
use storage::value::{PrefixTransformer, PrefixTransformers, TransformError, Transformer};

const FROM_STORAGE: &str = "from_storage";
const TO_STORAGE: &str = "to_storage";

/// One resource's providers (the first writes) and their prefixes.
#[derive(Debug)]
pub struct Providers {
    transformer: PrefixTransformers,
    prefixes: Vec<Bytes>,
}

impl Providers {
    /// None when there are no providers.
    pub fn new(list: Vec<PrefixTransformer>) -> Option<Self> {
        let prefixes = list.iter().map(|p| p.prefix.clone()).collect();
        let transformer = PrefixTransformers::new(list, "no matching prefix found")?;
        Some(Providers {
            transformer,
            prefixes,
        })
    }
}

impl Transformer for Providers {
    fn transform_from_storage(
        &self,
        data: &Bytes,
        context: &[u8],
    ) -> Result<Bytes, TransformError> {
        self.transformer.transform_from_storage(data, context)
    }

    fn transform_to_storage(&self, data: &Bytes, context: &[u8]) -> Result<Bytes, TransformError> {
        self.transformer.transform_to_storage(data, context)
    }
}

/// A provider prefix as upstream labels it.
fn prefix_label(prefix: &[u8]) -> String {
    String::from_utf8_lossy(prefix).into_owned()
}

/// The series of one direction and prefix, resolved on first use (a
/// resource never written has none, as upstream).
#[derive(Debug)]
struct Slot {
    label: String,
    series: OnceLock<TransformationSeries>,
}

impl Slot {
    fn new(label: String) -> Self {
        Slot {
            label,
            series: OnceLock::new(),
        }
    }

    fn observe(&self, resource: &str, direction: &'static str, elapsed: Duration) {
        self.series
            .get_or_init(|| encryption().transformation_series(resource, direction, &self.label))
            .observe(elapsed);
    }
}

/// The providers of one resource, measured.
#[derive(Debug)]
pub struct Measured {
    resource: String,
    providers: Arc<Providers>,
    write: Slot,
    /// Per provider, in order, its read series.
    reads: Vec<Slot>,
}

impl Measured {
    /// `resource` is upstream's `resource.group` label.
    pub fn new(resource: String, providers: Arc<Providers>) -> Self {
        let write = providers
            .prefixes
            .first()
            .map(|p| prefix_label(p))
            .unwrap_or_default();
        let reads = providers
            .prefixes
            .iter()
            .map(|p| {
                // Identity has no prefix; upstream names it on reads.
                Slot::new(if p.is_empty() {
                    "identity".to_owned()
                } else {
                    prefix_label(p)
                })
            })
            .collect();
        Measured {
            resource,
            providers,
            write: Slot::new(write),
            reads,
        }
    }

    /// The read series of the provider that reads `data`: the first whose
    /// non-empty prefix it carries, else identity.
    fn reader(&self, data: &[u8]) -> Option<&Slot> {
        let prefixes = &self.providers.prefixes;
        let matching = prefixes
            .iter()
            .position(|p| !p.is_empty() && data.starts_with(p))
            .or_else(|| prefixes.iter().position(|p| p.is_empty()))?;
        self.reads.get(matching)
    }
}

/// The gRPC code of a failure caused by a KMS plugin call, else
/// `unknown-non-grpc` (upstream's `getErrorCode`).
fn status_of(error: &TransformError) -> String {
    const RPC: &str = "rpc error: code = ";
    let text = error.to_string();
    match text.find(RPC) {
        Some(at) => text[at + RPC.len()..]
            .split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .filter(|code| !code.is_empty())
            .unwrap_or("unknown-non-grpc")
            .to_owned(),
        None => "unknown-non-grpc".to_owned(),
    }
}

impl Transformer for Measured {
    fn transform_from_storage(
        &self,
        data: &Bytes,
        context: &[u8],
    ) -> Result<Bytes, TransformError> {
        let start = Instant::now();
        let result = self.providers.transform_from_storage(data, context);
        let reader = self.reader(data);
        match (&result, reader) {
            (Ok(_), Some(slot)) => slot.observe(&self.resource, FROM_STORAGE, start.elapsed()),
            (Ok(_), None) => {}
            (Err(e), reader) => {
                let label = reader.map_or("unknown", |slot| slot.label.as_str());
                encryption().transformation_failed(
                    &self.resource,
                    FROM_STORAGE,
                    label,
                    &status_of(e),
                );
            }
        }
        result
    }

    fn transform_to_storage(&self, data: &Bytes, context: &[u8]) -> Result<Bytes, TransformError> {
        let start = Instant::now();
        let result = self.providers.transform_to_storage(data, context);
        match &result {
            Ok(_) => self
                .write
                .observe(&self.resource, TO_STORAGE, start.elapsed()),
            Err(e) => encryption().transformation_failed(
                &self.resource,
                TO_STORAGE,
                &self.write.label,
                &status_of(e),
            ),
        }
        result
    }
}

/// What KMS v2 providers report, labelled with this server's identity.
struct EnvelopeMetrics {
    server_id: String,
}

impl kms::Metrics for EnvelopeMetrics {
    fn key_id_used(&self, t: kms::metrics::Transformation, provider: &str, key_id: &str) {
        encryption().key_id_used(t.as_str(), provider, key_id, &self.server_id);
    }

    fn status_key_id(&self, provider: &str, key_id: &str) {
        encryption().status_key_id(provider, key_id, &self.server_id);
    }

    fn invalid_status_key_id(&self, provider: &str, error: &'static str) {
        encryption().invalid_status_key_id(provider, error);
    }

    fn dek_cache_miss(&self) {
        encryption().dek_cache_miss();
    }

    fn dek_source_cache_size(&self, provider: &str, size: usize) {
        encryption().dek_source_cache_size(provider, size);
    }

    fn kms_call(&self, provider: &str, method: &'static str, elapsed: Duration, code: &str) {
        encryption().kms_operation(provider, method, elapsed, code);
    }
}

static ENVELOPE: LazyLock<Arc<EnvelopeMetrics>> = LazyLock::new(|| {
    Arc::new(EnvelopeMetrics {
        server_id: format!("apiserver-{}", uuid::Uuid::new_v4()),
    })
});

/// Where KMS v2 providers report (one identity per process, as upstream's
/// server ID).
pub fn envelope_metrics() -> Arc<dyn kms::Metrics> {
    ENVELOPE.clone()
}

#[cfg(test)]
mod tests {
    use storage::value::encrypt::aes::AesGcm;
    use storage::value::Identity;

    use super::*;

    fn providers() -> Arc<Providers> {
        let list = vec![
            PrefixTransformer {
                prefix: Bytes::from_static(b"k8s:enc:aesgcm:v1:"),
                transformer: Arc::new(AesGcm::new(&[7; 32]).unwrap_or_else(|e| panic!("{e}"))),
            },
            PrefixTransformer {
                prefix: Bytes::new(),
                transformer: Arc::new(Identity),
            },
        ];
        Arc::new(Providers::new(list).unwrap_or_else(|| panic!("providers")))
    }

    fn count(resource: &str, direction: &str, prefix: &str, status: &str) -> u64 {
        let text = crate::metrics::Metrics::new().render().unwrap_or_default();
        let series = format!(
            "apiserver_storage_transformation_operations_total{{resource=\"{resource}\",transformation_type=\"{direction}\",transformer_prefix=\"{prefix}\",status=\"{status}\"}} "
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&series))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    #[test]
    fn transformations_are_counted_by_the_provider_that_did_them() {
        let m = Measured::new("widgets.test.example".into(), providers());
        let key = b"/registry/widgets/a";
        let stored = m
            .transform_to_storage(&Bytes::from_static(b"v"), key)
            .unwrap_or_default();
        assert!(stored.starts_with(b"k8s:enc:aesgcm:v1:"));
        assert_eq!(
            m.transform_from_storage(&stored, key).ok(),
            Some(Bytes::from_static(b"v"))
        );
        let plain = Bytes::from_static(b"plain");
        assert_eq!(m.transform_from_storage(&plain, key).ok(), Some(plain));
        // A value moved to another key fails authentication.
        assert!(m.transform_from_storage(&stored, b"/elsewhere").is_err());
        let r = "widgets.test.example";
        assert_eq!(count(r, TO_STORAGE, "k8s:enc:aesgcm:v1:", "OK"), 1);
        assert_eq!(count(r, FROM_STORAGE, "k8s:enc:aesgcm:v1:", "OK"), 1);
        assert_eq!(count(r, FROM_STORAGE, "identity", "OK"), 1);
        assert_eq!(
            count(r, FROM_STORAGE, "k8s:enc:aesgcm:v1:", "unknown-non-grpc"),
            1
        );
    }

    #[test]
    fn failures_carry_the_grpc_code_of_their_cause() {
        let kms = TransformError::Provider(
            "failed to decrypt DEK, error: rpc error: code = Unavailable desc = connection refused"
                .into(),
        );
        assert_eq!(status_of(&kms), "Unavailable");
        assert_eq!(
            status_of(&TransformError::Authentication),
            "unknown-non-grpc"
        );
    }
}
