//! Encryption at rest (`--encryption-provider-config`, upstream's
//! `pkg/server/options/encryptionconfig`): the apiserver.config.k8s.io/v1
//! EncryptionConfiguration is read and validated as upstream does, each
//! configured resource gets its providers (the first encrypts, all decrypt)
//! and the storage backend is wrapped in a [`TransformingKv`] that applies
//! them to the keys of those resources. KMS v2 providers (crate `kms`) are
//! probed once at startup and polled after; their health is the
//! `kms-providers` check of `/healthz` and `/readyz`. With
//! `--encryption-provider-config-automatic-reload` the file is re-read when
//! it changes; a broken new version, or one whose KMS plugins do not become
//! healthy, keeps the old configuration in force. Transformations and KMS
//! v2 providers feed upstream's encryption metrics.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use apimachinery::field_errors::aggregate_message;
use apiserver::server::HealthCheck;
use bytes::Bytes;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use storage::value::encrypt::{AesCbc, AesGcm, KeyLengthError, Secretbox};
use storage::value::{
    Identity, PrefixTransformer, PrefixTransformers, Transformer, TransformerRules, TransformingKv,
};
use storage::Kv;

use self::metrics::{envelope_metrics, Measured, Providers};
use super::encryption_config::{
    validate, EncryptionConfiguration, Key, KmsConfiguration, ProviderConfiguration,
};
use crate::controlplane::builtin;
use crate::options::CompletedOptions;
use crate::registry::services::ServiceAllocator;

/// How often an automatically reloaded configuration file is checked.
const RELOAD_INTERVAL: Duration = Duration::from_secs(5);

const AESCBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
const AESGCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
const SECRETBOX_PREFIX: &str = "k8s:enc:secretbox:v1:";

/// Why the encryption configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EncryptionError {
    #[error("error while loading file: {0}")]
    Read(#[source] std::io::Error),
    #[error("encryption provider configuration file {0:?} is empty")]
    Empty(String),
    #[error("error decoding encryption provider configuration file {0:?}: {1}")]
    Decode(String, String),
    #[error("got unexpected config type: {0}")]
    Kind(String),
    #[error("error while parsing file: {0}")]
    Invalid(String),
    #[error(
        "error while building transformers: KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.  Set --feature-gates=KMSv1=true to use the deprecated KMSv1 feature."
    )]
    KmsV1Deprecated,
    #[error(
        "error while building transformers: could not configure KMS plugin {0:?}: KMS v1 is not built into this server (use apiVersion: v2)"
    )]
    KmsV1NotBuilt(String),
    #[error(
        "error while building transformers: could not configure KMSv2-Plugin's probe {0:?}, error: {1}"
    )]
    KmsClient(String, kms::ClientError),
    #[error("error while building transformers: {0}")]
    Key(String),
    #[error("error while building transformers: resource {0:?} is masked by earlier rule {1:?}")]
    Masked(String, String),
}

/// The providers of each configured (group, resource); `*` is a wildcard.
type Configured = BTreeMap<(String, String), Arc<Providers>>;

/// A group and resource as upstream's `schema.ParseGroupResource` splits
/// `resource.group` (at the first dot; `*.` is every core resource).
fn parse_group_resource(s: &str) -> (String, String) {
    match s.split_once('.') {
        Some((resource, group)) => (group.to_owned(), resource.to_owned()),
        None => (String::new(), s.to_owned()),
    }
}

fn yaml_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("{resource}.")
    } else {
        format!("{resource}.{group}")
    }
}

/// How a configuration file is read: whether it is reloaded (stricter
/// KMS name rules) and whether the KMSv1 gate is on.
#[derive(Debug, Clone, Copy, Default)]
struct LoadSettings {
    reload: bool,
    kms_v1: bool,
}

/// A loaded configuration: each configured resource's transformer and the
/// KMS providers among them (not yet probed).
struct Loaded {
    configured: Configured,
    kms: Vec<Arc<kms::Provider>>,
}

