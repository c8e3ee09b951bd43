//! The `aescbc` and `aesgcm` providers (upstream's
//! `storage/value/encrypt/aes`), over a 16, 24 or 32-byte key:
//!
//! * `aescbc`: a random 16-byte IV, then AES-CBC of the PKCS#7-padded value.
//! * `aesgcm`: a random 12-byte nonce, then AES-GCM of the value with the
//!   storage key as authenticated data.

use std::fmt;

use ::aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use ::aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{AesGcm as Gcm, Nonce};
use bytes::Bytes;

use super::{random, KeyLengthError};
use crate::value::{TransformError, Transformer};

const AES_BLOCK: usize = 16;
const GCM_NONCE: usize = 12;

/// Key lengths of the AES providers (AES-128, -192 and -256).
pub const AES_KEY_SIZES: &[usize] = &[16, 24, 32];

/// An AES key of any of the three sizes.
#[derive(Clone)]
enum AesKey {
    K128([u8; 16]),
    K192([u8; 24]),
    K256([u8; 32]),
}

impl AesKey {
    fn new(key: &[u8]) -> Result<Self, KeyLengthError> {
        let err = || KeyLengthError {
            got: key.len(),
            expected: AES_KEY_SIZES,
        };
        Ok(match key.len() {
            16 => AesKey::K128(key.try_into().map_err(|_| err())?),
            24 => AesKey::K192(key.try_into().map_err(|_| err())?),
            32 => AesKey::K256(key.try_into().map_err(|_| err())?),
            _ => return Err(err()),
        })
    }

    fn bits(&self) -> usize {
        match self {
            AesKey::K128(_) => 128,
            AesKey::K192(_) => 192,
            AesKey::K256(_) => 256,
        }
    }
}

/// The `aescbc` provider over one key.
#[derive(Clone)]
pub struct AesCbc(AesKey);

impl fmt::Debug for AesCbc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AesCbc(AES-{})", self.0.bits())
    }
}

impl AesCbc {
    pub fn new(key: &[u8]) -> Result<Self, KeyLengthError> {
        AesKey::new(key).map(AesCbc)
    }
}

fn cbc_encrypt(key: &AesKey, iv: &[u8; AES_BLOCK], buf: &mut [u8], len: usize) -> Option<()> {
    use cbc::cipher::block_padding::Pkcs7;
    let done = match key {
        AesKey::K128(k) => cbc::Encryptor::<Aes128>::new(k.into(), iv.into())
            .encrypt_padded_mut::<Pkcs7>(buf, len)
            .map(|_| ()),
        AesKey::K192(k) => cbc::Encryptor::<Aes192>::new(k.into(), iv.into())
            .encrypt_padded_mut::<Pkcs7>(buf, len)
            .map(|_| ()),
        AesKey::K256(k) => cbc::Encryptor::<Aes256>::new(k.into(), iv.into())
            .encrypt_padded_mut::<Pkcs7>(buf, len)
            .map(|_| ()),
    };
    done.ok()
}

fn cbc_decrypt(key: &AesKey, iv: &[u8], buf: &mut [u8]) {
    use cbc::cipher::block_padding::NoPadding;
    // The length is a whole number of blocks (checked by the caller), so
    // unpadded decryption cannot fail; padding is checked afterwards to
    // report upstream's errors.
    let _ = match key {
        AesKey::K128(k) => cbc::Decryptor::<Aes128>::new(k.into(), iv.into())
            .decrypt_padded_mut::<NoPadding>(buf)
            .map(|_| ()),
        AesKey::K192(k) => cbc::Decryptor::<Aes192>::new(k.into(), iv.into())
            .decrypt_padded_mut::<NoPadding>(buf)
            .map(|_| ()),
        AesKey::K256(k) => cbc::Decryptor::<Aes256>::new(k.into(), iv.into())
            .decrypt_padded_mut::<NoPadding>(buf)
            .map(|_| ()),
    };
}

