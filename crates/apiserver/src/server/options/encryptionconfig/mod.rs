//! Encryption at rest from an `--encryption-provider-config` file
//! (upstream's `k8s.io/apiserver/pkg/server/options/encryptionconfig`): the
//! apiserver.config.k8s.io/v1 EncryptionConfiguration ([`types`]) is read
//! and validated as upstream does, each configured resource gets its
//! providers ([`providers`]; the first encrypts, all decrypt) and the
//! storage backend is wrapped in a [`TransformingKv`] that applies them to
//! the keys of those resources ([`rules`]). KMS v2 providers (crate `kms`)
//! are probed once at startup and polled after; their health is the
//! `kms-providers` check of `/healthz` and `/readyz` ([`health`]). With
//! automatic reload the file is re-read when it changes ([`controller`]); a
//! broken new version, or one whose KMS plugins do not become healthy,
//! keeps the old configuration in force. Transformations and KMS v2
//! providers feed upstream's encryption metrics ([`metrics`]).
//!
//! What is Kubernetes-specific comes in as [`EncryptionOptions`]: the
//! server's built-in resources and their key roots, and the flags.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use apimachinery::field_errors::aggregate_message;
use storage::value::{PrefixTransformer, TransformingKv};
use storage::Kv;

use self::controller::Reloader;
use self::health::{start_kms, KmsHealth, KmsProviders};
use self::metrics::Providers;
use self::types::{validate, EncryptionConfiguration};
use crate::server::HealthCheck;

mod controller;
mod health;
mod metrics;
mod providers;
mod rules;
mod types;

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
pub struct LoadSettings {
    pub reload: bool,
    pub kms_v1: bool,
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
            .map(|p| providers::provider(p, settings, &mut kms))
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

/// The backend with encryption at rest applied, and the KMS health check
/// when there is one.
pub struct Encryption {
    pub kv: Arc<dyn Kv>,
    pub health_check: Option<Arc<dyn HealthCheck>>,
}

/// What the configuration is applied to: the file and how it is read (from
/// the server's flags and feature gates), the server's built-in resources
/// as (group, resource, key root), and the storage prefix.
pub struct EncryptionOptions {
    pub path: PathBuf,
    pub settings: LoadSettings,
    pub catalogue: Vec<(String, String, String)>,
    pub etcd_prefix: String,
}

/// Wraps the backend in the configured encryption; starts the reload task
/// when asked to.
pub async fn wrap(
    kv: Arc<dyn Kv>,
    options: EncryptionOptions,
) -> Result<Encryption, EncryptionError> {
    let EncryptionOptions {
        path,
        settings,
        catalogue,
        etcd_prefix: prefix,
    } = options;
    let loaded = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || load(&path, settings))
            .await
            .map_err(|e| EncryptionError::Read(std::io::Error::other(e)))??
    };
    start_kms(&loaded.kms).await;
    let wrapped = Arc::new(TransformingKv::new(
        kv,
        rules::rules(&loaded.configured, &catalogue, &prefix),
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

#[cfg(test)]
mod tests;
