//! `--tls-min-version` and `--tls-cipher-suites`: upstream's Go names mapped
//! onto what rustls (ring provider) implements.

use std::fmt;
use std::str::FromStr;

use rustls::crypto::ring::cipher_suite as suites;
use rustls::{CipherSuite, SupportedCipherSuite};

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

/// Every suite rustls implements, in Go's preference order for a peer with
/// AES hardware (`cipherSuitesPreferenceOrder`, `defaultCipherSuitesTLS13`):
/// AES-128-GCM, then AES-256-GCM, then ChaCha20-Poly1305.
const PREFERENCE_ORDER: [SupportedCipherSuite; 9] = [
    suites::TLS13_AES_128_GCM_SHA256,
    suites::TLS13_AES_256_GCM_SHA384,
    suites::TLS13_CHACHA20_POLY1305_SHA256,
    suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    suites::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    suites::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    suites::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
];

/// Resolves `--tls-cipher-suites` into the suites to enable, in Go's
/// preference order (the server chooses, see [`chacha_first`]): every
/// suite rustls implements when the list is empty, otherwise every TLS 1.3
/// suite plus the named TLS 1.2 ones. As in Go, the order the flag names
/// them in does not matter.
pub fn cipher_suites(names: &[String]) -> Result<Vec<SupportedCipherSuite>, UnknownCipherSuite> {
    if names.is_empty() {
        return Ok(PREFERENCE_ORDER.to_vec());
    }
    let mut named = Vec::new();
    for name in names {
        match lookup(name).ok_or_else(|| UnknownCipherSuite(name.clone()))? {
            Mapping::Tls12(suite) => named.push(suite),
            Mapping::Tls13 => {}
            Mapping::Unimplemented => {
                tracing::warn!(cipher_suite = %name, "cipher suite is not implemented and is left out");
            }
        }
    }
    let enabled = |suite: &SupportedCipherSuite| suite.tls13().is_some() || named.contains(suite);
    Ok(PREFERENCE_ORDER.into_iter().filter(enabled).collect())
}

/// `suites` in Go's order for a peer without AES hardware
/// (`cipherSuitesPreferenceOrderNoAES`, `defaultCipherSuitesTLS13NoAES`):
/// TLS 1.3 before TLS 1.2 and, in each, the ChaCha20-Poly1305 suite(s)
/// first, the rest as they were.
pub fn chacha_first(suites: &[SupportedCipherSuite]) -> Vec<SupportedCipherSuite> {
    let mut ordered = suites.to_vec();
    ordered.sort_by_key(|s| (s.tls13().is_none(), !is_chacha(s.suite())));
    ordered
}

fn is_chacha(suite: CipherSuite) -> bool {
    matches!(
        suite,
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
            | CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
            | CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
    )
}

/// Whether a client offering `offered` gets Go's AES-first order (Go's
/// `isAESGCMPreferred`): this machine encrypts AES-GCM in hardware and
/// the first suite of the client's that Go implements is an AES-GCM one,
/// a sign that the client has AES hardware too. Otherwise ChaCha20 is
/// preferred ([`chacha_first`]).
pub fn aes_gcm_preferred(offered: &[CipherSuite]) -> bool {
    if !aes_gcm_hardware() {
        return false;
    }
    let known = |suite: &&CipherSuite| match suite {
        CipherSuite::TLS13_AES_128_GCM_SHA256
        | CipherSuite::TLS13_AES_256_GCM_SHA384
        | CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => true,
        other => other.as_str().and_then(lookup).is_some(),
    };
    offered.iter().find(known).is_some_and(|suite| {
        matches!(
            suite,
            CipherSuite::TLS13_AES_128_GCM_SHA256
                | CipherSuite::TLS13_AES_256_GCM_SHA384
                | CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
                | CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
                | CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
                | CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
        )
    })
}

/// Go's `hasAESGCMHardwareSupport` on the architectures it checks.
fn aes_gcm_hardware() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
            && std::arch::is_x86_feature_detected!("sse4.1")
            && std::arch::is_x86_feature_detected!("ssse3")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
            && std::arch::is_aarch64_feature_detected!("pmull")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
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
    fn suites_are_in_gos_preference_order() {
        let ids = |suites: &[SupportedCipherSuite]| -> Vec<u16> {
            suites.iter().map(|s| u16::from(s.suite())).collect()
        };
        // Go's defaultCipherSuitesTLS13 and cipherSuitesPreferenceOrder,
        // limited to what rustls implements.
        let aes = [
            0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8,
        ];
        let defaults = cipher_suites(&[]).unwrap();
        assert_eq!(ids(&defaults), aes);
        // ...NoAES: ChaCha20 first.
        let no_aes = [
            0x1303, 0x1301, 0x1302, 0xcca9, 0xcca8, 0xc02b, 0xc02f, 0xc02c, 0xc030,
        ];
        assert_eq!(ids(&chacha_first(&defaults)), no_aes);
        // The flag's order does not matter.
        let named = cipher_suites(&names(&[
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        ]))
        .unwrap();
        assert_eq!(
            ids(&named),
            [0x1301, 0x1302, 0x1303, 0xc02f, 0xc030, 0xcca8]
        );
    }

    #[test]
    fn the_clients_first_known_suite_picks_the_order() {
        use CipherSuite::*;
        let grease = CipherSuite::Unknown(0x0a0a);
        if !aes_gcm_hardware() {
            assert!(!aes_gcm_preferred(&[TLS13_AES_128_GCM_SHA256]));
            return;
        }
        for (offered, aes) in [
            (
                vec![
                    grease,
                    TLS13_AES_256_GCM_SHA384,
                    TLS13_CHACHA20_POLY1305_SHA256,
                ],
                true,
            ),
            (
                vec![TLS13_CHACHA20_POLY1305_SHA256, TLS13_AES_128_GCM_SHA256],
                false,
            ),
            (vec![grease, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256], true),
            (vec![TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256], false),
            // Known to Go, not AES-GCM with ECDHE: not a sign of AES hardware.
            (
                vec![TLS_RSA_WITH_AES_128_GCM_SHA256, TLS13_AES_128_GCM_SHA256],
                false,
            ),
            (vec![grease], false),
        ] {
            assert_eq!(aes_gcm_preferred(&offered), aes, "{offered:?}");
        }
    }
}
