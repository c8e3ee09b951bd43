//! ClusterTrustBundle validation end to end (upstream's
//! `ValidateClusterTrustBundle`/`ValidateClusterTrustBundleUpdate`): a
//! bundle of the server's CA is created with kubectl, plain and under a
//! signer name; names without the signer prefix, non-CA certificates,
//! repeated anchors and changed bundles that hold none are refused with
//! upstream's messages and 422 Status.

use serde_json::json;

use crate::harness::TestServer;
use crate::spec_validation::refused;
use crate::support::http::request;

fn pem(s: &TestServer, file: &str) -> String {
    std::fs::read_to_string(s.dir.path().join("pki").join(file)).expect("pem")
}

fn bundle_yaml(name: &str, signer: &str, pem: &str) -> String {
    let indented: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {{name: {name}}}\n\
         spec:\n  signerName: '{signer}'\n  trustBundle: |\n{indented}"
    )
}

#[test]
fn cluster_trust_bundles_are_validated_as_upstream() {
    let s = TestServer::start();
    let (ca, leaf) = (pem(&s, "ca.crt"), pem(&s, "apiserver.crt"));
    s.apply_yaml(&bundle_yaml("plain", "", &ca));
    s.apply_yaml(&bundle_yaml(
        "example.com:signer:one",
        "example.com/signer",
        &ca,
    ));

    let err = refused(
        &s,
        &bundle_yaml("one", "example.com/signer", &format!("{leaf}{ca}")),
    );
    assert!(
        err.contains("The ClusterTrustBundle \"one\" is invalid: \n* metadata.name: Invalid value: \"one\": ClusterTrustBundle for signerName example.com/signer must be named with prefix example.com:signer:\n* spec.trustBundle: Invalid value: \"<value omitted>\": entry 0 does not have the CA bit set\n"),
        "{err}"
    );

    let body = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "ClusterTrustBundle",
        "metadata": {"name": "dup"}, "spec": {"trustBundle": format!("{ca}{ca}")}});
    let a = request(
        &s,
        "POST",
        "/apis/certificates.k8s.io/v1/clustertrustbundles",
        &["Content-Type: application/json"],
        Some(&body.to_string()),
    );
    assert_eq!(a.code, 422, "{}", a.body);
    let detail = "Invalid value: \"<value omitted>\": duplicate trust anchor (indices [0 1])";
    let want = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("ClusterTrustBundle.certificates.k8s.io \"dup\" is invalid: spec.trustBundle: {detail}"),
        "reason": "Invalid",
        "details": {"name": "dup", "group": "certificates.k8s.io", "kind": "ClusterTrustBundle",
            "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": "spec.trustBundle"}]},
        "code": 422});
    assert_eq!(a.body, want);

    let out = s.kubectl(&[
        "patch",
        "clustertrustbundle",
        "plain",
        "--type=merge",
        "-p",
        r#"{"spec":{"trustBundle":"no certificates here"}}"#,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The ClusterTrustBundle \"plain\" is invalid: spec.trustBundle: Invalid value: \"<value omitted>\": at least one trust anchor must be provided"),
        "{err}"
    );
    // A change elsewhere does not parse the stored bundle again.
    s.ok(&["label", "clustertrustbundle", "plain", "team=a"]);
}