/// Reads and validates the configuration file and builds its providers.
/// Runs inside a tokio runtime (KMS clients are made here).
fn load(path: &Path, settings: LoadSettings) -> Result<Loaded, EncryptionError> {
    let data = std::fs::read(path).map_err(EncryptionError::Read)?;
    let file = path.display().to_string();
    if data.iter().all(u8::is_ascii_whitespace) {
        return Err(EncryptionError::Empty(file));
    }
    let config: EncryptionConfiguration =
        serde_yaml::from_slice(&data).map_err(|e| EncryptionError::Decode(file, e.to_string()))?;
    if config.api_version != "apiserver.config.k8s.io/v1"
        || config.kind != "EncryptionConfiguration"
    {
        return Err(EncryptionError::Kind(format!(
            "{}, Kind={}",
            config.api_version, config.kind
        )));
    }
    if let Some(msg) = aggregate_message(&validate(&config, settings.reload)) {
        return Err(EncryptionError::Invalid(msg));
    }
    let mut kms = Vec::new();
    let mut out: BTreeMap<(String, String), Vec<PrefixTransformer>> = BTreeMap::new();
    for entry in &config.resources {
        let providers = entry
            .providers
            .iter()
            .map(|p| provider(p, settings, &mut kms))
            .collect::<Result<Vec<_>, _>>()?;
        for resource in &entry.resources {
            let (group, res) = parse_group_resource(resource);
            for masking in [(group.clone(), "*".to_owned()), ("*".into(), "*".into())] {
                if out.contains_key(&masking) {
                    return Err(EncryptionError::Masked(
                        yaml_name(&group, &res),
                        yaml_name(&masking.0, &masking.1),
                    ));
                }
            }
            out.entry((group, res))
                .or_default()
                .extend(providers.iter().cloned());
        }
    }
    let configured = out
        .into_iter()
        .filter_map(|(gr, list)| Some((gr, Arc::new(Providers::new(list)?))))
        .collect();
    Ok(Loaded { configured, kms })
}

fn keyed<T: Transformer + 'static>(
    prefix: &'static str,
    keys: &[Key],
    build: impl Fn(&[u8]) -> Result<T, KeyLengthError>,
) -> Result<PrefixTransformer, EncryptionError> {
    use base64::Engine;
    let keys = keys
        .iter()
        .map(|key| {
            let secret = base64::engine::general_purpose::STANDARD
                .decode(&key.secret)
                .map_err(|e| {
                    EncryptionError::Key(format!(
                        "could not obtain secret for named key {}: {e}",
                        key.name
                    ))
                })?;
            let t = build(&secret).map_err(|e| {
                EncryptionError::Key(format!(
                    "error while creating cipher for named key {}: {e}",
                    key.name
                ))
            })?;
            Ok(PrefixTransformer {
                prefix: Bytes::from(format!("{}:", key.name)),
                transformer: Arc::new(t),
            })
        })
        .collect::<Result<Vec<_>, EncryptionError>>()?;
    let inner = PrefixTransformers::new(
        keys,
        "no matching key was found for the provided transformer",
    )
    .ok_or_else(|| EncryptionError::Key("provider has no valid keys".into()))?;
    Ok(PrefixTransformer {
        prefix: Bytes::from_static(prefix.as_bytes()),
        transformer: Arc::new(inner),
    })
}

/// A KMS provider: v2 only (v1 is deprecated upstream and not built).
fn kms_provider(
    config: &KmsConfiguration,
    settings: LoadSettings,
    kms: &mut Vec<Arc<kms::Provider>>,
) -> Result<PrefixTransformer, EncryptionError> {
    if config.api_version() == "v1" {
        return Err(if settings.kms_v1 {
            EncryptionError::KmsV1NotBuilt(config.name.clone())
        } else {
            EncryptionError::KmsV1Deprecated
        });
    }
    let config_v2 = kms::ProviderConfig {
        name: config.name.clone(),
        endpoint: config.endpoint.clone(),
        timeout: config.timeout().to_std(),
        timing: kms::Timing::default(),
    };
    let provider = kms::Provider::new(config_v2, envelope_metrics())
        .map_err(|e| EncryptionError::KmsClient(config.name.clone(), e))?;
    kms.push(provider.clone());
    Ok(PrefixTransformer {
        prefix: Bytes::from(provider.prefix()),
        transformer: provider,
    })
}

fn provider(
    p: &ProviderConfiguration,
    settings: LoadSettings,
    kms: &mut Vec<Arc<kms::Provider>>,
) -> Result<PrefixTransformer, EncryptionError> {
    if let Some(config) = &p.kms {
        return kms_provider(config, settings, kms);
    }
    if let Some(aes) = &p.aescbc {
        return keyed(AESCBC_PREFIX, &aes.keys, AesCbc::new);
    }
    if let Some(aes) = &p.aesgcm {
        return keyed(AESGCM_PREFIX, &aes.keys, AesGcm::new);
    }
    if let Some(sb) = &p.secretbox {
        return keyed(SECRETBOX_PREFIX, &sb.keys, Secretbox::new);
    }
    // Validation leaves identity as the only other choice.
    Ok(PrefixTransformer {
        prefix: Bytes::new(),
        transformer: Arc::new(Identity),
    })
}

