//! The stored `EncryptedObject` (after the `k8s:enc:kms:v2:<name>:`
//! prefix): upstream's limits on its fields and the key under which its
//! decrypted DEK is cached.

use std::collections::BTreeMap;

use bytes::Bytes;
use prost::Message;

pub use crate::api::{EncryptedDekSourceType, EncryptedObject};

/// Longest key ID, encrypted DEK source and annotations (keys + values).
pub const KEY_ID_MAX: usize = 1024;
pub const ENCRYPTED_DEK_SOURCE_MAX: usize = 1024;
pub const ANNOTATIONS_MAX: usize = 32 * 1024;

/// Why a key ID is refused (upstream's `ValidateKeyID` errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyIdError {
    #[error("keyID is empty")]
    Empty,
    #[error("keyID is {0} bytes, which exceeds the max size of {KEY_ID_MAX}")]
    TooLong(usize),
}

impl KeyIdError {
    /// Upstream's error code, the `error` label of
    /// `apiserver_envelope_encryption_invalid_key_id_from_status_total`.
    pub fn code(self) -> &'static str {
        match self {
            KeyIdError::Empty => "empty",
            KeyIdError::TooLong(_) => "too_long",
        }
    }
}

/// Checks a key ID as upstream's `ValidateKeyID`.
pub fn validate_key_id(key_id: &str) -> Result<(), KeyIdError> {
    match key_id.len() {
        0 => Err(KeyIdError::Empty),
        n if n > KEY_ID_MAX => Err(KeyIdError::TooLong(n)),
        _ => Ok(()),
    }
}

fn dns_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// Upstream's `IsFullyQualifiedDomainName` on an annotation key.
fn fqdn_error(key: &str) -> Option<String> {
    let invalid = |detail: &str| Some(format!("annotations: Invalid value: {key:?}: {detail}"));
    let name = key.strip_suffix('.').unwrap_or(key);
    if name.is_empty() {
        return Some("annotations: Required value".into());
    }
    if name.split('.').count() < 2 {
        return invalid("should be a domain with at least two segments separated by dots");
    }
    if name.len() > 253 {
        return invalid("must be no more than 253 characters");
    }
    if !name.split('.').all(dns_label) {
        return invalid(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        );
    }
    None
}

fn validate_annotations(annotations: &BTreeMap<String, Bytes>) -> Result<(), String> {
    let mut errs: Vec<String> = annotations.keys().filter_map(|k| fqdn_error(k)).collect();
    let total: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    if total > ANNOTATIONS_MAX {
        errs.push(format!(
            "total size of annotations is {total}, which exceeds the max size of {ANNOTATIONS_MAX}"
        ));
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// Upstream's `ValidateEncryptedObject`, with its messages.
pub fn validate(o: &EncryptedObject) -> Result<(), String> {
    if EncryptedDekSourceType::try_from(o.encrypted_dek_source_type).is_err() {
        return Err(format!(
            "unknown encryptedDEKSourceType: {}",
            o.encrypted_dek_source_type
        ));
    }
    if o.encrypted_data.is_empty() {
        return Err("encrypted data is empty".into());
    }
    let source = o.encrypted_dek_source.len();
    if source == 0 {
        return Err(
            "failed to validate encrypted DEK source: encrypted DEK source is empty".into(),
        );
    }
    if source > ENCRYPTED_DEK_SOURCE_MAX {
        return Err(format!(
            "failed to validate encrypted DEK source: encrypted DEK source is {source} bytes, which exceeds the max size of {ENCRYPTED_DEK_SOURCE_MAX}"
        ));
    }
    validate_key_id(&o.key_id).map_err(|e| format!("failed to validate key id: {e}"))?;
    validate_annotations(&o.annotations).map_err(|e| format!("failed to validate annotations: {e}"))
}

/// Decodes and validates what follows a value's KMS v2 prefix.
pub fn decode(data: Bytes) -> Result<EncryptedObject, String> {
    let object = EncryptedObject::decode(data)
        .map_err(|_| "proto: cannot parse invalid wire-format data".to_owned())?;
    validate(&object)?;
    Ok(object)
}

fn push_u16_prefixed(out: &mut Vec<u8>, data: &[u8]) {
    // Fields are bounded by validation (≤ 32 KiB), so the length fits.
    let len = u16::try_from(data.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(data);
}

/// The DEK cache key of an object: its source type, encrypted DEK source,
/// key ID and annotations, each length-prefixed so no two differ only in
/// where one field ends.
pub fn cache_key(o: &EncryptedObject) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + o.encrypted_dek_source.len() + o.key_id.len());
    out.extend_from_slice(&o.encrypted_dek_source_type.to_be_bytes());
    push_u16_prefixed(&mut out, &o.encrypted_dek_source);
    push_u16_prefixed(&mut out, o.key_id.as_bytes());
    if !o.annotations.is_empty() {
        let count = u32::try_from(o.annotations.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&count.to_be_bytes());
        // A BTreeMap iterates sorted by key, as upstream sorts them.
        for (k, v) in &o.annotations {
            push_u16_prefixed(&mut out, k.as_bytes());
            push_u16_prefixed(&mut out, v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object() -> EncryptedObject {
        EncryptedObject {
            encrypted_data: Bytes::from_static(b"data"),
            key_id: "k1".into(),
            encrypted_dek_source: Bytes::from_static(b"dek"),
            annotations: BTreeMap::new(),
            encrypted_dek_source_type: EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32,
        }
    }

    #[test]
    fn limits_are_upstreams() {
        assert_eq!(validate(&object()), Ok(()));
        let mut o = object();
        o.encrypted_dek_source_type = 7;
        assert_eq!(
            validate(&o),
            Err("unknown encryptedDEKSourceType: 7".into())
        );
        let mut o = object();
        o.key_id = "x".repeat(1025);
        assert_eq!(
            validate(&o),
            Err("failed to validate key id: keyID is 1025 bytes, which exceeds the max size of 1024".into())
        );
        let mut o = object();
        o.encrypted_dek_source = Bytes::new();
        assert!(validate(&o).is_err_and(|e| e.ends_with("encrypted DEK source is empty")));
        let mut o = object();
        o.encrypted_data = Bytes::new();
        assert_eq!(validate(&o), Err("encrypted data is empty".into()));
        let mut o = object();
        o.annotations
            .insert("nodots".into(), Bytes::from_static(b"v"));
        assert!(validate(&o).is_err_and(|e| e.contains("at least two segments")));
        let mut o = object();
        o.annotations
            .insert("version.kms.example.com".into(), Bytes::from_static(b"v"));
        assert_eq!(validate(&o), Ok(()));
    }

    #[test]
    fn cache_keys_tell_fields_apart() {
        let a = object();
        let mut b = object();
        b.key_id = "k2".into();
        let mut c = object();
        c.annotations.insert("a.b".into(), Bytes::new());
        let mut d = object();
        d.encrypted_dek_source_type = EncryptedDekSourceType::AesGcmKey as i32;
        let keys = [cache_key(&a), cache_key(&b), cache_key(&c), cache_key(&d)];
        for (i, x) in keys.iter().enumerate() {
            for y in &keys[i + 1..] {
                assert_ne!(x, y);
            }
        }
        // The data itself is not part of the key.
        let mut e = object();
        e.encrypted_data = Bytes::from_static(b"other");
        assert_eq!(cache_key(&a), cache_key(&e));
    }
}
