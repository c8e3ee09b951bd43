//! `certificatesigningrequests/approval` (upstream's CSR approval REST):
//! approving or denying a request writes only `status.conditions`, checked
//! by `validation::certificate_approval` (upstream's
//! `ValidateCertificateSigningRequestApprovalUpdate`). Who may approve for a
//! signer is the CertificateApproval admission plugin's concern.

use apiserver::registry::rest::UpdateSubresource;

use super::validation::certificate_approval::validate_approval;

/// The CSR's subresources written like status.
pub const CSR: &[UpdateSubresource] = &[UpdateSubresource {
    name: "approval",
    fields: &["/status/conditions"],
    validate: validate_approval,
    verbs: &["get", "patch", "update"],
}];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn approval_writes_only_the_conditions() {
        let mut new = json!({"metadata": {"name": "req"},
            "spec": {"signerName": "example.com/changed"},
            "status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        let old = json!({"metadata": {"name": "req"}, "spec": {"signerName": "example.com/a"}});
        CSR[0].prepare(&mut new, &old);
        assert_eq!(new["spec"]["signerName"], "example.com/a");
        assert_eq!(new["status"]["conditions"][0]["type"], "Approved");
    }
}