/// Built-in resources: group, resource and key root.
fn catalogue(opts: &CompletedOptions) -> Vec<(String, String, String)> {
    let alloc = ServiceAllocator::new(
        opts.service_ip_ranges.primary,
        opts.options.service_node_port_range,
        None,
    );
    std::iter::once(builtin::crd())
        .chain(std::iter::once(builtin::api_service()))
        .chain(builtin::core_v1(alloc))
        .chain(builtin::named_groups().into_iter().flatten())
        .map(|b| (b.info.group, b.info.resource, b.info.storage_root))
        .collect()
}

/// A group and resource as upstream's `GroupResource` prints it, the
/// `resource` label of the transformation metrics.
fn resource_label(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// The key prefixes of each configured resource, with upstream's lookup
/// order (the resource, then `*.<group>`, then `*.*`) for built-in ones and
/// upstream's `<group>/<resource>` layout for custom resources; each
/// resource's providers are measured under its name.
fn rules(
    configured: &Configured,
    catalogue: &[(String, String, String)],
    etcd_prefix: &str,
) -> TransformerRules {
    let root = etcd_prefix.trim_end_matches('/');
    let mut by_prefix: BTreeMap<String, Arc<dyn Transformer>> = BTreeMap::new();
    for (group, resource, key_root) in catalogue {
        let found = [
            (group.as_str(), resource.as_str()),
            (group.as_str(), "*"),
            ("*", "*"),
        ]
        .into_iter()
        .find_map(|(g, r)| configured.get(&(g.to_owned(), r.to_owned())));
        if let Some(providers) = found {
            let measured = Measured::new(resource_label(group, resource), providers.clone());
            by_prefix.insert(format!("{root}/{key_root}/"), Arc::new(measured));
        }
    }
    for ((group, resource), t) in configured {
        let prefix = match (group.as_str(), resource.as_str()) {
            ("*", _) => format!("{root}/"),
            ("", "*") => continue,
            (g, "*") => format!("{root}/{g}/"),
            ("", r) => format!("{root}/{r}/"),
            (g, r) => format!("{root}/{g}/{r}/"),
        };
        by_prefix.entry(prefix).or_insert_with(|| {
            let label = match (group.as_str(), resource.as_str()) {
                ("*", _) => String::new(),
                (g, r) => resource_label(g, r),
            };
            Arc::new(Measured::new(label, t.clone()))
        });
    }
    TransformerRules::new(by_prefix.into_iter().collect())
}

/// The KMS providers of the configuration in force (swapped on reload).
#[derive(Default)]
struct KmsProviders(RwLock<Vec<Arc<kms::Provider>>>);

impl KmsProviders {
    fn current(&self) -> Vec<Arc<kms::Provider>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, providers: Vec<Arc<kms::Provider>>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = providers;
    }
}

