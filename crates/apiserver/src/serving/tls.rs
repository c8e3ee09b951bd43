//! The serving TLS configuration (upstream's `SecureServingInfo` TLS part):
//! serving certificate and key from PEM files, optional client CA bundles
//! whose subjects are hinted to clients when a certificate is requested (as
//! Go's `tls.RequestClientCert`: the chain is verified by the x509
//! authenticator per request, so a bad certificate gets a 401 rather than
//! a failed handshake), minimum version, cipher suites (chosen by the
//! server, in Go's order) and ALPN.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::UnixTime;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::ResolvesServerCert;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    CipherSuite, DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme,
    SupportedCipherSuite, SupportedProtocolVersion,
};

use crate::authentication::x509::ClientCa;

use super::ciphers::{self, TlsVersion, UnknownCipherSuite};
use super::sni::{SniCertKey, SniResolver};

/// ALPN identifiers, most preferred first (as upstream's Go server offers).
const ALPN_H2: &[u8] = b"h2";
const ALPN_HTTP11: &[u8] = b"http/1.1";

/// Errors building the TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    #[error("reading {path}: {source}")]
    Pem {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{path}: no certificates found")]
    NoCertificates { path: PathBuf },
    #[error(transparent)]
    CipherSuite(#[from] UnknownCipherSuite),
    #[error("invalid TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("building the TLS configuration: {0}")]
    Reload(String),
}

/// Inputs of the serving TLS configuration (`--tls-cert-file`,
/// `--tls-private-key-file`, `--tls-min-version`, `--tls-cipher-suites`,
/// `--tls-sni-cert-key`, and the CAs of `--client-ca-file` and
/// `--requestheader-client-ca-file`).
#[derive(Debug, Clone)]
pub struct TlsOptions {
    /// PEM certificate chain, leaf first.
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// CA bundles that sign client certificates, kept current by their
    /// authenticators; when any, clients are asked for a certificate
    /// (verified per request by the authenticators) with the union of
    /// their subjects as hints, as upstream's union CA content.
    pub client_cas: Vec<ClientCa>,
    pub min_version: TlsVersion,
    /// Upstream cipher-suite names; empty means the defaults.
    pub cipher_suites: Vec<String>,
    /// Offer HTTP/2 through ALPN (off with `--disable-http2-serving`).
    pub http2: bool,
    /// Certificates chosen by SNI name before the default one.
    pub sni_cert_keys: Vec<SniCertKey>,
}

/// The serving configuration in both of Go's cipher-suite orders. As in
/// Go, the server picks the suite: AES-128-GCM first for a client that
/// prefers AES-GCM, ChaCha20-Poly1305 first for one that does not
/// ([`ciphers::aes_gcm_preferred`]).
#[derive(Debug)]
pub struct ServerConfigs {
    aes_first: Arc<ServerConfig>,
    chacha_first: Arc<ServerConfig>,
}

impl ServerConfigs {
    /// The configuration for a client whose hello offered `suites`.
    pub fn for_client(&self, suites: &[CipherSuite]) -> Arc<ServerConfig> {
        if ciphers::aes_gcm_preferred(suites) {
            self.aes_first.clone()
        } else {
            self.chacha_first.clone()
        }
    }
}

impl TlsOptions {
    /// Builds the rustls server configurations (ring provider).
    ///
    /// Blocking (reads files): call it at start-up or via `spawn_blocking`.
    pub fn server_config(&self) -> Result<Arc<ServerConfigs>, TlsConfigError> {
        let suites = ciphers::cipher_suites(&self.cipher_suites)?;
        let provider = rustls::crypto::ring::default_provider();
        let (certs, key) = (load_certs(&self.cert_file)?, load_key(&self.key_file)?);
        let default = Arc::new(CertifiedKey::from_der(certs, key, &provider)?);
        let certs: Arc<dyn ResolvesServerCert> = if self.sni_cert_keys.is_empty() {
            Arc::new(SingleCertAndKey::from(default))
        } else {
            Arc::new(SniResolver::new(default, &self.sni_cert_keys, &provider)?)
        };
        let build = |suites| self.build(suites, certs.clone());
        Ok(Arc::new(ServerConfigs {
            chacha_first: build(ciphers::chacha_first(&suites))?,
            aes_first: build(suites)?,
        }))
    }

    /// One configuration, choosing among `suites` in their order.
    fn build(
        &self,
        suites: Vec<SupportedCipherSuite>,
        certs: Arc<dyn ResolvesServerCert>,
    ) -> Result<Arc<ServerConfig>, TlsConfigError> {
        let provider = Arc::new(CryptoProvider {
            cipher_suites: suites,
            ..rustls::crypto::ring::default_provider()
        });
        let versions: &[&'static SupportedProtocolVersion] = match self.min_version {
            TlsVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
            TlsVersion::Tls13 => &[&rustls::version::TLS13],
        };
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)?;
        let builder = if self.client_cas.is_empty() {
            builder.with_no_client_auth()
        } else {
            builder.with_client_cert_verifier(Arc::new(RequestClientCert {
                hints: hint_subjects(&self.client_cas),
                algorithms: provider.signature_verification_algorithms,
            }))
        };
        let mut config = builder.with_cert_resolver(certs);
        config.ignore_client_order = true;
        config.alpn_protocols = if self.http2 {
            vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()]
        } else {
            vec![ALPN_HTTP11.to_vec()]
        };
        Ok(Arc::new(config))
    }
}

fn pem_err(path: &Path) -> impl FnOnce(rustls::pki_types::pem::Error) -> TlsConfigError + '_ {
    move |source| TlsConfigError::Pem {
        path: path.to_path_buf(),
        source,
    }
}

pub(super) fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem_err(path))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_err(path))?;
    if certs.is_empty() {
        return Err(TlsConfigError::NoCertificates {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

pub(super) fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    PrivateKeyDer::from_pem_file(path).map_err(pem_err(path))
}

/// The subjects of the bundles' current CAs, in order, each once (Go's
/// pool of the concatenated bundles lists a CA in both only once).
fn hint_subjects(cas: &[ClientCa]) -> Vec<DistinguishedName> {
    let mut hints: Vec<DistinguishedName> = Vec::new();
    for subject in cas.iter().flat_map(ClientCa::subjects) {
        if !hints.iter().any(|seen| seen.as_ref() == subject.as_ref()) {
            hints.push(subject);
        }
    }
    hints
}

/// Asks for a client certificate without requiring or verifying it (Go's
/// `tls.RequestClientCert`); only the handshake signature, which proves
/// the client holds the certificate's key, is checked here.
#[derive(Debug)]
struct RequestClientCert {
    hints: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for RequestClientCert {
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // The x509 authenticator verifies the chain at request time.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
