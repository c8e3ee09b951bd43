//! One configured KMS v2 provider: the envelope transformer (upstream's
//! `kmsv2/envelope.go`) and the plugin probe that keeps its write DEK
//! current (the KMS v2 probe of upstream's `encryptionconfig/config.go`).
//!
//! Writes never call the plugin: they use the write state, a DEK seed the
//! plugin encrypted once for its current key ID. The state is made when
//! the first `Status` succeeds, kept while the plugin's key ID stays the
//! same, replaced when it changes, and stops accepting writes
//! [`Timing::write_dek_ttl`] after the last healthy `Status`. Reads decode
//! the stored `EncryptedObject` and open it with the DEK its encrypted
//! source decrypts to, asking the plugin only when that DEK is not cached.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use prost::Message;
use storage::value::{TransformError, Transformer};
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::api::StatusResponse;
use crate::client::{ClientError, KmsClient};
use crate::dek::Dek;
use crate::metrics::{self, Metrics, Transformation};
use crate::object::{
    cache_key, decode, validate, validate_key_id, EncryptedDekSourceType, EncryptedObject,
};

/// How often the plugin is polled and how long results and DEKs last;
/// [`Timing::default`] holds upstream's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Poll interval while the plugin is healthy.
    pub poll_healthy: Duration,
    /// Poll interval while it is not.
    pub poll_unhealthy: Duration,
    /// How long after the last healthy `Status` the write DEK may be used.
    pub write_dek_ttl: Duration,
    /// How long a healthy (or failed) check answers health checks.
    pub healthy_memo: Duration,
    pub unhealthy_memo: Duration,
    /// How long an unused decrypted DEK stays cached.
    pub dek_cache_ttl: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            poll_healthy: Duration::from_secs(60),
            poll_unhealthy: Duration::from_secs(10),
            write_dek_ttl: Duration::from_secs(180),
            healthy_memo: Duration::from_secs(20),
            unhealthy_memo: Duration::from_secs(3),
            dek_cache_ttl: Duration::from_secs(24 * 3600),
        }
    }
}

/// A `kms` provider of the encryption configuration (`apiVersion: v2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    pub name: String,
    /// `unix:///path/to/socket`.
    pub endpoint: String,
    /// Bound of each plugin call (upstream's default is 3s).
    pub timeout: Duration,
    pub timing: Timing,
}

/// What writes use: the current DEK and how the plugin encrypted it.
#[derive(Debug, Clone)]
struct WriteState {
    dek: Arc<Dek>,
    key_id: String,
    /// The EncryptedObject's fields after the data (key ID, encrypted DEK
    /// source, annotations, source type), encoded once: a write encodes
    /// only the data before them, as protobuf orders fields by number.
    tail: Bytes,
    cache_key: Vec<u8>,
    expires: SystemTime,
}

/// The last probe result, answered again until its TTL passes.
struct Memo {
    result: Result<(), String>,
    at: Option<Instant>,
    ttl: Duration,
    /// The plugin API version of the first `Status`; it may not change.
    version: Option<String>,
}

/// A cached DEK and when it was last used.
type CacheEntry = (Arc<Dek>, Instant);

/// Decrypted DEKs by [`cache_key`], dropped after a TTL without use.
struct DekCache {
    ttl: Duration,
    entries: Mutex<HashMap<Vec<u8>, CacheEntry>>,
}

impl DekCache {
    fn get(&self, key: &[u8]) -> Option<Arc<Dek>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (dek, used) = entries.get_mut(key)?;
        if used.elapsed() > self.ttl {
            entries.remove(key);
            return None;
        }
        *used = Instant::now();
        Some(dek.clone())
    }

    fn insert(&self, key: Vec<u8>, dek: Arc<Dek>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let ttl = self.ttl;
        entries.retain(|_, (_, used)| used.elapsed() <= ttl);
        entries.insert(key, (dek, Instant::now()));
    }

    fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// A KMS v2 provider; see the module doc. It is the [`Transformer`] of the
