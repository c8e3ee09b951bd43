//! Round trips and layouts of the local providers.

use bytes::Bytes;

use super::aes::{AesCbc, AesGcm, AES_KEY_SIZES};
use super::secretbox::Secretbox;
use super::KeyLengthError;
use crate::value::{TransformError, Transformer};

fn round_trip(t: &dyn Transformer, context: &[u8]) {
    for len in [0, 1, 15, 16, 17, 1000] {
        let plain = Bytes::from(vec![b'x'; len]);
        let stored = t.transform_to_storage(&plain, context).unwrap_or_default();
        assert_ne!(stored, plain, "stored form must differ ({t:?}, {len})");
        let again = t.transform_to_storage(&plain, context).unwrap_or_default();
        assert_ne!(stored, again, "random nonce/IV per write ({t:?})");
        assert_eq!(t.transform_from_storage(&stored, context), Ok(plain));
    }
}

#[test]
fn every_provider_and_key_size_round_trips() {
    for size in AES_KEY_SIZES {
        let key = vec![3u8; *size];
        round_trip(&AesCbc::new(&key).unwrap_or_else(|e| panic!("{e}")), b"/k");
        round_trip(&AesGcm::new(&key).unwrap_or_else(|e| panic!("{e}")), b"/k");
    }
    round_trip(
        &Secretbox::new(&[9; 32]).unwrap_or_else(|e| panic!("{e}")),
        b"/k",
    );
}

#[test]
fn cbc_layout_is_iv_then_padded_blocks() {
    let t = AesCbc::new(&[1; 32]).unwrap_or_else(|e| panic!("{e}"));
    // 16 bytes of plaintext get a whole block of padding.
    let stored = t
        .transform_to_storage(&Bytes::from(vec![0; 16]), b"")
        .unwrap_or_default();
    assert_eq!(stored.len(), 16 + 32);
    // A flipped last byte breaks the padding.
    let mut broken = stored.to_vec();
    if let Some(last) = broken.last_mut() {
        *last ^= 0xff;
    }
    assert!(t.transform_from_storage(&Bytes::from(broken), b"").is_err());
    assert_eq!(
        t.transform_from_storage(&Bytes::from(vec![0; 20]), b""),
        Err(TransformError::InvalidBlockSize)
    );
}

#[test]
fn gcm_binds_the_storage_key() {
    let t = AesGcm::new(&[5; 32]).unwrap_or_else(|e| panic!("{e}"));
    let plain = Bytes::from_static(b"secret");
    let stored = t
        .transform_to_storage(&plain, b"/registry/secrets/a/b")
        .unwrap_or_default();
    assert_eq!(stored.len(), 12 + plain.len() + 16);
    assert_eq!(
        t.transform_from_storage(&stored, b"/registry/secrets/a/c"),
        Err(TransformError::Authentication)
    );
}

#[test]
fn wrong_key_lengths_are_refused() {
    assert_eq!(
        AesCbc::new(&[0; 10]).err(),
        Some(KeyLengthError {
            got: 10,
            expected: AES_KEY_SIZES
        })
    );
    assert!(Secretbox::new(&[0; 16]).is_err());
}
