//! Certificate plugins: CertificateApproval (only users allowed to
//! `approve` for a signer may approve or deny its requests),
//! CertificateSigning (only users allowed to `sign` for a signer may set the
//! issued certificate), CertificateSubjectRestriction (no `system:masters`
//! client certificates through the kube-apiserver-client signer) and
//! ClusterTrustBundleAttest (only users allowed to `attest` for a signer may
//! write its trust bundles).

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use apiserver::authorization::authorizer::{Attributes as AuthzAttributes, Decision};
use apiserver::filters::authorization::Authorization;
use async_trait::async_trait;
use base64::Engine;
use serde_json::Value;
use x509_parser::prelude::FromDer as _;

use apiserver::admission::initializer::text;

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

pub struct CertificateApproval {
    pub authorization: Arc<Authorization>,
}

impl Handler for CertificateApproval {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Update
    }
}

#[async_trait]
impl ValidationInterface for CertificateApproval {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_csr(a, "approval") {
            return Ok(());
        }
        // The stored signer counts: the approval write cannot change it.
        let signer = a
            .old_object
            .as_deref()
            .and_then(|csr| text(csr, "/spec/signerName"))
            .unwrap_or_default();
        if authorized_for_signer(&self.authorization, a, "approve", signer).await {
            return Ok(());
        }
        Err(a.forbidden(format!(
            "user not permitted to approve requests with signerName \"{signer}\""
        )))
    }
}

pub struct ClusterTrustBundleAttest {
    pub authorization: Arc<Authorization>,
}

impl Handler for ClusterTrustBundleAttest {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

/// Whether an update changes nothing but the metadata garbage collection
/// and the server maintain (upstream's `IsOnlyMutatingGCFields`).
fn only_gc_fields_changed(new: &Value, old: &Value) -> bool {
    const GC_FIELDS: [&str; 5] = [
        "ownerReferences",
        "finalizers",
        "resourceVersion",
        "managedFields",
        "generation",
    ];
    let strip = |obj: &Value| {
        let mut obj = obj.clone();
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in GC_FIELDS {
                meta.remove(field);
            }
        }
        obj
    };
    strip(new) == strip(old)
}

#[async_trait]
impl ValidationInterface for ClusterTrustBundleAttest {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !a.is(GROUP, "clustertrustbundles") {
            return Ok(());
        }
        let Some(bundle) = a.object.as_ref() else {
            return Ok(());
        };
        // Bundles without a signer need no attestation; validation keeps
        // the signer from changing, so the new object's counts.
        let signer = text(bundle, "/spec/signerName").unwrap_or_default();
        if signer.is_empty() {
            return Ok(());
        }
        if let Some(old) = a.old_object.as_deref() {
            if a.operation == Operation::Update && only_gc_fields_changed(bundle, old) {
                return Ok(());
            }
        }
        if authorized_for_signer(&self.authorization, a, "attest", signer).await {
            return Ok(());
        }
        Err(a.forbidden(format!(
            "user not permitted to attest for signerName \"{signer}\""
        )))
    }
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

/// The subject of a certificate request.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub common_name: String,
    pub organizations: Vec<String>,
}

/// The subject of a certificate request as `spec.request` holds it
/// (base64 of the PEM).
pub fn request_subject(request: &str) -> Result<Subject, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(request)
        .map_err(|e| e.to_string())?;
    subject(&pem)
}

