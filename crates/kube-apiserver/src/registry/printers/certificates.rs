//! certificates.k8s.io printers: CertificateSigningRequest and
//! ClusterTrustBundle.

use apiserver::registry::rest::table::human_duration;
use chrono::TimeDelta;
use serde_json::{json, Value};

use super::{age_cell, name_cell, string, text, Printer, TableColumn};
use super::{AGE_COLUMN, NAME_COLUMN};

pub const CSR: Printer = Printer {
    group: "certificates.k8s.io",
    version: "v1",
    kind: "CertificateSigningRequest",
    columns: csr_columns,
    row: csr_row,
};

pub const CLUSTER_TRUST_BUNDLE: Printer = Printer {
    group: "certificates.k8s.io",
    version: "v1",
    kind: "ClusterTrustBundle",
    columns: cluster_trust_bundle_columns,
    row: cluster_trust_bundle_row,
};

const SIGNER_NAME_DESCRIPTION: &str = "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.";

const EXPIRATION_DESCRIPTION: &str = "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.";

const BUNDLE_SIGNER_DESCRIPTION: &str = "signerName indicates the associated signer, if any.\n\nIn order to create or update a ClusterTrustBundle that sets signerName, you must have the following cluster-scoped permission: group=certificates.k8s.io resource=signers resourceName=<the signer name> verb=attest.\n\nIf signerName is not empty, then the ClusterTrustBundle object must be named with the signer name as a prefix (translating slashes to colons). For example, for the signer name `example.com/foo`, valid ClusterTrustBundle object names include `example.com:foo:abc` and `example.com:foo:v1`.\n\nIf signerName is empty, then the ClusterTrustBundle object's name must not have such a prefix.\n\nList/watch requests for ClusterTrustBundles can filter on this field using a `spec.signerName=NAME` field selector.";

fn csr_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        AGE_COLUMN,
        string("SignerName", SIGNER_NAME_DESCRIPTION),
        // Upstream describes the requestor with the `request` field's doc.
        string("Requestor", "Base64-encoded PKCS#10 CSR data"),
        string("RequestedDuration", EXPIRATION_DESCRIPTION),
        string(
            "Condition",
            "Conditions applied to the request, such as approval or denial.",
        ),
    ]
}

fn signer_name(obj: &Value) -> Value {
    match text(obj, "/spec/signerName") {
        "" => json!("<none>"),
        s => json!(s),
    }
}

fn csr_row(csr: &Value) -> Vec<Value> {
    let requested = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .and_then(TimeDelta::try_seconds)
        .map_or_else(|| "<none>".to_owned(), human_duration);
    vec![
        name_cell(csr),
        age_cell(csr),
        signer_name(csr),
        json!(text(csr, "/spec/username")),
        json!(requested),
        json!(csr_condition(csr)),
    ]
}

/// Upstream's `extractCSRStatus`: Denied over Approved over Pending, then
/// `,Failed` and `,Issued` when they apply.
fn csr_condition(csr: &Value) -> String {
    let conditions = csr
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let has = |kind: &str| conditions.iter().any(|c| text(c, "/type") == kind);
    let mut status = if has("Denied") {
        "Denied".to_owned()
    } else if has("Approved") {
        "Approved".to_owned()
    } else {
        "Pending".to_owned()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(csr, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

fn cluster_trust_bundle_columns() -> Vec<TableColumn> {
    vec![NAME_COLUMN, string("SignerName", BUNDLE_SIGNER_DESCRIPTION)]
}

fn cluster_trust_bundle_row(obj: &Value) -> Vec<Value> {
    vec![name_cell(obj), signer_name(obj)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_cells() {
        let csr = json!({
            "metadata": {"name": "req"},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
                "username": "alice", "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved", "status": "True"}],
                "certificate": "LS0t"}
        });
        let row = csr_row(&csr);
        assert_eq!(row[0], json!("req"));
        assert_eq!(row[2], json!("kubernetes.io/kube-apiserver-client"));
        assert_eq!(row[3], json!("alice"));
        assert_eq!(row[4], json!("24h"));
        assert_eq!(row[5], json!("Approved,Issued"));
    }

    #[test]
    fn csr_defaults_and_precedence() {
        let bare = json!({"metadata": {"name": "b"}, "spec": {}});
        let row = csr_row(&bare);
        assert_eq!(
            &row[2..],
            &[
                json!("<none>"),
                json!(""),
                json!("<none>"),
                json!("Pending")
            ]
        );
        let both = json!({"spec": {"expirationSeconds": 600}, "status": {"conditions": [
            {"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]}});
        assert_eq!(csr_condition(&both), "Denied,Failed");
        assert_eq!(csr_row(&both)[4], json!("10m"));
        let odd = json!({"spec": {"expirationSeconds": 5400}});
        assert_eq!(csr_row(&odd)[4], json!("90m"));
    }

    #[test]
    fn bundle_cells() {
        let named = json!({"metadata": {"name": "example.com:foo:a"},
            "spec": {"signerName": "example.com/foo", "trustBundle": "x"}});
        assert_eq!(
            cluster_trust_bundle_row(&named),
            vec![json!("example.com:foo:a"), json!("example.com/foo")]
        );
        let plain = json!({"metadata": {"name": "p"}, "spec": {"trustBundle": "x"}});
        assert_eq!(cluster_trust_bundle_row(&plain)[1], json!("<none>"));
        assert_eq!(cluster_trust_bundle_columns().len(), 2);
    }
}
