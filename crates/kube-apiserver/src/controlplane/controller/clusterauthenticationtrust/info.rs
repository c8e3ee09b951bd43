//! What `kube-system/extension-apiserver-authentication` holds and how a
//! server's own settings are combined with what is there (upstream's
//! `ClusterAuthenticationInfo`, `combinedClusterAuthenticationInfo`,
//! `getConfigMapDataFor` and `getClusterAuthenticationInfoFor`): CA
//! bundles are joined, certificates expired more than five minutes ago
//! dropped and duplicates removed (a replaced CA stays published until it
//! expires, as other servers may still use it); header lists are joined
//! without duplicates, the existing entries first.

use std::collections::BTreeMap;

use base64::Engine;

/// The configmap's data keys.
const CLIENT_CA: &str = "client-ca-file";
const REQUEST_HEADER_CA: &str = "requestheader-client-ca-file";
const USERNAME_HEADERS: &str = "requestheader-username-headers";
const UID_HEADERS: &str = "requestheader-uid-headers";
const GROUP_HEADERS: &str = "requestheader-group-headers";
const EXTRA_PREFIXES: &str = "requestheader-extra-headers-prefix";
const ALLOWED_NAMES: &str = "requestheader-allowed-names";

/// Upstream's slack for `NotAfter` comparisons.
const EXPIRY_SLACK_SECONDS: i64 = 5 * 60;

/// How clients of this cluster authenticate, for aggregated API servers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterAuthenticationInfo {
    /// DER certificates verifying normal clients.
    pub client_ca: Vec<Vec<u8>>,
    /// DER certificates verifying front proxies.
    pub request_header_ca: Vec<Vec<u8>>,
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_header_prefixes: Vec<String>,
    pub allowed_names: Vec<String>,
}

/// The DER certificates of a PEM bundle; an error when a certificate
/// block does not decode or there is none (Go's `cert.ParseCertsPEM`).
pub fn parse_certs(pem: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut certs = Vec::new();
    for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
        let der = cert.map_err(|e| e.to_string())?;
        x509_parser::parse_x509_certificate(&der).map_err(|e| e.to_string())?;
        certs.push(der.to_vec());
    }
    if certs.is_empty() {
        return Err("data does not contain any valid RSA or ECDSA certificates".into());
    }
    Ok(certs)
}

/// PEM of DER certificates, as Go's `pem.Encode` writes them.
fn encode_certs(certs: &[Vec<u8>]) -> String {
    let mut out = String::new();
    for der in certs {
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        let text = base64::engine::general_purpose::STANDARD.encode(der);
        for line in text.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

fn not_after(der: &[u8]) -> i64 {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, cert)| cert.validity().not_after.timestamp())
        .unwrap_or(i64::MIN)
}

/// Both lists' certificates not expired by `now` (Unix seconds, with
/// five minutes of slack), each once, in order.
fn combine_certs(lhs: &[Vec<u8>], rhs: &[Vec<u8>], now: i64) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for der in lhs.iter().chain(rhs) {
        if not_after(der) > now - EXPIRY_SLACK_SECONDS && !out.contains(der) {
            out.push(der.clone());
        }
    }
    out
}

