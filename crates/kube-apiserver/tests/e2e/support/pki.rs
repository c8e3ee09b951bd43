//! Certificate authorities of the tests' own and the client certificates
//! they issue (rcgen), for client-CA and front-proxy tests.

use std::path::{Path, PathBuf};

/// A CA whose subject is `CN=<name>`: its PEM and an issuer.
pub fn new_ca(name: &str) -> (String, rcgen::Issuer<'static, rcgen::KeyPair>) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let pem = params.self_signed(&key).expect("ca").pem();
    (pem, rcgen::Issuer::new(params, key))
}

/// A certificate request for `CN=<cn>` in the organizations `orgs`, as a
/// CertificateSigningRequest's `spec.request` holds it (base64 of the PEM).
pub fn csr_request(cn: &str, orgs: &[&str]) -> String {
    use base64::Engine as _;
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    for org in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *org);
    }
    let pem = params
        .serialize_request(&key)
        .and_then(|r| r.pem())
        .expect("csr");
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// A client certificate for `cn` issued by `issuer`, written into `dir`.
pub fn client_cert(
    dir: &Path,
    cn: &str,
    issuer: &rcgen::Issuer<'static, rcgen::KeyPair>,
) -> (PathBuf, PathBuf) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, issuer).expect("cert");
    let paths = (dir.join(format!("{cn}.crt")), dir.join(format!("{cn}.key")));
    std::fs::write(&paths.0, cert.pem()).expect("write cert");
    std::fs::write(&paths.1, key.serialize_pem()).expect("write key");
    paths
}
