//! The identity carried by a verified client certificate, converted the way
//! upstream's x509 authenticator does (`CommonNameUserConversion` in
//! `k8s.io/apiserver/pkg/authentication/request/x509`): subject
//! CN → user name, O → groups, the Kubernetes UID attribute → uid, and a
//! credential ID from the certificate's SHA-256 fingerprint.
//!
//! The TLS layer only checks that the client holds the certificate's key;
//! the server puts a [`ClientCert`] into the extensions of every request of
//! that connection, and the authentication filter uses it once the chain
//! verifies against the client CA.

use std::fmt::Write as _;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use x509_parser::certificate::X509Certificate;
use x509_parser::x509::X509Name;

use super::x509::VerifiedChain;

/// Arcs of upstream's subject attribute carrying the user's UID
/// (1.3.6.1.4.1.57683.2, under the Kubernetes enterprise number).
const UID_OID_ARCS: [u64; 8] = [1, 3, 6, 1, 4, 1, 57683, 2];

/// The user a client certificate authenticates as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertUser {
    /// Subject common name.
    pub name: String,
    /// The UID subject attribute, when present.
    pub uid: Option<String>,
    /// Subject organizations, in certificate order.
    pub groups: Vec<String>,
    /// `X509SHA256=<hex fingerprint>`, upstream's credential ID (user extra
    /// `authentication.kubernetes.io/credential-id`).
    pub credential_id: String,
}

/// Why a certificate does not yield a user (upstream answers these
/// with an authentication error rather than "no opinion").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientCertError {
    #[error("unable to parse certificate: {0}")]
    Malformed(String),
    #[error("unable to parse UID into a string")]
    UidNotString,
    #[error("expected 1 UID, but found multiple: {0:?}")]
    MultipleUids(Vec<String>),
    #[error("UID cannot be an empty string")]
    EmptyUid,
}

/// Request extension: the certificate chain the client presented (leaf
/// first), not verified by the TLS layer: authenticators check it against
/// the CA they trust, once per connection and CA bundle. Cloning shares it.
#[derive(Debug, Clone)]
pub struct PeerCertificates(Arc<(Vec<CertificateDer<'static>>, VerifiedChain)>);

impl PeerCertificates {
    /// The chain of one connection, not verified yet.
    pub fn new(chain: Vec<CertificateDer<'static>>) -> Self {
        Self(Arc::new((chain, VerifiedChain::default())))
    }

    /// The chain, leaf first.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.0 .0
    }

    /// What the chain verified against so far.
    pub(super) fn memo(&self) -> &VerifiedChain {
        &self.0 .1
    }
}

/// Request extension: the outcome of converting the connection's client
/// certificate (valid only once its chain verifies). Absent when no certificate was presented or its
/// subject has no common name (upstream's authenticator then has no opinion).
/// Cloning is a reference-count increment.
#[derive(Debug, Clone)]
pub struct ClientCert(Arc<Result<ClientCertUser, ClientCertError>>);

impl ClientCert {
    /// The authenticated user, or why the certificate cannot authenticate.
    pub fn user(&self) -> Result<&ClientCertUser, &ClientCertError> {
        self.0.as_ref().as_ref()
    }

    /// Converts the leaf certificate (DER) of a chain; `None` when
    /// the subject has no common name.
    pub fn from_der(der: &[u8]) -> Option<Self> {
        let cert = match x509_parser::parse_x509_certificate(der) {
            Ok((_, cert)) => cert,
            Err(err) => {
                return Some(Self(Arc::new(Err(ClientCertError::Malformed(
                    err.to_string(),
                )))))
            }
        };
        let name = common_name(cert.subject())?;
        Some(Self(Arc::new(user_of(&cert, name, der))))
    }
}

fn user_of(
    cert: &X509Certificate<'_>,
    name: String,
    der: &[u8],
) -> Result<ClientCertUser, ClientCertError> {
    let subject = cert.subject();
    Ok(ClientCertUser {
        name,
        uid: uid(subject)?,
        groups: subject
            .iter_organization()
            .filter_map(|attr| attr.as_str().ok())
            .map(str::to_owned)
            .collect(),
        credential_id: credential_id(der),
    })
}

/// Like Go's `pkix.Name`, the last string-valued CN wins.
fn common_name(subject: &X509Name<'_>) -> Option<String> {
    subject
        .iter_common_name()
        .filter_map(|attr| attr.as_str().ok())
        .last()
        .filter(|cn| !cn.is_empty())
        .map(str::to_owned)
}

fn uid(subject: &X509Name<'_>) -> Result<Option<String>, ClientCertError> {
    let mut uids = Vec::new();
    for attr in subject.iter_attributes() {
        let is_uid = attr
            .attr_type()
            .iter()
            .is_some_and(|arcs| arcs.eq(UID_OID_ARCS.iter().copied()));
        if is_uid {
            let value = attr.as_str().map_err(|_| ClientCertError::UidNotString)?;
            uids.push(value.to_owned());
        }
    }
    match uids.len() {
        0 => Ok(None),
        1 if uids[0].is_empty() => Err(ClientCertError::EmptyUid),
        1 => Ok(uids.pop()),
        _ => Err(ClientCertError::MultipleUids(uids)),
    }
}

fn credential_id(der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    let mut id = String::with_capacity("X509SHA256=".len() + 64);
    id.push_str("X509SHA256=");
    for byte in digest.as_ref() {
        // Writing to a String cannot fail.
        let _ = write!(id, "{byte:02x}");
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, DnValue, KeyPair};

    // rcgen keeps one value per attribute type, so multi-valued subjects
    // (several O, several UIDs) cannot be built here.
    fn cert_with(subject: &[(DnType, &str)]) -> Vec<u8> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        for (ty, value) in subject {
            dn.push(ty.clone(), DnValue::Utf8String((*value).to_string()));
        }
        params.distinguished_name = dn;
        params.self_signed(&key).unwrap().der().to_vec()
    }

    fn uid_type() -> DnType {
        DnType::CustomDnType(UID_OID_ARCS.to_vec())
    }

    #[test]
    fn subject_maps_to_user() {
        let der = cert_with(&[
            (DnType::OrganizationName, "system:masters"),
            (DnType::CommonName, "alice"),
            (uid_type(), "1234"),
        ]);
        let cert = ClientCert::from_der(&der).unwrap();
        let user = cert.user().unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["system:masters"]);
        assert_eq!(user.uid.as_deref(), Some("1234"));
        assert!(user.credential_id.starts_with("X509SHA256="));
        assert_eq!(user.credential_id.len(), "X509SHA256=".len() + 64);
    }

    #[test]
    fn missing_common_name_has_no_opinion() {
        let der = cert_with(&[(DnType::OrganizationName, "devs")]);
        assert!(ClientCert::from_der(&der).is_none());
    }

    #[test]
    fn bad_uids_are_errors() {
        let empty = cert_with(&[(DnType::CommonName, "bob"), (uid_type(), "")]);
        let err = ClientCert::from_der(&empty).unwrap();
        assert_eq!(err.user(), Err(&ClientCertError::EmptyUid));
    }

    #[test]
    fn garbage_is_malformed() {
        let cert = ClientCert::from_der(b"not a certificate").unwrap();
        assert!(matches!(cert.user(), Err(ClientCertError::Malformed(_))));
    }
}
