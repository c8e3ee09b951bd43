//! The local encryption providers (upstream's `storage/value/encrypt`),
//! each over one key: `aescbc` and `aesgcm` in [`aes`], `secretbox` in
//! [`secretbox`]. The KMS v2 envelope provider is crate `kms`
//! (upstream's `encrypt/envelope` and `k8s.io/kms`).

use rand::RngCore;

pub mod aes;
pub mod secretbox;

/// A key of a length the provider does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("secret is not of the expected length, got {got}, expected one of {expected:?}")]
pub struct KeyLengthError {
    pub got: usize,
    pub expected: &'static [usize],
}

fn random<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    rand::rng().fill_bytes(&mut out);
    out
}

#[cfg(test)]
mod tests;
