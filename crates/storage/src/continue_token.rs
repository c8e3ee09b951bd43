//! Opaque continue tokens for paginated lists, in upstream's format
//! (`k8s.io/apiserver/pkg/storage` `EncodeContinue`/`DecodeContinue`): the
//! unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"…"}`,
//! where `start` is the next key with the list's key prefix removed. Keeping
//! the format lets clients resume lists across servers of either kind.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::error::{Result, StorageError};

/// The only token version upstream has ever issued.
const TOKEN_VERSION: &str = "meta.k8s.io/v1";

#[derive(Serialize, Deserialize)]
struct Token<'a> {
    #[serde(rename = "v")]
    version: std::borrow::Cow<'a, str>,
    #[serde(rename = "rv")]
    resource_version: i64,
    #[serde(rename = "start")]
    start_key: std::borrow::Cow<'a, str>,
}

/// A decoded token: where the next page starts and at which revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue {
    /// The full key the next page starts at (inclusive).
    pub start_key: String,
    /// The list's revision; negative means "the latest" (upstream issues such
    /// tokens when the original revision was compacted).
    pub resource_version: i64,
}

/// Encodes a token that resumes the list under `key_prefix` at `next_key`
/// (a key under the prefix) as of `resource_version`.
pub fn encode(next_key: &str, key_prefix: &str, resource_version: i64) -> Result<String> {
    let start = next_key.strip_prefix(key_prefix).ok_or_else(|| {
        StorageError::internal("unable to encode next field: the key and key prefix do not match")
    })?;
    let token = Token {
        version: TOKEN_VERSION.into(),
        resource_version,
        start_key: start.into(),
    };
    let json = serde_json::to_vec(&token).map_err(StorageError::internal)?;
    Ok(URL_SAFE_NO_PAD.encode(json))
}

/// Decodes a token for the list under `key_prefix`. Every malformed token is
/// `InvalidContinue`, worded as upstream's `DecodeContinue` words it; the
/// start key cannot escape the prefix (`..` and other non-clean paths are
/// refused, as upstream does). Both steps are linear in the token, and the
/// JSON parser's nesting limit ends deeply nested tokens early.
pub fn decode(token: &str, key_prefix: &str) -> Result<Continue> {
    let invalid = |detail: String| StorageError::InvalidContinue(format!("{INVALID}: {detail}"));
    let data = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|e| invalid(go_base64_error(&e, token.len())))?;
    let parsed: Token<'_> = serde_json::from_slice(&data).map_err(|e| invalid(e.to_string()))?;
    if parsed.version != TOKEN_VERSION {
        return Err(StorageError::InvalidContinue(format!(
            "{INVALID}: server does not recognize this encoded version {}",
            parsed.version
        )));
    }
    if parsed.resource_version == 0 {
        return Err(invalid(format!(
            "incorrect encoded start resourceVersion (version {TOKEN_VERSION})"
        )));
    }
    if parsed.start_key.is_empty() {
        return Err(invalid(format!(
            "encoded start key empty (version {TOKEN_VERSION})"
        )));
    }
    let start = parsed
        .start_key
        .strip_prefix('/')
        .unwrap_or(&parsed.start_key);
    if !is_clean_relative(start) {
        return Err(invalid(parsed.start_key.to_string()));
    }
    Ok(Continue {
        start_key: format!("{key_prefix}{start}"),
        resource_version: parsed.resource_version,
    })
}

/// Upstream's `ErrGenericInvalidKey`, which prefixes every decoding error.
const INVALID: &str = "continue key is not valid";

/// Go's `base64.CorruptInputError` text: the offset of the first bad byte
/// (or the length, for input that ends early).
fn go_base64_error(error: &base64::DecodeError, len: usize) -> String {
    let at = match error {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => {
            *at
        }
        base64::DecodeError::InvalidLength(_) | base64::DecodeError::InvalidPadding => len,
    };
    format!("illegal base64 data at input byte {at}")
}

/// Whether `/` + `path` is what Go's `path.Clean` would leave unchanged: no
/// empty, `.` or `..` segments and no trailing slash. Segments may hold any
/// other bytes, including the NUL upstream appends to make "the key after".
fn is_clean_relative(path: &str) -> bool {
    path.is_empty()
        || path
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_matches_upstream_encoding() {
        let token = encode("/registry/pods/default/b\0", "/registry/pods/", 42).unwrap();
        // Upstream's token for the same input: base64url(no padding) of the JSON.
        let json = URL_SAFE_NO_PAD.decode(&token).unwrap();
        assert_eq!(
            std::str::from_utf8(&json).unwrap(),
            r#"{"v":"meta.k8s.io/v1","rv":42,"start":"default/b\u0000"}"#
        );
        let decoded = decode(&token, "/registry/pods/").unwrap();
        assert_eq!(decoded.start_key, "/registry/pods/default/b\0");
        assert_eq!(decoded.resource_version, 42);
    }

    #[test]
    fn refuses_keys_outside_the_prefix() {
        assert!(encode("/registry/other/x", "/registry/pods/", 1).is_err());
        for start in ["../secrets/x", "a/../../b", "a//b", "./a", "a/"] {
            let json = format!(r#"{{"v":"meta.k8s.io/v1","rv":3,"start":"{start}"}}"#);
            let token = URL_SAFE_NO_PAD.encode(json);
            assert!(
                matches!(
                    decode(&token, "/registry/pods/"),
                    Err(StorageError::InvalidContinue(_))
                ),
                "{start}"
            );
        }
    }

    #[test]
    fn refuses_malformed_tokens() {
        let cases = [
            "not base64 !".to_string(),
            URL_SAFE_NO_PAD.encode("not json"),
            URL_SAFE_NO_PAD.encode(r#"{"v":"other/v1","rv":3,"start":"a"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#),
        ];
        for token in cases {
            assert!(
                matches!(decode(&token, "/p/"), Err(StorageError::InvalidContinue(_))),
                "{token}"
            );
        }
    }

    #[test]
    fn errors_read_as_upstreams() {
        let message = |token: &str| match decode(token, "/p/") {
            Err(StorageError::InvalidContinue(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            message("ab!d"),
            "continue key is not valid: illegal base64 data at input byte 2"
        );
        let version = URL_SAFE_NO_PAD.encode(r#"{"v":"other/v1","rv":3,"start":"a"}"#);
        assert_eq!(
            message(&version),
            "continue key is not valid: server does not recognize this encoded version other/v1"
        );
        let escape = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../x"}"#);
        assert_eq!(message(&escape), "continue key is not valid: ../x");
        let rv = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#);
        assert_eq!(
            message(&rv),
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
    }

    #[test]
    fn megabyte_tokens_of_nested_json_fail_fast() {
        let nested = format!("{}{}", "[".repeat(400_000), "]".repeat(400_000));
        let token = URL_SAFE_NO_PAD.encode(nested);
        assert!(token.len() > 1_000_000);
        let start = std::time::Instant::now();
        assert!(matches!(
            decode(&token, "/p/"),
            Err(StorageError::InvalidContinue(m)) if m.starts_with("continue key is not valid: ")
        ));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn accepts_negative_revision_and_leading_slash() {
        let token = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"/a"}"#);
        let decoded = decode(&token, "/p/").unwrap();
        assert_eq!(decoded.start_key, "/p/a");
        assert_eq!(decoded.resource_version, -1);
    }
}
