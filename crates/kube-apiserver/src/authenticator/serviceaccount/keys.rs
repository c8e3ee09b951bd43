//! Service-account keys (`--service-account-key-file`,
//! `--service-account-signing-key-file`): PEM files of RSA or ECDSA keys —
//! public keys, certificates or private keys — turned into JWT verification
//! keys and a signing key. Each key's ID is upstream's: the unpadded
//! base64url SHA-256 of its SubjectPublicKeyInfo DER.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use rcgen::PublicKeyData as _;
use rustls_pemfile::Item;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use x509_parser::prelude::FromDer as _;
use x509_parser::public_key::PublicKey as ParsedKey;
use x509_parser::x509::SubjectPublicKeyInfo;

const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
    #[error("{0}: no RSA or ECDSA key found")]
    Empty(PathBuf),
}

/// A key that verifies tokens.
#[derive(Clone)]
pub struct PublicKey {
    pub kid: String,
    pub alg: Algorithm,
    pub decoding: DecodingKey,
    /// The key as a JSON Web Key, as `/openid/v1/jwks` publishes it.
    pub jwk: Value,
}

/// The key that signs new tokens.
pub struct SigningKey {
    pub public: PublicKey,
    pub encoding: EncodingKey,
}

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// Wraps a PKCS#1 or SEC1 private key into PKCS#8.
fn pkcs8(algorithm: &[u8], parameters: &[u8], inner: &[u8]) -> Vec<u8> {
    let mut alg = der(0x06, algorithm);
    alg.extend_from_slice(parameters);
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend(der(0x30, &alg));
    body.extend(der(0x04, inner));
    der(0x30, &body)
}

/// The PKCS#1 key inside an RSA PKCS#8 key.
fn pkcs1_of(pkcs8_der: &[u8]) -> Option<Vec<u8>> {
    let (_, obj) = x509_parser::der_parser::parse_der(pkcs8_der).ok()?;
    let seq = obj.as_sequence().ok()?;
    Some(seq.get(2)?.as_slice().ok()?.to_vec())
}

fn key_id(spki: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(spki))
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn strip_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}

/// A verification key from SubjectPublicKeyInfo DER.
pub fn public_key(spki_der: &[u8]) -> Result<PublicKey, String> {
    let (_, spki) = SubjectPublicKeyInfo::from_der(spki_der).map_err(|e| e.to_string())?;
    let kid = key_id(spki_der);
    let oid = spki.algorithm.algorithm.as_bytes();
    let key_bytes = spki.subject_public_key.data.as_ref();
    if oid == OID_RSA {
        let Ok(ParsedKey::RSA(rsa)) = spki.parsed() else {
            return Err("malformed RSA public key".into());
        };
        let jwk = json!({
            "use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256",
            "n": b64(strip_zeros(rsa.modulus)), "e": b64(strip_zeros(rsa.exponent)),
        });
        return Ok(PublicKey {
            kid,
            alg: Algorithm::RS256,
            decoding: DecodingKey::from_rsa_der(key_bytes),
            jwk,
        });
    }
    if oid != OID_EC {
        return Err("only RSA and ECDSA keys are supported".into());
    }
    let curve = spki
        .algorithm
        .parameters
        .as_ref()
        .and_then(|p| p.as_oid().ok())
        .map(|o| o.as_bytes().to_vec())
        .unwrap_or_default();
    let (alg, crv, size) = match curve.as_slice() {
        c if c == OID_P256 => (Algorithm::ES256, "P-256", 32),
        c if c == OID_P384 => (Algorithm::ES384, "P-384", 48),
        _ => return Err("only the P-256 and P-384 curves are supported".into()),
    };
    if key_bytes.len() != 1 + 2 * size || key_bytes[0] != 0x04 {
        return Err("malformed EC public key".into());
    }
    let (x, y) = key_bytes[1..].split_at(size);
    let jwk = json!({
        "use": "sig", "kty": "EC", "kid": kid, "crv": crv,
        "alg": format!("{alg:?}"), "x": b64(x), "y": b64(y),
    });
    Ok(PublicKey {
        kid,
        alg,
        decoding: DecodingKey::from_ec_der(key_bytes),
        jwk,
    })
}

/// A private key as PKCS#8 DER plus, for RSA, the PKCS#1 DER the signer
/// needs.
type PrivateDer = (Vec<u8>, Option<Vec<u8>>);

