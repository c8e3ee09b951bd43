//! The `secretbox` provider (upstream's `storage/value/encrypt/secretbox`):
//! a random 24-byte nonce, then NaCl secretbox (XSalsa20-Poly1305) of the
//! value, over a 32-byte key.

use std::fmt;

use aes_gcm::aead::{Aead, KeyInit};
use bytes::Bytes;
use crypto_secretbox::XSalsa20Poly1305;

use super::{random, KeyLengthError};
use crate::value::{TransformError, Transformer};

const SECRETBOX_NONCE: usize = 24;

/// The secretbox key length.
pub const SECRETBOX_KEY_SIZES: &[usize] = &[32];

/// The `secretbox` provider over one key.
#[derive(Clone)]
pub struct Secretbox([u8; 32]);

impl fmt::Debug for Secretbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secretbox")
    }
}

impl Secretbox {
    pub fn new(key: &[u8]) -> Result<Self, KeyLengthError> {
        key.try_into().map(Secretbox).map_err(|_| KeyLengthError {
            got: key.len(),
            expected: SECRETBOX_KEY_SIZES,
        })
    }

    fn cipher(&self) -> XSalsa20Poly1305 {
        XSalsa20Poly1305::new((&self.0).into())
    }
}

impl Transformer for Secretbox {
    fn transform_from_storage(&self, data: &Bytes, _: &[u8]) -> Result<Bytes, TransformError> {
        if data.len() < SECRETBOX_NONCE {
            return Err(TransformError::TooShort);
        }
        let (nonce, sealed) = data.split_at(SECRETBOX_NONCE);
        self.cipher()
            .decrypt(nonce.into(), sealed)
            .map(Bytes::from)
            .map_err(|_| TransformError::Authentication)
    }

    fn transform_to_storage(&self, data: &Bytes, _: &[u8]) -> Result<Bytes, TransformError> {
        let nonce = random::<SECRETBOX_NONCE>();
        let sealed = self
            .cipher()
            .encrypt((&nonce).into(), data.as_ref())
            .map_err(|_| TransformError::Encrypt)?;
        let mut out = Vec::with_capacity(SECRETBOX_NONCE + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(Bytes::from(out))
    }
}
