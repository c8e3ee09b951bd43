//! `--tls-min-version` and `--tls-cipher-suites`: upstream's Go names mapped
//! onto what rustls (ring provider) implements.

use std::fmt;
use std::str::FromStr;

use rustls::crypto::ring::cipher_suite as suites;
use rustls::SupportedCipherSuite;

/// Minimum TLS protocol version (`--tls-min-version`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2 and 1.3 (upstream's default). `VersionTLS10` and
    /// `VersionTLS11` also map here: rustls implements nothing older.
    #[default]
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

/// An invalid `--tls-min-version` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tls version {0:?}")]
pub struct UnknownTlsVersion(pub String);

impl FromStr for TlsVersion {
    type Err = UnknownTlsVersion;

    /// Parses upstream's names; empty means the default.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "" | "VersionTLS12" => Ok(Self::Tls12),
            "VersionTLS10" | "VersionTLS11" => {
                tracing::warn!(
                    version = name,
                    "TLS versions below 1.2 are not implemented; TLS 1.2 is the minimum"
                );
                Ok(Self::Tls12)
            }
            "VersionTLS13" => Ok(Self::Tls13),
            other => Err(UnknownTlsVersion(other.to_string())),
        }
    }
}

impl fmt::Display for TlsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Tls12 => "VersionTLS12",
            Self::Tls13 => "VersionTLS13",
        })
    }
}

/// A `--tls-cipher-suites` name that upstream does not know either.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Cipher suite {0} not supported or doesn't exist")]
pub struct UnknownCipherSuite(pub String);

/// How a Go cipher-suite name maps onto rustls.
enum Mapping {
    /// A TLS 1.2 suite rustls implements.
    Tls12(SupportedCipherSuite),
    /// A TLS 1.3 suite: accepted but, as in Go, TLS 1.3 suites are not
    /// configurable and all of them stay enabled.
    Tls13,
    /// Known to upstream (Go's insecure or CBC suites) but not implemented by
    /// rustls: accepted with a warning and left out.
    Unimplemented,
}

fn lookup(name: &str) -> Option<Mapping> {
    use Mapping::*;
    Some(match name {
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => {
            Tls12(suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
        }
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => {
            Tls12(suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
        }
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => {
            Tls12(suites::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
        }
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => {
            Tls12(suites::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)
        }
        // Upstream keeps the names without `_SHA256` as legacy aliases.
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        | "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305" => {
            Tls12(suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)
        }
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" | "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" => {
            Tls12(suites::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256)
        }
        "TLS_AES_128_GCM_SHA256" | "TLS_AES_256_GCM_SHA384" | "TLS_CHACHA20_POLY1305_SHA256" => {
            Tls13
        }
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"
        | "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"
        | "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"
        | "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"
        | "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"
        | "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"
        | "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA"
        | "TLS_ECDHE_RSA_WITH_RC4_128_SHA"
        | "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"
        | "TLS_RSA_WITH_RC4_128_SHA"
        | "TLS_RSA_WITH_3DES_EDE_CBC_SHA"
        | "TLS_RSA_WITH_AES_128_CBC_SHA"
        | "TLS_RSA_WITH_AES_256_CBC_SHA"
        | "TLS_RSA_WITH_AES_128_CBC_SHA256"
        | "TLS_RSA_WITH_AES_128_GCM_SHA256"
        | "TLS_RSA_WITH_AES_256_GCM_SHA384" => Unimplemented,
        _ => return None,
    })
}

/// The TLS 1.3 suites, always enabled.
const TLS13_SUITES: [SupportedCipherSuite; 3] = [
    suites::TLS13_AES_256_GCM_SHA384,
    suites::TLS13_AES_128_GCM_SHA256,
    suites::TLS13_CHACHA20_POLY1305_SHA256,
];

/// Resolves `--tls-cipher-suites` into the suites to enable. An empty list
/// means rustls' defaults; otherwise the named TLS 1.2 suites (in the given
/// order) plus every TLS 1.3 suite.
pub fn cipher_suites(names: &[String]) -> Result<Vec<SupportedCipherSuite>, UnknownCipherSuite> {
    if names.is_empty() {
        return Ok(rustls::crypto::ring::DEFAULT_CIPHER_SUITES.to_vec());
    }
    let mut selected: Vec<SupportedCipherSuite> = TLS13_SUITES.to_vec();
    for name in names {
        match lookup(name).ok_or_else(|| UnknownCipherSuite(name.clone()))? {
            Mapping::Tls12(suite) => {
                if !selected.contains(&suite) {
                    selected.push(suite);
                }
            }
            Mapping::Tls13 => {}
            Mapping::Unimplemented => {
                tracing::warn!(cipher_suite = %name, "cipher suite is not implemented and is left out");
            }
        }
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn versions_parse_like_upstream() {
        assert_eq!("".parse::<TlsVersion>(), Ok(TlsVersion::Tls12));
        assert_eq!("VersionTLS12".parse::<TlsVersion>(), Ok(TlsVersion::Tls12));
        assert_eq!("VersionTLS10".parse::<TlsVersion>(), Ok(TlsVersion::Tls12));
        assert_eq!("VersionTLS13".parse::<TlsVersion>(), Ok(TlsVersion::Tls13));
        let err = "TLS1.3".parse::<TlsVersion>().unwrap_err();
        assert_eq!(err.to_string(), r#"unknown tls version "TLS1.3""#);
    }

    #[test]
    fn named_suites_restrict_tls12_only() {
        let selected = cipher_suites(&names(&[
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "TLS_RSA_WITH_AES_128_CBC_SHA",
            "TLS_AES_128_GCM_SHA256",
        ]))
        .unwrap();
        let tls12: Vec<_> = selected
            .iter()
            .filter(|s| s.tls13().is_none())
            .map(|s| s.suite())
            .collect();
        assert_eq!(
            tls12,
            [suites::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256.suite()]
        );
        assert_eq!(selected.iter().filter(|s| s.tls13().is_some()).count(), 3);
    }

    #[test]
    fn legacy_alias_and_unknown_names() {
        let selected = cipher_suites(&names(&["TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"])).unwrap();
        assert!(selected.contains(&suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256));
        let err = cipher_suites(&names(&["TLS_BOGUS"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cipher suite TLS_BOGUS not supported or doesn't exist"
        );
    }

    #[test]
    fn empty_list_means_defaults() {
        assert_eq!(
            cipher_suites(&[]).unwrap().len(),
            rustls::crypto::ring::DEFAULT_CIPHER_SUITES.len()
        );
    }
}
