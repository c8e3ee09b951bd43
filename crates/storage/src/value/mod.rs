//! Value transformers: how stored bytes are turned into what the backend
//! holds and back (upstream's `k8s.io/apiserver/pkg/storage/value`). They
//! implement encryption at rest: [`PrefixTransformers`] writes with its first
//! transformer and reads with whichever one's prefix the stored value
//! carries, so keys can be rotated; [`TransformingKv`] applies them to the
//! values of a [`crate::Kv`], so every backend gets them.

pub mod encrypt;
mod kv;

use std::fmt;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

pub use kv::{TransformerRules, TransformingKv};

/// The prefix every encrypted value starts with; identity refuses such
/// values, so an identity-first configuration still reads encrypted data
/// through a later provider.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// Why a value could not be transformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    #[error("identity transformer tried to read encrypted data")]
    EncryptedDataForIdentity,
    #[error("the stored data was shorter than the required size")]
    TooShort,
    #[error("the stored data is not a multiple of the block size")]
    InvalidBlockSize,
    #[error("invalid PKCS7 data (empty or not padded)")]
    InvalidPkcs7Data,
    #[error("invalid padding on input")]
    InvalidPkcs7Padding,
    #[error("cipher: message authentication failed")]
    Authentication,
    #[error("output array was not large enough for encryption")]
    Encrypt,
    /// No transformer's prefix matched (the message names what was tried).
    #[error("{0}")]
    NoMatch(&'static str),
    /// A provider's own failure (e.g. a KMS plugin error), as it words it.
    #[error("{0}")]
    Provider(String),
    /// Every matching transformer failed.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    All(Vec<TransformError>),
}

/// Turns values into their stored form and back. `context` is the
/// authenticated data bound to the value (the storage key), so a value
/// cannot be moved to another key unnoticed by the AEAD providers.
pub trait Transformer: Send + Sync + fmt::Debug {
    fn transform_from_storage(&self, data: &Bytes, context: &[u8])
        -> Result<Bytes, TransformError>;
    fn transform_to_storage(&self, data: &Bytes, context: &[u8]) -> Result<Bytes, TransformError>;
}

/// Stores values unchanged (the `identity` provider); refuses values that
/// carry [`ENCRYPTED_PREFIX`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Identity;

impl Transformer for Identity {
    fn transform_from_storage(&self, data: &Bytes, _: &[u8]) -> Result<Bytes, TransformError> {
        if data.starts_with(ENCRYPTED_PREFIX) {
            return Err(TransformError::EncryptedDataForIdentity);
        }
        Ok(data.clone())
    }

    fn transform_to_storage(&self, data: &Bytes, _: &[u8]) -> Result<Bytes, TransformError> {
        Ok(data.clone())
    }
}

/// A transformer whose output is marked with `prefix`.
#[derive(Debug, Clone)]
pub struct PrefixTransformer {
    pub prefix: Bytes,
    pub transformer: Arc<dyn Transformer>,
}

/// Writes with the first transformer (its prefix first), reads with each
/// transformer whose prefix the value starts with until one succeeds.
#[derive(Debug, Clone)]
pub struct PrefixTransformers {
    transformers: Vec<PrefixTransformer>,
    /// What a value no prefix matches gets.
    no_match: &'static str,
}

impl PrefixTransformers {
    /// `transformers` must not be empty: the first one writes. `no_match`
    /// is the error of a value no prefix matches.
    pub fn new(transformers: Vec<PrefixTransformer>, no_match: &'static str) -> Option<Self> {
        (!transformers.is_empty()).then_some(PrefixTransformers {
            transformers,
            no_match,
        })
    }
}