fn combine_unique(lhs: &[String], rhs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in lhs.iter().chain(rhs) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

impl ClusterAuthenticationInfo {
    /// What is published (`self`) joined with what this server requires.
    pub fn combined(&self, required: &Self, now: i64) -> Self {
        ClusterAuthenticationInfo {
            client_ca: combine_certs(&self.client_ca, &required.client_ca, now),
            request_header_ca: combine_certs(
                &self.request_header_ca,
                &required.request_header_ca,
                now,
            ),
            username_headers: combine_unique(&self.username_headers, &required.username_headers),
            uid_headers: combine_unique(&self.uid_headers, &required.uid_headers),
            group_headers: combine_unique(&self.group_headers, &required.group_headers),
            extra_header_prefixes: combine_unique(
                &self.extra_header_prefixes,
                &required.extra_header_prefixes,
            ),
            allowed_names: combine_unique(&self.allowed_names, &required.allowed_names),
        }
    }

    /// The configmap's data: the client CA when there is one, and the
    /// front proxy's settings when it has a CA (the UID headers only when
    /// some are set and `uid_headers` is on: the RemoteRequestHeaderUID
    /// feature).
    pub fn data(&self, uid_headers: bool) -> BTreeMap<String, String> {
        let mut data = BTreeMap::new();
        if !self.client_ca.is_empty() {
            data.insert(CLIENT_CA.to_owned(), encode_certs(&self.client_ca));
        }
        if self.request_header_ca.is_empty() {
            return data;
        }
        let list = |v: &[String]| serde_json::Value::from(v.to_vec()).to_string();
        data.insert(USERNAME_HEADERS.to_owned(), list(&self.username_headers));
        if uid_headers && !self.uid_headers.is_empty() {
            data.insert(UID_HEADERS.to_owned(), list(&self.uid_headers));
        }
        data.insert(GROUP_HEADERS.to_owned(), list(&self.group_headers));
        data.insert(EXTRA_PREFIXES.to_owned(), list(&self.extra_header_prefixes));
        data.insert(
            REQUEST_HEADER_CA.to_owned(),
            encode_certs(&self.request_header_ca),
        );
        data.insert(ALLOWED_NAMES.to_owned(), list(&self.allowed_names));
        data
    }

    /// Reads the configmap's data; an error when a list is not a JSON
    /// array of strings or a bundle holds no certificate.
    pub fn from_data(data: &BTreeMap<String, String>, uid_headers: bool) -> Result<Self, String> {
        let list = |key: &str| -> Result<Vec<String>, String> {
            match data.get(key).filter(|v| !v.is_empty()) {
                None => Ok(Vec::new()),
                Some(v) => serde_json::from_str(v).map_err(|e| format!("{key}: {e}")),
            }
        };
        let certs = |key: &str| match data.get(key).filter(|v| !v.is_empty()) {
            None => Ok(Vec::new()),
            Some(v) => parse_certs(v).map_err(|e| format!("{key}: {e}")),
        };
        Ok(ClusterAuthenticationInfo {
            group_headers: list(GROUP_HEADERS)?,
            extra_header_prefixes: list(EXTRA_PREFIXES)?,
            allowed_names: list(ALLOWED_NAMES)?,
            username_headers: list(USERNAME_HEADERS)?,
            uid_headers: if uid_headers {
                list(UID_HEADERS)?
            } else {
                Vec::new()
            },
            request_header_ca: certs(REQUEST_HEADER_CA)?,
            client_ca: certs(CLIENT_CA)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(name: &str, not_after: (i32, u8, u8)) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(Vec::new()).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let key = rcgen::KeyPair::generate().expect("key");
        params.self_signed(&key).expect("cert").der().to_vec()
    }

    const NOW: i64 = 1_800_000_000; // 2027-01-15

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_published_ca_stays_beside_the_new_one_until_it_expires() {
        let (old, new, expired) = (
            ca("old", (2030, 1, 1)),
            ca("new", (2030, 1, 1)),
            ca("gone", (2026, 1, 1)),
        );
        let existing = ClusterAuthenticationInfo {
            client_ca: vec![old.clone(), expired],
            request_header_ca: vec![new.clone()],
            username_headers: strings(&["X-Remote-User"]),
            ..Default::default()
        };
        let required = ClusterAuthenticationInfo {
            client_ca: vec![new.clone(), old.clone()],
            request_header_ca: vec![new.clone()],
            username_headers: strings(&["X-User", "X-Remote-User"]),
            ..Default::default()
        };
        let combined = existing.combined(&required, NOW);
        assert_eq!(combined.client_ca, vec![old.clone(), new.clone()]);
        assert_eq!(combined.request_header_ca, vec![new.clone()]);
        assert_eq!(
            combined.username_headers,
            strings(&["X-Remote-User", "X-User"])
        );
        let data = combined.data(true);
        assert_eq!(data[CLIENT_CA], encode_certs(&[old, new]));
        assert_eq!(data[USERNAME_HEADERS], r#"["X-Remote-User","X-User"]"#);
        assert_eq!(data[ALLOWED_NAMES], "[]");
        assert!(!data.contains_key(UID_HEADERS));
        assert_eq!(
            ClusterAuthenticationInfo::from_data(&data, true).expect("reads back"),
            combined
        );
    }

    #[test]
    fn header_lists_are_published_only_with_a_front_proxy_ca() {
        let info = ClusterAuthenticationInfo {
            client_ca: vec![ca("client", (2030, 1, 1))],
            allowed_names: strings(&["front-proxy-client"]),
            ..Default::default()
        };
        assert_eq!(info.data(true).keys().collect::<Vec<_>>(), vec![CLIENT_CA]);
        let with_uid = ClusterAuthenticationInfo {
            request_header_ca: vec![ca("proxy", (2030, 1, 1))],
            uid_headers: strings(&["X-Remote-Uid"]),
            ..info
        };
        assert_eq!(with_uid.data(true)[UID_HEADERS], r#"["X-Remote-Uid"]"#);
        assert!(!with_uid.data(false).contains_key(UID_HEADERS));
    }

    #[test]
    fn published_data_that_does_not_parse_is_an_error() {
        let bad_list = BTreeMap::from([(GROUP_HEADERS.to_owned(), "not json".to_owned())]);
        assert!(ClusterAuthenticationInfo::from_data(&bad_list, true).is_err());
        let bad_ca = BTreeMap::from([(CLIENT_CA.to_owned(), "no pem here".to_owned())]);
        assert!(ClusterAuthenticationInfo::from_data(&bad_ca, true).is_err());
        let empty = BTreeMap::from([(CLIENT_CA.to_owned(), String::new())]);
        assert_eq!(
            ClusterAuthenticationInfo::from_data(&empty, true),
            Ok(Default::default())
        );
    }
}
