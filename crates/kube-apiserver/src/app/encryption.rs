//! Encryption at rest (`--encryption-provider-config`, upstream's
//! `pkg/server/options/encryptionconfig`): the apiserver.config.k8s.io/v1
//! EncryptionConfiguration is read and validated as upstream does, each
//! configured resource gets its providers (the first encrypts, all decrypt)
//! and the storage backend is wrapped in a [`TransformingKv`] that applies
//! them to the keys of those resources. With
//! `--encryption-provider-config-automatic-reload` the file is re-read when
//! it changes; a broken new version keeps the old configuration in force.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::field_errors::aggregate_message;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use storage::value::encrypt::{AesCbc, AesGcm, KeyLengthError, Secretbox};
use storage::value::{
    Identity, PrefixTransformer, PrefixTransformers, Transformer, TransformerRules, TransformingKv,
};
use storage::Kv;

use super::encryption_config::{validate, EncryptionConfiguration, Key, ProviderConfiguration};
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
        "error while building transformers: KMS provider {0:?}: KMS encryption is not built into this server (use aescbc, aesgcm or secretbox)"
    )]
    KmsNotBuilt(String),
    #[error("error while building transformers: {0}")]
    Key(String),
    #[error("error while building transformers: resource {0:?} is masked by earlier rule {1:?}")]
    Masked(String, String),
}

/// The transformer of each configured (group, resource); `*` is a wildcard.
type Configured = BTreeMap<(String, String), Arc<dyn Transformer>>;

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

/// Reads and validates the configuration file; the transformer of each
/// configured group/resource.
fn load(path: &Path) -> Result<Configured, EncryptionError> {
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
    if let Some(msg) = aggregate_message(&validate(&config)) {
        return Err(EncryptionError::Invalid(msg));
    }
    let mut out: BTreeMap<(String, String), Vec<PrefixTransformer>> = BTreeMap::new();
    for entry in &config.resources {
        let providers = entry
            .providers
            .iter()
            .map(provider)
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
    Ok(out
        .into_iter()
        .filter_map(|(gr, list)| {
            let t = PrefixTransformers::new(list, "no matching prefix found")?;
            Some((gr, Arc::new(t) as Arc<dyn Transformer>))
        })
        .collect())
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

fn provider(p: &ProviderConfiguration) -> Result<PrefixTransformer, EncryptionError> {
    if let Some(kms) = &p.kms {
        return Err(EncryptionError::KmsNotBuilt(kms.name.clone()));
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

/// The key prefixes of each configured resource, with upstream's lookup
/// order (the resource, then `*.<group>`, then `*.*`) for built-in ones and
/// upstream's `<group>/<resource>` layout for custom resources.
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
        if let Some(t) = found {
            by_prefix.insert(format!("{root}/{key_root}/"), t.clone());
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
        by_prefix.entry(prefix).or_insert_with(|| t.clone());
    }
    TransformerRules::new(by_prefix.into_iter().collect())
}

/// Wraps the backend when `--encryption-provider-config` is set; starts the
/// reload task when asked to.
pub async fn wrap(
    kv: Arc<dyn Kv>,
    opts: &CompletedOptions,
) -> Result<Arc<dyn Kv>, EncryptionError> {
    let flags = &opts.options.flags;
    let Some(path) = flags.path("encryption-provider-config").ok().flatten() else {
        return Ok(kv);
    };
    let catalogue = catalogue(opts);
    let prefix = opts.options.etcd.prefix.clone();
    let configured = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || load(&path))
            .await
            .map_err(|e| EncryptionError::Read(std::io::Error::other(e)))??
    };
    let wrapped = Arc::new(TransformingKv::new(
        kv,
        rules(&configured, &catalogue, &prefix),
    ));
    tracing::info!(path = %path.display(), resources = configured.len(), "encryption at rest configured");
    if flags
        .bool("encryption-provider-config-automatic-reload")
        .unwrap_or(false)
    {
        tokio::spawn(reload(path, wrapped.clone(), catalogue, prefix));
    }
    Ok(wrapped)
}

fn digest(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok().map(|d| Sha256::digest(d).to_vec())
}

/// Re-reads the file whenever its content changes.
async fn reload(
    path: PathBuf,
    kv: Arc<TransformingKv>,
    catalogue: Vec<(String, String, String)>,
    prefix: String,
) {
    let read = {
        let path = path.clone();
        move || {
            let path = path.clone();
            tokio::task::spawn_blocking(move || {
                let hash = digest(&path);
                (hash, load(&path))
            })
        }
    };
    let mut current = match read().await {
        Ok((hash, _)) => hash,
        Err(_) => None,
    };
    let mut tick = tokio::time::interval(RELOAD_INTERVAL);
    loop {
        tick.tick().await;
        let Ok((hash, loaded)) = read().await else {
            continue;
        };
        if hash.is_none() || hash == current {
            continue;
        }
        match loaded {
            Ok(configured) => {
                kv.set_rules(rules(&configured, &catalogue, &prefix));
                current = hash;
                tracing::info!(path = %path.display(), "encryption configuration reloaded");
            }
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "reloading the encryption configuration failed; keeping the previous one")
            }
        }
    }
}

#[cfg(test)]
#[path = "encryption_tests.rs"]
mod tests;
