//! Certificate issuance (rcgen) and inspection of certificates found on disk
//! (x509-parser), so that existing material is reused while it is still valid.

use std::net::IpAddr;

use chrono::{Datelike, Duration, Utc};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData, SanType,
};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};

use super::PkiError;

/// Common name of the generated cluster CA (kubeadm uses the same).
/// Common name of the cluster CA (kubeadm's).
pub(super) const CA_COMMON_NAME: &str = "kubernetes";
/// CA lifetime (kubeadm's default is ten years).
const CA_VALIDITY_DAYS: i64 = 3650;
/// Leaf certificate lifetime (kubeadm's default is one year).
const LEAF_VALIDITY_DAYS: i64 = 365;
/// Leaves this close to expiry are reissued at start-up.
const RENEW_BEFORE_DAYS: i64 = 30;

/// A subject alternative name the serving certificate must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum San {
    Dns(String),
    Ip(IpAddr),
}

impl San {
    fn to_rcgen(&self) -> Result<SanType, PkiError> {
        Ok(match self {
            San::Dns(name) => SanType::DnsName(name.as_str().try_into()?),
            San::Ip(ip) => SanType::IpAddress(*ip),
        })
    }
}

/// What a leaf certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Usage {
    Server,
    Client,
}

/// Subject and usage of a leaf certificate to issue.
pub(super) struct LeafSpec<'a> {
    pub common_name: &'a str,
    pub organizations: &'a [&'a str],
    pub sans: &'a [San],
    pub usage: Usage,
}

/// A PEM certificate with its PEM (PKCS#8) private key.
pub(super) struct PemPair {
    pub cert: String,
    pub key: String,
}

/// The CA, ready to sign leaves.
pub(super) struct CertAuthority {
    issuer: Issuer<'static, KeyPair>,
    /// DER of the CA certificate, to check which CA issued a leaf.
    der: Vec<u8>,
}

impl CertAuthority {
    /// Loads a CA from its PEM certificate and key.
    pub fn load(cert_pem: &str, key_pem: &str) -> Result<Self, PkiError> {
        let key = KeyPair::from_pem(key_pem)?;
        let der = pem_to_der(cert_pem)?;
        let cert = parse_der(&der)?;
        if cert.public_key().raw != key.subject_public_key_info().as_slice() {
            return Err(PkiError::Invalid(
                "the CA key does not match the CA certificate".into(),
            ));
        }
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(Self { issuer, der })
    }

    /// Whether the CA certificate is still valid for at least the lifetime
    /// of a new leaf; an older CA is replaced together with its leaves.
    pub fn is_fresh(&self) -> bool {
        parse_der(&self.der)
            .map(|cert| expires_after(&cert, LEAF_VALIDITY_DAYS))
            .unwrap_or(false)
    }