/// values behind its `k8s:enc:kms:v2:<name>:` prefix.
pub struct Provider {
    name: String,
    client: KmsClient,
    metrics: Arc<dyn Metrics>,
    timing: Timing,
    state: RwLock<Option<Arc<WriteState>>>,
    cache: DekCache,
    memo: tokio::sync::Mutex<Memo>,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Upstream's `GetHashIfNotEmpty`: key IDs are logged only as hashes.
fn hash_key_id(key_id: &str) -> String {
    if key_id.is_empty() {
        return String::new();
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, key_id.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// RFC 3339 in UTC, as upstream formats timestamps in messages.
fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn provider_error(message: impl Into<String>) -> TransformError {
    TransformError::Provider(message.into())
}

/// Runs a plugin call from the synchronous transformer. Only DEK cache
/// misses on reads get here; `block_in_place` hands this worker's other
/// tasks to another thread while the call runs.
fn wait<F: Future>(fut: F) -> Result<F::Output, String> {
    let handle = Handle::try_current()
        .map_err(|_| "decrypting a DEK needs a running tokio runtime".to_owned())?;
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return Err("decrypting a DEK needs a multi-threaded tokio runtime".into());
    }
    Ok(tokio::task::block_in_place(|| handle.block_on(fut)))
}

impl Provider {
    /// A provider whose plugin is not contacted yet: call
    /// [`Provider::start`]. Must run inside a tokio runtime. Its
    /// measurements go to `metrics`.
    pub fn new(
        config: ProviderConfig,
        metrics: Arc<dyn Metrics>,
    ) -> Result<Arc<Provider>, ClientError> {
        let client = KmsClient::new(&config.endpoint, config.timeout)?;
        Ok(Arc::new(Provider {
            name: config.name,
            client,
            metrics,
            timing: config.timing,
            state: RwLock::new(None),
            cache: DekCache {
                ttl: config.timing.dek_cache_ttl,
                entries: Mutex::new(HashMap::new()),
            },
            memo: tokio::sync::Mutex::new(Memo {
                result: Ok(()),
                at: None,
                ttl: Duration::ZERO,
                version: None,
            }),
        }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bound of each plugin call.
    pub fn timeout(&self) -> Duration {
        self.client.timeout()
    }

    /// The prefix of the values this provider writes.
    pub fn prefix(&self) -> String {
        format!("{}{}:", crate::PREFIX_V2, self.name)
    }

    /// The key ID new values are written under, once the plugin answered.
    pub fn write_key_id(&self) -> Option<String> {
        self.state().map(|s| s.key_id.clone())
    }

    /// How many decrypted DEKs are cached.
    pub fn cached_deks(&self) -> usize {
        self.cache.len()
    }

    /// Probes the plugin once (its result is the returned one) and keeps
    /// polling it in the background for as long as the provider is in use.
    pub async fn start(self: &Arc<Self>) -> Result<(), String> {
        let primed = self.check().await;
        if let Err(e) = &primed {
            tracing::warn!(provider = %self.name, error = %e, "kms plugin failed health check probe");
        }
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(provider) = weak.upgrade() else {
                    return;
                };
                let wait = match provider.check().await {
                    Ok(()) => provider.timing.poll_healthy,
                    Err(e) => {
                        tracing::warn!(provider = %provider.name, error = %e, "kms plugin failed health check probe");
                        provider.timing.poll_unhealthy
                    }
                };
                drop(provider);
                tokio::time::sleep(wait).await;
            }
        });
        primed
    }

    fn state(&self) -> Option<Arc<WriteState>> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_state(&self, state: WriteState) {
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(state));
    }

    /// The plugin's health (upstream's KMS v2 probe): `Status` must answer
    /// `ok` with API version v2 and a valid key ID; a changed key ID gets a
    /// new write DEK. Results are reused for a short while.
    pub async fn check(&self) -> Result<(), String> {
        let mut memo = self.memo.lock().await;
        if memo.at.is_some_and(|at| at.elapsed() < memo.ttl) {
            return memo.result.clone();
        }
        let status = self
            .measured(metrics::METHOD_STATUS, self.client.status())
            .await;
        let result = match status {
            Err(e) => Err(format!(
                "failed to perform status section of the healthz check for KMS Provider {}, error: {e}",
                self.name
            )),
            Ok(status) => self.judge(&mut memo.version, status).await,
        };
        memo.ttl = if result.is_ok() {
            self.timing.healthy_memo
        } else {
            self.timing.unhealthy_memo
        };
        memo.at = Some(Instant::now());
        memo.result = result.clone();
        result
    }

    async fn judge(
        &self,
        version: &mut Option<String>,
        status: StatusResponse,
    ) -> Result<(), String> {
        let mut errs = Vec::new();
        if status.healthz != "ok" {
            errs.push(format!("got unexpected healthz status: {}", status.healthz));
        }
        if status.version != "v2" && status.version != "v2beta1" {
            errs.push(format!(
                "expected KMSv2 API version v2, got {}",
                status.version
            ));
        } else {
            let first = version.get_or_insert_with(|| status.version.clone());
            if *first != status.version {
                errs.push(format!(
                    "KMSv2 API version should not change after the initial status response version {first}, got {}",
                    status.version
                ));
            }
        }
        match validate_key_id(&status.key_id) {
            Err(e) => {
                self.metrics.invalid_status_key_id(&self.name, e.code());
                errs.push(format!(
                    "got invalid KMSv2 KeyID hash {:?}: {e}",
                    hash_key_id(&status.key_id)
                ))
            }
            Ok(()) => {
                self.metrics.status_key_id(&self.name, &status.key_id);
                if let Err(e) = self.rotate_if_needed(&status.key_id).await {
                    errs.push(e);
                }
            }
        }
        let detail = match errs.len() {
            0 => return Ok(()),
            1 => errs.remove(0),
            _ => format!("[{}]", errs.join(", ")),
        };
        Err(format!(
            "kmsv2 Provider {} is not healthy, error: {detail}",
            self.name
        ))
    }

    /// Keeps the write DEK while the key ID is unchanged (extending its
    /// life); otherwise has the plugin encrypt a new seed. On failure the
    /// old state stays usable until it expires.
    async fn rotate_if_needed(&self, status_key_id: &str) -> Result<(), String> {
        let expires = SystemTime::now() + self.timing.write_dek_ttl;
        let current = self.state();
        if let Some(state) = current.as_deref().filter(|s| s.key_id == status_key_id) {
            self.set_state(WriteState {
                expires,
                ..state.clone()
            });
            return Ok(());
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let (encrypt_key_id, err_gen) = match self.generate(&uid).await {
            Ok(state) if state.key_id == status_key_id => {
                tracing::info!(provider = %self.name, key_id_hash = %hash_key_id(&state.key_id), "rotated the KMS v2 DEK");
                self.cache_dek(state.cache_key.clone(), state.dek.clone());
                self.set_state(WriteState { expires, ..state });
                return Ok(());
            }
            Ok(state) => (state.key_id, "<nil>".to_owned()),
            Err(e) => (String::new(), e),
        };
        let (err_state, state_key_id, state_expires) = match &current {
            Some(s) => ("<nil>", s.key_id.as_str(), rfc3339(s.expires)),
            None => (
                "got unexpected nil transformer",
                "",
                "0001-01-01T00:00:00Z".into(),
            ),
        };
        Err(format!(
            "failed to rotate DEK uid={uid:?}, useSeed=true, errState={err_state}, errGen={err_gen}, statusKeyIDHash={:?}, encryptKeyIDHash={:?}, stateKeyIDHash={:?}, expirationTimestamp={state_expires}",
            hash_key_id(status_key_id),
            hash_key_id(&encrypt_key_id),
            hash_key_id(state_key_id),
        ))
    }

    /// A new seed, encrypted by the plugin.
    async fn generate(&self, uid: &str) -> Result<WriteState, String> {
        let (dek, seed) = Dek::generate().map_err(|e| e.to_string())?;
        let call = self
            .client
            .encrypt(uid.to_owned(), Bytes::copy_from_slice(&seed));
        let resp = self
            .measured(metrics::METHOD_ENCRYPT, call)
            .await
            .map_err(|e| format!("failed to encrypt DEK, error: {e}"))?;
        let object = EncryptedObject {
            // Any non-empty data passes validation.
            encrypted_data: Bytes::from_static(&[0]),
            key_id: resp.key_id,
            encrypted_dek_source: resp.ciphertext,
            annotations: resp.annotations,
            encrypted_dek_source_type: EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32,
        };
        validate(&object)?;
        let tail = EncryptedObject {
            // Empty bytes are not encoded.
            encrypted_data: Bytes::new(),
            ..object.clone()
        };
        Ok(WriteState {
            dek: Arc::new(dek),
            cache_key: cache_key(&object),
            key_id: object.key_id,
            tail: Bytes::from(tail.encode_to_vec()),
            expires: SystemTime::now(),
        })
    }

    /// The DEK of a stored object: the write DEK, a cached one, or one the
    /// plugin decrypts now.
    fn dek_for(&self, object: &EncryptedObject, state: &WriteState) -> Result<Arc<Dek>, String> {
        let key = cache_key(object);
        if key == state.cache_key {
            return Ok(state.dek.clone());
        }
        if let Some(dek) = self.cache.get(&key) {
            return Ok(dek);
        }
        self.metrics.dek_cache_miss();
        let uid = uuid::Uuid::new_v4().to_string();
        let call = self.client.decrypt(
            uid,
            object.encrypted_dek_source.clone(),
            object.key_id.clone(),
            object.annotations.clone(),
        );
        let plain = wait(self.measured(metrics::METHOD_DECRYPT, call))?
            .map_err(|e| format!("failed to decrypt DEK, error: {e}"))?;
        let dek = if object.encrypted_dek_source_type == EncryptedDekSourceType::AesGcmKey as i32 {
            Dek::from_key(&plain)
        } else {
            Dek::from_seed(&plain)
        }
        .map_err(|e| e.to_string())?;
        let dek = Arc::new(dek);
        self.cache_dek(key, dek.clone());
        Ok(dek)
    }

    fn cache_dek(&self, key: Vec<u8>, dek: Arc<Dek>) {
        self.cache.insert(key, dek);
        self.metrics
            .dek_source_cache_size(&self.name, self.cache.len());
    }

    /// Runs one plugin call, reporting its latency and gRPC status code.
    async fn measured<T>(
        &self,
        method: &'static str,
        call: impl Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        let start = Instant::now();
        let result = call.await;
        let code = metrics::status_code(&result);
        self.metrics
            .kms_call(&self.name, method, start.elapsed(), code);
        result
    }
}

impl Transformer for Provider {
    fn transform_from_storage(
        &self,
        data: &Bytes,
        context: &[u8],
    ) -> Result<Bytes, TransformError> {
        let object = decode(data.clone()).map_err(provider_error)?;
        // As upstream, reads too need a plugin that answered once.
        let state = self
            .state()
            .ok_or_else(|| provider_error("got unexpected nil transformer"))?;
        let dek = self.dek_for(&object, &state).map_err(provider_error)?;
        self.metrics
            .key_id_used(Transformation::FromStorage, &self.name, &object.key_id);
        dek.open(&object.encrypted_data, context)
            .map_err(|e| provider_error(e.to_string()))
    }

    fn transform_to_storage(&self, data: &Bytes, context: &[u8]) -> Result<Bytes, TransformError> {
        let state = self
            .state()
            .ok_or_else(|| provider_error("got unexpected nil transformer"))?;
        let now = SystemTime::now();
        if now > state.expires {
            return Err(provider_error(format!(
                "encryptedDEKSource with keyID hash {:?} expired at {} (current time is {})",
                hash_key_id(&state.key_id),
                rfc3339(state.expires),
                rfc3339(now)
            )));
        }
        // Field 1 (encryptedData), then the pre-encoded fields 2 to 5.
        let sealed_len = Dek::sealed_len(data.len());
        let mut out = Vec::with_capacity(1 + 10 + sealed_len + state.tail.len());
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(sealed_len as u64, &mut out);
        state
            .dek
            .seal_into(data, context, &mut out)
            .map_err(|e| provider_error(e.to_string()))?;
        out.extend_from_slice(&state.tail);
        self.metrics
            .key_id_used(Transformation::ToStorage, &self.name, &state.key_id);
        Ok(Bytes::from(out))
    }
}
