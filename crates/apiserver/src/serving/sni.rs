//! `--tls-sni-cert-key`: extra serving certificates chosen by the server
//! name a client asks for (SNI), with upstream's precedence: names given on
//! the flag beat names read from certificates, earlier flags beat later
//! ones, exact names beat `*.` wildcards, and the default certificate
//! answers everything else.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::tls::{load_certs, load_key, TlsConfigError};

/// One `--tls-sni-cert-key` value: `cert,key[:name,...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SniCertKey {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// Domain patterns (`*.example.com` allowed); when empty, the
    /// certificate's common name and DNS names are used.
    pub names: Vec<String>,
}

/// Picks the certificate for a handshake by its SNI name.
#[derive(Debug)]
pub(super) struct SniResolver {
    default: Arc<CertifiedKey>,
    by_name: HashMap<String, Arc<CertifiedKey>>,
}

impl SniResolver {
    pub fn new(
        default: Arc<CertifiedKey>,
        sni: &[SniCertKey],
        provider: &CryptoProvider,
    ) -> Result<Self, TlsConfigError> {
        let loaded = sni
            .iter()
            .map(|spec| {
                let certs = load_certs(&spec.cert_file)?;
                let key = load_key(&spec.key_file)?;
                Ok((
                    Arc::new(CertifiedKey::from_der(certs, key, provider)?),
                    spec,
                ))
            })
            .collect::<Result<Vec<_>, TlsConfigError>>()?;
        let mut by_name = HashMap::new();
        // Walking backwards lets earlier entries overwrite later ones;
        // implicit names go in first so explicit ones overwrite them.
        for (key, _) in loaded
            .iter()
            .rev()
            .filter(|(_, spec)| spec.names.is_empty())
        {
            for name in certificate_names(&key.cert[0]) {
                by_name.insert(name, key.clone());
            }
        }
        for (key, spec) in loaded.iter().rev() {
            for name in &spec.names {
                by_name.insert(name.to_ascii_lowercase(), key.clone());
            }
        }
        Ok(Self { default, by_name })
    }

    fn lookup(&self, server_name: Option<&str>) -> &Arc<CertifiedKey> {
        let Some(name) = server_name else {
            return &self.default;
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if let Some(key) = self.by_name.get(&name) {
            return key;
        }
        name.split_once('.')
            .and_then(|(_, parent)| self.by_name.get(&format!("*.{parent}")))
            .unwrap_or(&self.default)
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.lookup(hello.server_name()).clone())
    }
}

/// The names a certificate answers for without explicit patterns: a common
/// name that is a DNS subdomain, and the DNS names (IPs never arrive as SNI).
fn certificate_names(cert: &CertificateDer<'_>) -> Vec<String> {
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(cert) else {
        return Vec::new();
    };
    let mut names: Vec<String> = cert
        .subject()
        .iter_common_name()
        .filter_map(|attr| attr.as_str().ok())
        .last()
        .filter(|cn| apimachinery::validation::is_dns1123_subdomain(cn).is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                names.push(dns.to_ascii_lowercase());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

    /// Writes a self-signed certificate for `cn` with DNS `sans` and
    /// returns the flag value naming `names`.
    fn cert(dir: &std::path::Path, cn: &str, sans: &[&str], names: &[&str]) -> SniCertKey {
        let key = KeyPair::generate().unwrap();
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, cn);
        let pem = params.self_signed(&key).unwrap().pem();
        let cert_file = dir.join(format!("{cn}.crt"));
        let key_file = dir.join(format!("{cn}.key"));
        std::fs::write(&cert_file, pem).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        SniCertKey {
            cert_file,
            key_file,
            names: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn subject(key: &CertifiedKey) -> String {
        let (_, cert) = x509_parser::parse_x509_certificate(&key.cert[0]).unwrap();
        let cn = cert.subject().iter_common_name().next().unwrap();
        cn.as_str().unwrap().to_owned()
    }

    #[test]
    fn precedence_follows_upstream() {
        let dir = tempfile::tempdir().unwrap();
        let provider = rustls::crypto::ring::default_provider();
        let default = cert(dir.path(), "default", &[], &[]);
        let default = Arc::new(
            CertifiedKey::from_der(
                load_certs(&default.cert_file).unwrap(),
                load_key(&default.key_file).unwrap(),
                &provider,
            )
            .unwrap(),
        );
        let flags = [
            cert(
                dir.path(),
                "implicit",
                &["api.example.com", "other.example.com"],
                &[],
            ),
            cert(dir.path(), "explicit", &[], &["api.example.com"]),
            cert(dir.path(), "wild", &[], &["*.example.com"]),
            cert(dir.path(), "later", &["implicit"], &[]),
        ];
        let resolver = SniResolver::new(default, &flags, &provider).unwrap();
        let pick = |name: Option<&str>| subject(resolver.lookup(name));

        assert_eq!(pick(Some("API.example.com.")), "explicit");
        assert_eq!(pick(Some("other.example.com")), "implicit");
        assert_eq!(pick(Some("new.example.com")), "wild");
        assert_eq!(pick(Some("deep.new.example.com")), "default");
        // The common name counts as an implicit name; the earlier flag wins.
        assert_eq!(pick(Some("implicit")), "implicit");
        assert_eq!(pick(Some("later")), "later");
        assert_eq!(pick(None), "default");
    }
}
