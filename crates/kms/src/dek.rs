//! Data encryption keys and the local AES-GCM layouts of KMS v2 values
//! (upstream's `encrypt/aes` GCM and extended-nonce transformers):
//!
//! * seed (`HKDF_SHA256_XNONCE_AES_GCM_SEED`, what is written): 32 random
//!   info bytes, a 12-byte nonce, then AES-256-GCM ciphertext and tag under
//!   the key HKDF-Expand(SHA-256, seed, info); a fresh key per value, so a
//!   seed can be reused indefinitely.
//! * key (`AES_GCM_KEY`, read only): a 12-byte nonce, then AES-GCM under
//!   the DEK itself.
//!
//! The storage key is the authenticated data of both.

use std::fmt;

use bytes::Bytes;
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM};
use ring::hkdf::{Prk, HKDF_SHA256};
use ring::rand::{SecureRandom, SystemRandom};

/// Seed length, HKDF info length and derived key length.
pub(crate) const SEED_LEN: usize = 32;
const INFO_LEN: usize = 32;
const NONCE_LEN: usize = aead::NONCE_LEN;
const TAG_LEN: usize = 16;

/// Why a value could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DekError {
    #[error("the stored data was shorter than the required size")]
    TooShort,
    #[error("cipher: message authentication failed")]
    Authentication,
    #[error("invalid seed length {0} used for key generation")]
    SeedLength(usize),
    #[error("crypto/aes: invalid key size {0}")]
    KeySize(usize),
    #[error("failed to generate random bytes")]
    Random,
    #[error("output array was not large enough for encryption")]
    Seal,
}

/// A decrypted DEK source, ready to open (and for seeds, seal) values.
pub(crate) enum Dek {
    Seed(Prk),
    Key(Box<LessSafeKey>),
}

impl fmt::Debug for Dek {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dek::Seed(_) => "Dek::Seed",
            Dek::Key(_) => "Dek::Key",
        })
    }
}

fn fill(rng: &SystemRandom, out: &mut [u8]) -> Result<(), DekError> {
    rng.fill(out).map_err(|_| DekError::Random)
}

impl Dek {
    /// A fresh random seed: the DEK and the plaintext the plugin encrypts.
    pub(crate) fn generate() -> Result<(Dek, [u8; SEED_LEN]), DekError> {
        let mut seed = [0u8; SEED_LEN];
        fill(&SystemRandom::new(), &mut seed)?;
        Ok((Dek::from_seed(&seed)?, seed))
    }

    /// The DEK of a decrypted seed; at least [`SEED_LEN`] bytes.
    pub(crate) fn from_seed(seed: &[u8]) -> Result<Dek, DekError> {
        if seed.len() < SEED_LEN {
            return Err(DekError::SeedLength(seed.len()));
        }
        Ok(Dek::Seed(Prk::new_less_safe(HKDF_SHA256, seed)))
    }

    /// The DEK of a decrypted AES key (the older DEK source type).
    pub(crate) fn from_key(key: &[u8]) -> Result<Dek, DekError> {
        let algorithm = match key.len() {
            16 => &AES_128_GCM,
            32 => &AES_256_GCM,
            n => return Err(DekError::KeySize(n)),
        };
        let key = UnboundKey::new(algorithm, key).map_err(|_| DekError::KeySize(key.len()))?;
        Ok(Dek::Key(Box::new(LessSafeKey::new(key))))
    }

    fn derive(prk: &Prk, info: &[u8]) -> Result<LessSafeKey, DekError> {
        let info = [info];
        let okm = prk
            .expand(&info, &AES_256_GCM)
            .map_err(|_| DekError::Seal)?;
        Ok(LessSafeKey::new(UnboundKey::from(okm)))
    }

    /// How many bytes [`Dek::seal_into`] appends for `len` bytes of data.
    pub(crate) const fn sealed_len(len: usize) -> usize {
        INFO_LEN + NONCE_LEN + len + TAG_LEN
    }