/// A private key of any of PKCS#8, PKCS#1 and SEC1; `None` when the PEM
/// item is not a private key.
fn private_key(item: &Item) -> Option<Result<PrivateDer, String>> {
    let (pkcs8_der, pkcs1) = match item {
        Item::Pkcs8Key(k) => {
            let der = k.secret_pkcs8_der().to_vec();
            let pkcs1 = rcgen_key(&der)
                .ok()
                .filter(is_rsa)
                .and_then(|_| pkcs1_of(&der));
            (der, pkcs1)
        }
        Item::Pkcs1Key(k) => {
            let inner = k.secret_pkcs1_der();
            (pkcs8(OID_RSA, &[0x05, 0x00], inner), Some(inner.to_vec()))
        }
        Item::Sec1Key(k) => {
            let inner = k.secret_sec1_der();
            let wrapped = [OID_P256, OID_P384]
                .into_iter()
                .map(|curve| pkcs8(OID_EC, &der(0x06, curve), inner))
                .find(|candidate| rcgen_key(candidate).is_ok());
            match wrapped {
                Some(w) => (w, None),
                None => return Some(Err("unsupported EC private key".into())),
            }
        }
        _ => return None,
    };
    Some(Ok((pkcs8_der, pkcs1)))
}

fn rcgen_key(pkcs8_der: &[u8]) -> Result<rcgen::KeyPair, String> {
    rcgen::KeyPair::try_from(pkcs8_der).map_err(|e| e.to_string())
}

fn is_rsa(kp: &rcgen::KeyPair) -> bool {
    [
        &rcgen::PKCS_RSA_SHA256,
        &rcgen::PKCS_RSA_SHA384,
        &rcgen::PKCS_RSA_SHA512,
    ]
    .into_iter()
    .any(|alg| kp.is_compatible(alg))
}

fn read_items(path: &Path) -> Result<Vec<Item>, KeyError> {
    let bytes = std::fs::read(path).map_err(|source| KeyError::Io {
        path: path.to_owned(),
        source,
    })?;
    rustls_pemfile::read_all(&mut bytes.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| KeyError::Invalid {
            path: path.to_owned(),
            problem: e.to_string(),
        })
}

/// Every verification key in a PEM file (blocking file I/O).
pub fn load_public_keys(path: &Path) -> Result<Vec<PublicKey>, KeyError> {
    let invalid = |problem: String| KeyError::Invalid {
        path: path.to_owned(),
        problem,
    };
    let mut keys = Vec::new();
    for item in read_items(path)? {
        let spki = match &item {
            Item::SubjectPublicKeyInfo(spki) => spki.as_ref().to_vec(),
            Item::X509Certificate(cert) => {
                let (_, cert) = x509_parser::parse_x509_certificate(cert.as_ref())
                    .map_err(|e| invalid(e.to_string()))?;
                cert.tbs_certificate.subject_pki.raw.to_vec()
            }
            other => match private_key(other) {
                Some(parsed) => {
                    let (pkcs8_der, _) = parsed.map_err(&invalid)?;
                    rcgen_key(&pkcs8_der)
                        .map_err(&invalid)?
                        .subject_public_key_info()
                }
                None => continue,
            },
        };
        keys.push(public_key(&spki).map_err(&invalid)?);
    }
    if keys.is_empty() {
        return Err(KeyError::Empty(path.to_owned()));
    }
    Ok(keys)
}

/// The first private key of a PEM file, to sign with (blocking file I/O).
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let invalid = |problem: String| KeyError::Invalid {
        path: path.to_owned(),
        problem,
    };
    let items = read_items(path)?;
    let (pkcs8_der, pkcs1) = items
        .iter()
        .find_map(private_key)
        .ok_or_else(|| KeyError::Empty(path.to_owned()))?
        .map_err(&invalid)?;
    let pair = rcgen_key(&pkcs8_der).map_err(&invalid)?;
    let public = public_key(&pair.subject_public_key_info()).map_err(&invalid)?;
    let encoding = match (&public.alg, pkcs1) {
        (Algorithm::RS256, Some(pkcs1)) => EncodingKey::from_rsa_der(&pkcs1),
        (Algorithm::RS256, None) => return Err(invalid("malformed RSA private key".into())),
        _ => EncodingKey::from_ec_der(&pkcs8_der),
    };
    Ok(SigningKey { public, encoding })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ec_keys_load_from_private_and_public_pem_with_the_same_id() {
        let dir = tempfile::tempdir().unwrap();
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let key_path = dir.path().join("sa.key");
        let pub_path = dir.path().join("sa.pub");
        std::fs::write(&key_path, pair.serialize_pem()).unwrap();
        std::fs::write(&pub_path, pair.public_key_pem()).unwrap();
        let signing = load_signing_key(&key_path).unwrap();
        let public = load_public_keys(&pub_path).unwrap();
        assert_eq!(public.len(), 1);
        assert_eq!(signing.public.kid, public[0].kid);
        assert_eq!(public[0].alg, Algorithm::ES256);
        assert_eq!(public[0].jwk["crv"], "P-256");
        assert_eq!(public[0].jwk["kid"], json!(public[0].kid));
        assert_eq!(key_id(&pair.subject_public_key_info()), public[0].kid);
    }

    #[test]
    fn files_without_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "nothing here\n").unwrap();
        assert!(matches!(load_public_keys(&path), Err(KeyError::Empty(_))));
        assert!(matches!(load_signing_key(&path), Err(KeyError::Empty(_))));
    }
}