/// Probes every KMS provider in turn; failures are named `kms-provider-<i>`.
async fn check_all(providers: &[Arc<kms::Provider>]) -> Result<(), String> {
    let mut errs = Vec::new();
    for (i, p) in providers.iter().enumerate() {
        if let Err(e) = p.check().await {
            errs.push(format!("kms-provider-{i}: {e}"));
        }
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// Upstream's `kms-providers` check: one for every KMS v2 provider, run by
/// `/healthz` and `/readyz` but not `/livez`.
struct KmsHealth(Arc<KmsProviders>);

impl HealthCheck for KmsHealth {
    fn name(&self) -> &str {
        "kms-providers"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        let providers = self.0.current();
        Box::pin(async move { check_all(&providers).await })
    }

    fn livez(&self) -> bool {
        false
    }
}

/// Primes each provider's DEK and starts its polling; an unreachable
/// plugin does not stop startup (it may come up later), as upstream.
async fn start_kms(providers: &[Arc<kms::Provider>]) {
    for p in providers {
        if let Err(e) = p.start().await {
            tracing::error!(provider = p.name(), error = %e, "kms plugin failed health check probe");
        }
    }
}

/// The backend with encryption at rest applied, and the KMS health check
/// when there is one.
pub struct Encryption {
    pub kv: Arc<dyn Kv>,
    pub health_check: Option<Arc<dyn HealthCheck>>,
}

/// Wraps the backend when `--encryption-provider-config` is set; starts the
/// reload task when asked to.
pub async fn wrap(kv: Arc<dyn Kv>, opts: &CompletedOptions) -> Result<Encryption, EncryptionError> {
    let flags = &opts.options.flags;
    let Some(path) = flags.path("encryption-provider-config").ok().flatten() else {
        return Ok(Encryption {
            kv,
            health_check: None,
        });
    };
    let settings = LoadSettings {
        reload: flags
            .bool("encryption-provider-config-automatic-reload")
            .unwrap_or(false),
        kms_v1: opts.feature_gates.get("KMSv1") == Some(&true),
    };
    let catalogue = catalogue(opts);
    let prefix = opts.options.etcd.prefix.clone();
    let loaded = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || load(&path, settings))
            .await
            .map_err(|e| EncryptionError::Read(std::io::Error::other(e)))??
    };
    start_kms(&loaded.kms).await;
    let wrapped = Arc::new(TransformingKv::new(
        kv,
        rules(&loaded.configured, &catalogue, &prefix),
    ));
    tracing::info!(path = %path.display(), resources = loaded.configured.len(), kms = loaded.kms.len(), "encryption at rest configured");
    let uses_kms = !loaded.kms.is_empty();
    let providers = Arc::new(KmsProviders::default());
    providers.set(loaded.kms);
    if settings.reload {
        let reloader = Reloader {
            path,
            kv: wrapped.clone(),
            catalogue,
            prefix,
            settings,
            providers: providers.clone(),
        };
        tokio::spawn(reloader.run());
    }
    // With reload the check exists even without KMS providers (a no-op).
    let health_check = (uses_kms || settings.reload)
        .then(|| Arc::new(KmsHealth(providers)) as Arc<dyn HealthCheck>);
    Ok(Encryption {
        kv: wrapped,
        health_check,
    })
}

fn digest(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok().map(|d| Sha256::digest(d).to_vec())
}

/// Re-reads the configuration file whenever its content changes.
struct Reloader {
    path: PathBuf,
    kv: Arc<TransformingKv>,
    catalogue: Vec<(String, String, String)>,
    prefix: String,
    settings: LoadSettings,
    providers: Arc<KmsProviders>,
}

/// The least time new KMS plugins get to become healthy on reload.
const MIN_KMS_RELOAD_WAIT: Duration = Duration::from_secs(10);

/// Waits (polling) until every new KMS provider is healthy, for at most
/// twice their timeouts and at least [`MIN_KMS_RELOAD_WAIT`], as upstream.
async fn wait_healthy(providers: &[Arc<kms::Provider>], timeouts: Duration) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + (2 * timeouts).max(MIN_KMS_RELOAD_WAIT);
    loop {
        let result = check_all(providers).await;
        if result.is_ok() || tokio::time::Instant::now() >= deadline {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl Reloader {
    async fn read(&self) -> Option<(Option<Vec<u8>>, Result<Loaded, EncryptionError>)> {
        let (path, settings) = (self.path.clone(), self.settings);
        tokio::task::spawn_blocking(move || (digest(&path), load(&path, settings)))
            .await
            .ok()
    }

    async fn run(self) {
        let mut current = self.read().await.and_then(|(hash, _)| hash);
        let mut tick = tokio::time::interval(RELOAD_INTERVAL);
        loop {
            tick.tick().await;
            let Some((hash, loaded)) = self.read().await else {
                continue;
            };
            if hash.is_none() || hash == current {
                continue;
            }
            match self.apply(loaded).await {
                Ok(()) => {
                    current = hash;
                    tracing::info!(path = %self.path.display(), "encryption configuration reloaded");
                }
                Err(e) => {
                    tracing::error!(path = %self.path.display(), error = %e, "reloading the encryption configuration failed; keeping the previous one")
                }
            }
        }
    }

    /// Puts a loaded configuration in force once its KMS plugins are
    /// healthy; the old providers stop polling once no request uses them.
    async fn apply(&self, loaded: Result<Loaded, EncryptionError>) -> Result<(), String> {
        let loaded = loaded.map_err(|e| e.to_string())?;
        let timeouts = loaded.kms.iter().map(|p| p.timeout()).sum();
        wait_healthy(&loaded.kms, timeouts).await?;
        start_kms(&loaded.kms).await;
        self.kv
            .set_rules(rules(&loaded.configured, &self.catalogue, &self.prefix));
        self.providers.set(loaded.kms);
        Ok(())
    }
}

#[path = "encryption_metrics.rs"]
mod metrics;

#[cfg(test)]
#[path = "encryption_tests.rs"]
mod tests;