    /// Appends `data` encrypted and bound to `aad` to `out` (sealed in
    /// place, so the data is copied once); only seeds write.
    pub(crate) fn seal_into(
        &self,
        data: &[u8],
        aad: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), DekError> {
        let Dek::Seed(prk) = self else {
            return Err(DekError::Seal);
        };
        let start = out.len();
        let nonce_at = start + INFO_LEN;
        let head = nonce_at + NONCE_LEN;
        out.reserve(Self::sealed_len(data.len()));
        out.resize(head, 0);
        fill(&SystemRandom::new(), &mut out[start..head])?;
        let key = Self::derive(prk, &out[start..nonce_at])?;
        let nonce =
            Nonce::try_assume_unique_for_key(&out[nonce_at..head]).map_err(|_| DekError::Seal)?;
        out.extend_from_slice(data);
        let tag = key
            .seal_in_place_separate_tag(nonce, Aad::from(aad), &mut out[head..])
            .map_err(|_| DekError::Seal)?;
        out.extend_from_slice(tag.as_ref());
        Ok(())
    }

    /// Decrypts what [`Dek::seal_into`] (or upstream) wrote for `aad`.
    pub(crate) fn open(&self, data: &[u8], aad: &[u8]) -> Result<Bytes, DekError> {
        let derived;
        let (key, sealed) = match self {
            Dek::Seed(prk) => {
                let (info, rest) = data.split_at_checked(INFO_LEN).ok_or(DekError::TooShort)?;
                derived = Self::derive(prk, info)?;
                (&derived, rest)
            }
            Dek::Key(key) => (key.as_ref(), data),
        };
        let (nonce, body) = sealed
            .split_at_checked(NONCE_LEN)
            .ok_or(DekError::TooShort)?;
        let nonce =
            Nonce::try_assume_unique_for_key(nonce).map_err(|_| DekError::Authentication)?;
        let mut buf = body.to_vec();
        let plain_len = key
            .open_in_place(nonce, Aad::from(aad), &mut buf)
            .map_err(|_| DekError::Authentication)?
            .len();
        buf.truncate(plain_len);
        Ok(Bytes::from(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Dek {
        fn seal(&self, data: &[u8], aad: &[u8]) -> Result<Vec<u8>, DekError> {
            let mut out = Vec::new();
            self.seal_into(data, aad, &mut out).map(|()| out)
        }
    }

    #[test]
    fn seeds_round_trip_with_a_fresh_key_per_value() {
        let (dek, seed) = Dek::generate().unwrap_or_else(|e| panic!("{e}"));
        let a = dek.seal(b"value", b"/k").unwrap_or_default();
        let b = dek.seal(b"value", b"/k").unwrap_or_default();
        assert_eq!(a.len(), INFO_LEN + NONCE_LEN + 5 + TAG_LEN);
        assert_ne!(a[..INFO_LEN], b[..INFO_LEN], "random info per value");
        // The seed alone (as after a restart) opens it.
        let again = Dek::from_seed(&seed).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.open(&a, b"/k"), Ok(Bytes::from_static(b"value")));
        assert_eq!(again.open(&a, b"/other"), Err(DekError::Authentication));
        assert_eq!(again.open(&a[..20], b"/k"), Err(DekError::TooShort));
        assert_eq!(Dek::from_seed(&[1; 8]).err(), Some(DekError::SeedLength(8)));
    }

    #[test]
    fn the_seed_derives_keys_with_hkdf_expand() {
        // The derived key is HKDF-Expand(SHA-256, seed, info) with no
        // extract step, as upstream's sha256KDFExpandOnly: check it against
        // a key computed by hand with HMAC (T(1) = HMAC(seed, info | 0x01)).
        let seed = [7u8; SEED_LEN];
        let dek = Dek::from_seed(&seed).unwrap_or_else(|e| panic!("{e}"));
        let sealed = dek.seal(b"x", b"").unwrap_or_default();
        let mac_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &seed);
        let mut input = sealed[..INFO_LEN].to_vec();
        input.push(1);
        let t1 = ring::hmac::sign(&mac_key, &input);
        let key = Dek::from_key(t1.as_ref()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            key.open(&sealed[INFO_LEN..], b""),
            Ok(Bytes::from_static(b"x"))
        );
    }

    #[test]
    fn plain_keys_only_read() {
        let dek = Dek::from_key(&[3; 32]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dek.seal(b"x", b""), Err(DekError::Seal));
        assert_eq!(Dek::from_key(&[3; 24]).err(), Some(DekError::KeySize(24)));
    }
}