impl Transformer for PrefixTransformers {
    fn transform_from_storage(
        &self,
        data: &Bytes,
        context: &[u8],
    ) -> Result<Bytes, TransformError> {
        let mut errors = Vec::new();
        for t in &self.transformers {
            if !data.starts_with(&t.prefix) {
                continue;
            }
            match t
                .transformer
                .transform_from_storage(&data.slice(t.prefix.len()..), context)
            {
                Ok(out) => return Ok(out),
                // Identity refusing encrypted data is not a failure: a
                // later provider reads it (migration away from encryption).
                Err(_) if t.prefix.is_empty() => continue,
                // Providers repeated with other keys share a prefix, so a
                // failure here must not stop the next match.
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => Err(TransformError::NoMatch(self.no_match)),
            1 => Err(errors.remove(0)),
            _ => Err(TransformError::All(errors)),
        }
    }

    fn transform_to_storage(&self, data: &Bytes, context: &[u8]) -> Result<Bytes, TransformError> {
        let first = &self.transformers[0];
        let body = first.transformer.transform_to_storage(data, context)?;
        if first.prefix.is_empty() {
            return Ok(body);
        }
        let mut out = BytesMut::with_capacity(first.prefix.len() + body.len());
        out.extend_from_slice(&first.prefix);
        out.extend_from_slice(&body);
        Ok(out.freeze())
    }
}

#[cfg(test)]
mod tests {
    use super::encrypt::aes::{AesCbc, AesGcm};
    use super::*;

    fn named(name: &str, t: impl Transformer + 'static) -> PrefixTransformer {
        PrefixTransformer {
            prefix: Bytes::from(format!("{name}:")),
            transformer: Arc::new(t),
        }
    }

    fn provider(prefix: &str, keys: Vec<PrefixTransformer>) -> PrefixTransformer {
        let inner = PrefixTransformers::new(keys, "no matching key was found");
        PrefixTransformer {
            prefix: Bytes::from(prefix.to_owned()),
            transformer: Arc::new(inner.unwrap_or_else(|| panic!("keys"))),
        }
    }

    fn chain(list: Vec<PrefixTransformer>) -> PrefixTransformers {
        PrefixTransformers::new(list, "no matching prefix found").unwrap_or_else(|| panic!("list"))
    }

    fn identity() -> PrefixTransformer {
        PrefixTransformer {
            prefix: Bytes::new(),
            transformer: Arc::new(Identity),
        }
    }

    #[test]
    fn first_key_writes_and_every_key_reads() {
        let k1 = AesCbc::new(&[1; 32]).unwrap_or_else(|e| panic!("{e}"));
        let k2 = AesCbc::new(&[2; 32]).unwrap_or_else(|e| panic!("{e}"));
        let old = chain(vec![provider(
            "k8s:enc:aescbc:v1:",
            vec![named("key1", k1.clone())],
        )]);
        let rotated = chain(vec![provider(
            "k8s:enc:aescbc:v1:",
            vec![named("key2", k2), named("key1", k1)],
        )]);
        let plain = Bytes::from_static(b"{\"kind\":\"Secret\"}");
        let stored = old.transform_to_storage(&plain, b"/k").unwrap_or_default();
        assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key1:"));
        assert_eq!(
            rotated.transform_from_storage(&stored, b"/k"),
            Ok(plain.clone())
        );
        let restored = rotated
            .transform_to_storage(&plain, b"/k")
            .unwrap_or_default();
        assert!(restored.starts_with(b"k8s:enc:aescbc:v1:key2:"));
        assert_eq!(
            old.transform_from_storage(&restored, b"/k"),
            Err(TransformError::NoMatch("no matching key was found"))
        );
    }

    #[test]
    fn identity_first_reads_encrypted_data_and_plain_data() {
        let gcm = AesGcm::new(&[7; 16]).unwrap_or_else(|e| panic!("{e}"));
        let encrypting = chain(vec![provider(
            "k8s:enc:aesgcm:v1:",
            vec![named("a", gcm.clone())],
        )]);
        let decrypting = chain(vec![
            identity(),
            provider("k8s:enc:aesgcm:v1:", vec![named("a", gcm)]),
        ]);
        let plain = Bytes::from_static(b"data");
        let stored = encrypting
            .transform_to_storage(&plain, b"/k")
            .unwrap_or_default();
        assert_eq!(
            decrypting.transform_from_storage(&stored, b"/k"),
            Ok(plain.clone())
        );
        assert_eq!(
            decrypting.transform_from_storage(&plain, b"/k"),
            Ok(plain.clone())
        );
        // Identity first writes plain data.
        assert_eq!(
            decrypting.transform_to_storage(&plain, b"/k"),
            Ok(plain.clone())
        );
        // Without identity, plain data is refused.
        assert_eq!(
            encrypting.transform_from_storage(&plain, b"/k"),
            Err(TransformError::NoMatch("no matching prefix found"))
        );
    }
}
