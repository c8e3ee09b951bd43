//! The providers of one `providers` list element (upstream's
//! `encryptionconfig` transformer builders): `aescbc`, `aesgcm` and
//! `secretbox` over their named keys, `kms` v2 through crate `kms`, and
//! `identity`.

use std::sync::Arc;

use bytes::Bytes;
use storage::value::encrypt::aes::{AesCbc, AesGcm};
use storage::value::encrypt::secretbox::Secretbox;
use storage::value::encrypt::KeyLengthError;
use storage::value::{Identity, PrefixTransformer, PrefixTransformers, Transformer};

use super::metrics::envelope_metrics;
use super::types::{Key, KmsConfiguration, ProviderConfiguration};
use super::{EncryptionError, LoadSettings};

const AESCBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
const AESGCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
const SECRETBOX_PREFIX: &str = "k8s:enc:secretbox:v1:";

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

pub(super) fn provider(
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
