//! CertificateSigningRequest plugins: CertificateSigning (only users allowed
//! to `sign` for a signer may set the issued certificate) and
//! CertificateSubjectRestriction (no `system:masters` client certificates
//! through the kube-apiserver-client signer).

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use apiserver::authorization::{Attributes as AuthzAttributes, Decision};
use apiserver::filters::authorization::Authorization;
use async_trait::async_trait;
use base64::Engine;
use serde_json::Value;
use x509_parser::prelude::FromDer as _;

use super::lookup::text;

const GROUP: &str = "certificates.k8s.io";
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const MASTERS: &str = "system:masters";

fn is_csr(a: &Attributes, subresource: &str) -> bool {
    a.is(GROUP, "certificatesigningrequests") && a.subresource == subresource
}

/// Whether the user may `verb` the signer, by its name or its domain
/// wildcard (`example.com/*`), as upstream's IsAuthorizedForSignerName.
async fn authorized_for_signer(
    authz: &Authorization,
    a: &Attributes,
    verb: &str,
    signer: &str,
) -> bool {
    let wildcard = signer
        .split_once('/')
        .map(|(domain, _)| format!("{domain}/*"));
    for name in std::iter::once(signer).chain(wildcard.as_deref()) {
        let attrs = AuthzAttributes {
            user: a.user(),
            verb,
            is_resource_request: true,
            namespace: "",
            api_group: GROUP,
            resource: "signers",
            subresource: "",
            name,
            path: "",
            api_version: "",
            field_selector: "",
            label_selector: "",
        };
        if matches!(authz.decide(&attrs).await, Decision::Allow(_)) {
            return true;
        }
    }
    false
}

pub struct CertificateSigning {
    pub authorization: Arc<Authorization>,
}

impl Handler for CertificateSigning {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Update
    }
}

#[async_trait]
impl ValidationInterface for CertificateSigning {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_csr(a, "status") {
            return Ok(());
        }
        let (Some(new), Some(old)) = (a.object.as_ref(), a.old_object.as_ref()) else {
            return Ok(());
        };
        let certificate = |csr: &Value| csr.pointer("/status/certificate").cloned();
        if certificate(new) == certificate(old) {
            return Ok(());
        }
        let signer = text(new, "/spec/signerName").unwrap_or_default();
        if authorized_for_signer(&self.authorization, a, "sign", signer).await {
            return Ok(());
        }
        Err(a.forbidden(format!(
            "user not permitted to sign requests with signerName \"{signer}\""
        )))
    }
}

pub struct CertificateSubjectRestriction;

impl Handler for CertificateSubjectRestriction {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

/// The organizations of a PEM certificate request.
fn organizations(pem: &[u8]) -> Result<Vec<String>, String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).map_err(|e| e.to_string())?;
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
            .map_err(|e| e.to_string())?;
    Ok(csr
        .certification_request_info
        .subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_owned))
        .collect())
}

#[async_trait]
impl ValidationInterface for CertificateSubjectRestriction {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_csr(a, "") {
            return Ok(());
        }
        let Some(csr) = a.object.as_ref() else {
            return Ok(());
        };
        if text(csr, "/spec/signerName") != Some(CLIENT_SIGNER) {
            return Ok(());
        }
        let request = text(csr, "/spec/request").unwrap_or_default();
        let orgs = base64::engine::general_purpose::STANDARD
            .decode(request)
            .map_err(|e| e.to_string())
            .and_then(|pem| organizations(&pem))
            .map_err(|e| a.forbidden(format!("failed to parse CSR: {e}")))?;
        if orgs.iter().any(|o| o == MASTERS) {
            return Err(a.forbidden(format!(
                "use of {CLIENT_SIGNER} signer with {MASTERS} group is not allowed"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr_pem(org: &str) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, org);
        let csr = params.serialize_request(&key).expect("csr");
        csr.pem().expect("pem").into_bytes()
    }

    #[test]
    fn organizations_come_from_the_request_subject() {
        assert_eq!(
            organizations(&csr_pem(MASTERS)),
            Ok(vec![MASTERS.to_string()])
        );
        assert_eq!(organizations(&csr_pem("dev")), Ok(vec!["dev".to_string()]));
        assert!(organizations(b"not pem").is_err());
    }
}