    /// Issues a leaf certificate with a fresh ECDSA P-256 key.
    pub fn issue(&self, spec: &LeafSpec<'_>) -> Result<PemPair, PkiError> {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(spec.common_name, spec.organizations);
        params.subject_alt_names = spec
            .sans
            .iter()
            .map(San::to_rcgen)
            .collect::<Result<_, _>>()?;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![match spec.usage {
            Usage::Server => ExtendedKeyUsagePurpose::ServerAuth,
            Usage::Client => ExtendedKeyUsagePurpose::ClientAuth,
        }];
        params.use_authority_key_identifier_extension = true;
        set_validity(&mut params, LEAF_VALIDITY_DAYS);
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(PemPair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    }

    /// Whether an existing leaf can be kept: it parses, matches its key, was
    /// issued by this CA, is far enough from expiry and carries `required` SANs.
    pub fn leaf_is_current(&self, leaf: &PemPair, required: &[San]) -> bool {
        let Ok(ca) = parse_der(&self.der) else {
            return false;
        };
        let Ok(der) = pem_to_der(&leaf.cert) else {
            return false;
        };
        let Ok(cert) = parse_der(&der) else {
            return false;
        };
        let Ok(key) = KeyPair::from_pem(&leaf.key) else {
            return false;
        };
        cert.public_key().raw == key.subject_public_key_info().as_slice()
            && issued_by(&cert, &ca)
            && expires_after(&cert, RENEW_BEFORE_DAYS)
            && required.iter().all(|san| has_san(&cert, san))
    }
}

/// Generates a new self-signed CA.
pub(super) fn generate_ca(common_name: &str) -> Result<PemPair, PkiError> {
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = subject(common_name, &[]);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
    ];
    set_validity(&mut params, CA_VALIDITY_DAYS);
    let cert = params.self_signed(&key)?;
    Ok(PemPair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

/// Generates a service-account signing key (ECDSA P-256, i.e. JWT `ES256`);
/// returns the PKCS#8 private key and the SubjectPublicKeyInfo public key.
pub(super) fn generate_signing_key() -> Result<(String, String), PkiError> {
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

/// Public key (PEM) of a PEM private key; errors if the key does not parse.
pub(super) fn public_key_pem(key_pem: &str) -> Result<String, PkiError> {
    Ok(KeyPair::from_pem(key_pem)?.public_key_pem())
}

fn subject(common_name: &str, organizations: &[&str]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for org in organizations {
        dn.push(DnType::OrganizationName, *org);
    }
    dn.push(DnType::CommonName, common_name);
    dn
}

/// Sets validity from yesterday (tolerating clock skew between machines)
/// to `days` from today; rcgen takes whole calendar days here.
fn set_validity(params: &mut CertificateParams, days: i64) {
    let start = Utc::now() - Duration::days(1);
    let end = Utc::now() + Duration::days(days);
    params.not_before = rcgen::date_time_ymd(start.year(), month_u8(start), day_u8(start));
    params.not_after = rcgen::date_time_ymd(end.year(), month_u8(end), day_u8(end));
}

fn month_u8(date: chrono::DateTime<Utc>) -> u8 {
    // Months are 1..=12 and always fit.
    u8::try_from(date.month()).unwrap_or(1)
}

fn day_u8(date: chrono::DateTime<Utc>) -> u8 {
    // Days are 1..=31 and always fit.
    u8::try_from(date.day()).unwrap_or(1)
}

fn pem_to_der(pem: &str) -> Result<Vec<u8>, PkiError> {
    let (_, parsed) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|err| PkiError::Invalid(format!("malformed PEM certificate: {err}")))?;
    Ok(parsed.contents)
}

fn parse_der(der: &[u8]) -> Result<X509Certificate<'_>, PkiError> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, cert)| cert)
        .map_err(|err| PkiError::Invalid(format!("malformed certificate: {err}")))
}

fn expires_after(cert: &X509Certificate<'_>, days: i64) -> bool {
    let deadline = Utc::now() + Duration::days(days);
    cert.validity().not_after.timestamp() > deadline.timestamp()
}

/// Issuer name matches the CA subject and, where both are present, the
/// authority key identifier matches the CA's subject key identifier (a CA
/// regenerated with the same name must not keep the old leaves).
fn issued_by(cert: &X509Certificate<'_>, ca: &X509Certificate<'_>) -> bool {
    if cert.issuer().as_raw() != ca.subject().as_raw() {
        return false;
    }
    let ca_ski = ca
        .iter_extensions()
        .find_map(|ext| match ext.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(id) => Some(id.0),
            _ => None,
        });
    let leaf_aki = cert
        .iter_extensions()
        .find_map(|ext| match ext.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(aki) => {
                aki.key_identifier.as_ref().map(|id| id.0)
            }
            _ => None,
        });
    match (ca_ski, leaf_aki) {
        (Some(ski), Some(aki)) => ski == aki,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

fn has_san(cert: &X509Certificate<'_>, wanted: &San) -> bool {
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return false;
    };
    ext.value
        .general_names
        .iter()
        .any(|name| match (name, wanted) {
            (GeneralName::DNSName(dns), San::Dns(want)) => dns.eq_ignore_ascii_case(want),
            (GeneralName::IPAddress(bytes), San::Ip(want)) => ip_from_bytes(bytes) == Some(*want),
            _ => false,
        })
}

fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        return Some(IpAddr::from(v4));
    }
    <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca() -> CertAuthority {
        let pair = generate_ca(CA_COMMON_NAME).unwrap();
        CertAuthority::load(&pair.cert, &pair.key).unwrap()
    }

    fn server_leaf(ca: &CertAuthority, sans: &[San]) -> PemPair {
        ca.issue(&LeafSpec {
            common_name: "kube-apiserver",
            organizations: &[],
            sans,
            usage: Usage::Server,
        })
        .unwrap()
    }

    #[test]
    fn leaf_checks_sans_issuer_and_key() {
        let ca = ca();
        let sans = [
            San::Dns("localhost".into()),
            San::Ip("127.0.0.1".parse().unwrap()),
        ];
        let leaf = server_leaf(&ca, &sans);
        assert!(ca.leaf_is_current(&leaf, &sans));
        assert!(!ca.leaf_is_current(&leaf, &[San::Dns("other".into())]));
        assert!(!ca.leaf_is_current(&leaf, &[San::Ip("::1".parse().unwrap())]));

        // Same subject name, different CA key: the leaf must be reissued.
        let other_ca = self::ca();
        assert!(!other_ca.leaf_is_current(&leaf, &sans));

        // A key that does not belong to the certificate.
        let other = server_leaf(&ca, &sans);
        let mismatched = PemPair {
            cert: leaf.cert.clone(),
            key: other.key,
        };
        assert!(!ca.leaf_is_current(&mismatched, &sans));
    }

    #[test]
    fn ca_rejects_foreign_key() {
        let a = generate_ca(CA_COMMON_NAME).unwrap();
        let b = generate_ca(CA_COMMON_NAME).unwrap();
        assert!(CertAuthority::load(&a.cert, &b.key).is_err());
        assert!(CertAuthority::load(&a.cert, &a.key).unwrap().is_fresh());
    }

    #[test]
    fn signing_key_public_half_round_trips() {
        let (private, public) = generate_signing_key().unwrap();
        assert!(private.contains("BEGIN PRIVATE KEY"));
        assert!(public.contains("BEGIN PUBLIC KEY"));
        assert_eq!(public_key_pem(&private).unwrap(), public);
    }
}