/// The subject of a PEM certificate request.
fn subject(pem: &[u8]) -> Result<Subject, String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).map_err(|e| e.to_string())?;
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
            .map_err(|e| e.to_string())?;
    let name = &csr.certification_request_info.subject;
    let text =
        |attr: &x509_parser::x509::AttributeTypeAndValue<'_>| attr.as_str().ok().map(str::to_owned);
    let subject = Subject {
        common_name: name.iter_common_name().find_map(text).unwrap_or_default(),
        organizations: name.iter_organization().filter_map(text).collect(),
    };
    Ok(subject)
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
        let subject = request_subject(request)
            .map_err(|e| a.forbidden(format!("failed to parse CSR: {e}")))?;
        if subject.organizations.iter().any(|o| o == MASTERS) {
            return Err(a.forbidden(format!(
                "use of {CLIENT_SIGNER} signer with {MASTERS} group is not allowed"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::admission::testing::{rbac, refusal, user, Write};

    fn signer_rule(verb: &str, name: &str) -> Value {
        json!([{"apiGroups": [GROUP], "resources": ["signers"], "verbs": [verb],
            "resourceNames": [name]}])
    }

    fn csr(signer: &str) -> Value {
        json!({"metadata": {"name": "req"}, "spec": {"signerName": signer}})
    }

    fn approval(signer: &str) -> Attributes {
        Write::new(GROUP, "certificatesigningrequests", Operation::Update)
            .sub("approval")
            .object(csr("example.com/changed"))
            .old(csr(signer))
            .name("req")
            .by(user("alice", &[]))
    }

    #[tokio::test]
    async fn approving_needs_approve_on_the_stored_signer_or_its_domain() {
        let plugin = |rules| CertificateApproval {
            authorization: rbac("alice", rules),
        };
        let exact = plugin(signer_rule("approve", "example.com/a"));
        assert_eq!(
            refusal(exact.validate(&approval("example.com/a")).await),
            ""
        );
        let domain = plugin(signer_rule("approve", "example.com/*"));
        assert_eq!(
            refusal(domain.validate(&approval("example.com/a")).await),
            ""
        );
        let sign_only = plugin(signer_rule("sign", "example.com/a"));
        assert_eq!(
            refusal(sign_only.validate(&approval("example.com/a")).await),
            "certificatesigningrequests.certificates.k8s.io \"req\" is forbidden: user not permitted to approve requests with signerName \"example.com/a\""
        );
        // Other writes to the request are not approvals.
        let status = Write::new(GROUP, "certificatesigningrequests", Operation::Update)
            .sub("status")
            .object(csr("example.com/a"))
            .old(csr("example.com/a"))
            .by(user("alice", &[]));
        assert_eq!(refusal(sign_only.validate(&status).await), "");
    }

    fn bundle(signer: &str, labels: Value) -> Value {
        json!({"metadata": {"name": "b", "labels": labels},
            "spec": {"signerName": signer, "trustBundle": "pem"}})
    }

    #[tokio::test]
    async fn trust_bundles_of_a_signer_need_attest() {
        let plugin = ClusterTrustBundleAttest {
            authorization: rbac("alice", signer_rule("attest", "example.com/a")),
        };
        let write = |op, signer: &str, old: Option<Value>| {
            let w = Write::new(GROUP, "clustertrustbundles", op)
                .object(bundle(signer, json!({"x": "1"})))
                .name("b");
            match old {
                Some(old) => w.old(old),
                None => w,
            }
            .by(user("alice", &[]))
        };
        assert_eq!(
            refusal(
                plugin
                    .validate(&write(Operation::Create, "example.com/a", None))
                    .await
            ),
            ""
        );
        assert_eq!(
            refusal(plugin.validate(&write(Operation::Create, "", None)).await),
            ""
        );
        assert_eq!(
            refusal(plugin.validate(&write(Operation::Create, "example.com/b", None)).await),
            "clustertrustbundles.certificates.k8s.io \"b\" is forbidden: user not permitted to attest for signerName \"example.com/b\""
        );
        // A change of the labels needs attest; one of the finalizers does not.
        let relabelled = bundle("example.com/b", json!({"x": "2"}));
        let update = write(Operation::Update, "example.com/b", Some(relabelled));
        assert!(!refusal(plugin.validate(&update).await).is_empty());
        let mut finalized = bundle("example.com/b", json!({"x": "1"}));
        finalized["metadata"]["finalizers"] = json!(["f"]);
        let update = write(Operation::Update, "example.com/b", Some(finalized));
        assert_eq!(refusal(plugin.validate(&update).await), "");
    }

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
    fn the_subject_comes_from_the_request() {
        let subject_of = |org| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(csr_pem(org));
            request_subject(&encoded)
        };
        assert_eq!(
            subject_of(MASTERS),
            Ok(Subject {
                common_name: "alice".into(),
                organizations: vec![MASTERS.to_string()]
            })
        );
        assert_eq!(
            subject_of("dev").map(|s| s.organizations),
            Ok(vec!["dev".to_string()])
        );
        assert!(subject(b"not pem").is_err());
        assert!(request_subject("%%%").is_err());
    }
}