impl Transformer for AesCbc {
    fn transform_from_storage(&self, data: &Bytes, _: &[u8]) -> Result<Bytes, TransformError> {
        if data.len() < AES_BLOCK {
            return Err(TransformError::TooShort);
        }
        let (iv, body) = data.split_at(AES_BLOCK);
        if body.len() % AES_BLOCK != 0 {
            return Err(TransformError::InvalidBlockSize);
        }
        let mut out = body.to_vec();
        cbc_decrypt(&self.0, iv, &mut out);
        let pad = match out.last() {
            Some(&p) => usize::from(p),
            None => return Err(TransformError::InvalidPkcs7Data),
        };
        if pad == 0 || pad > AES_BLOCK || pad > out.len() {
            return Err(TransformError::InvalidPkcs7Padding);
        }
        let keep = out.len() - pad;
        if out[keep..].iter().any(|&b| usize::from(b) != pad) {
            return Err(TransformError::InvalidPkcs7Padding);
        }
        out.truncate(keep);
        Ok(Bytes::from(out))
    }

    fn transform_to_storage(&self, data: &Bytes, _: &[u8]) -> Result<Bytes, TransformError> {
        let iv = random::<AES_BLOCK>();
        let padded = (data.len() / AES_BLOCK + 1) * AES_BLOCK;
        let mut out = Vec::with_capacity(AES_BLOCK + padded);
        out.extend_from_slice(&iv);
        out.extend_from_slice(data);
        out.resize(AES_BLOCK + padded, 0);
        cbc_encrypt(&self.0, &iv, &mut out[AES_BLOCK..], data.len())
            .ok_or(TransformError::Encrypt)?;
        Ok(Bytes::from(out))
    }
}

/// The `aesgcm` provider over one key.
#[derive(Clone)]
pub struct AesGcm(AesKey);

impl fmt::Debug for AesGcm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AesGcm(AES-{})", self.0.bits())
    }
}

impl AesGcm {
    pub fn new(key: &[u8]) -> Result<Self, KeyLengthError> {
        AesKey::new(key).map(AesGcm)
    }
}

type Gcm128 = Gcm<Aes128, aes_gcm::aead::consts::U12>;
type Gcm192 = Gcm<Aes192, aes_gcm::aead::consts::U12>;
type Gcm256 = Gcm<Aes256, aes_gcm::aead::consts::U12>;

impl AesGcm {
    fn seal(&self, nonce: &[u8], payload: Payload<'_, '_>) -> Result<Vec<u8>, aes_gcm::Error> {
        let nonce = Nonce::from_slice(nonce);
        match &self.0 {
            AesKey::K128(k) => Gcm128::new(k.into()).encrypt(nonce, payload),
            AesKey::K192(k) => Gcm192::new(k.into()).encrypt(nonce, payload),
            AesKey::K256(k) => Gcm256::new(k.into()).encrypt(nonce, payload),
        }
    }

    fn open(&self, nonce: &[u8], payload: Payload<'_, '_>) -> Result<Vec<u8>, aes_gcm::Error> {
        let nonce = Nonce::from_slice(nonce);
        match &self.0 {
            AesKey::K128(k) => Gcm128::new(k.into()).decrypt(nonce, payload),
            AesKey::K192(k) => Gcm192::new(k.into()).decrypt(nonce, payload),
            AesKey::K256(k) => Gcm256::new(k.into()).decrypt(nonce, payload),
        }
    }
}

impl Transformer for AesGcm {
    fn transform_from_storage(
        &self,
        data: &Bytes,
        context: &[u8],
    ) -> Result<Bytes, TransformError> {
        if data.len() < GCM_NONCE {
            return Err(TransformError::TooShort);
        }
        let (nonce, msg) = data.split_at(GCM_NONCE);
        self.open(nonce, Payload { msg, aad: context })
            .map(Bytes::from)
            .map_err(|_| TransformError::Authentication)
    }

    fn transform_to_storage(&self, data: &Bytes, context: &[u8]) -> Result<Bytes, TransformError> {
        let nonce = random::<GCM_NONCE>();
        let sealed = self
            .seal(
                &nonce,
                Payload {
                    msg: data,
                    aad: context,
                },
            )
            .map_err(|_| TransformError::Encrypt)?;
        let mut out = Vec::with_capacity(GCM_NONCE + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(Bytes::from(out))
    }
}
