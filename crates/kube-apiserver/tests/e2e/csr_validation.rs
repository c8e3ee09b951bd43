//! CertificateSigningRequest validation end to end: kubectl is refused a
//! request that is no PEM CSR, names a malformed or the legacy signer,
//! repeats a usage or asks for less than ten minutes, with upstream's
//! field errors; a signed request (made with rcgen) is created under a
//! name that is no DNS subdomain (as kubelets name theirs), can be
//! relabelled, and keeps its spec through updates.

use base64::Engine as _;

use crate::harness::TestServer;
use crate::support::pki::csr_request;

fn csr_yaml(name: &str, request: &str, spec: &str) -> String {
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\n\
         metadata: {{name: {name}}}\nspec:\n  request: {request}\n{spec}"
    )
}

fn signed_request() -> String {
    csr_request("carol", &[])
}

fn refused(s: &TestServer, yaml: &str) -> String {
    let out = s.kubectl_stdin(&["create", "-f", "-"], yaml);
    assert!(!out.status.success(), "kubectl created {yaml}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn bad_requests_are_refused_and_signed_ones_created(s: &TestServer) {
    let notacsr = base64::engine::general_purpose::STANDARD.encode("notacsr");
    let err = refused(
        s,
        &csr_yaml(
            "bad",
            &notacsr,
            "  signerName: foo\n  expirationSeconds: 5\n  usages: [client auth, teleport, client auth]\n",
        ),
    );
    for expected in [
        "The CertificateSigningRequest \"bad\" is invalid: ",
        "spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74, 0x61, 0x63, 0x73, 0x72}: PEM block type must be CERTIFICATE REQUEST",
        "spec.usages[1]: Unsupported value: \"teleport\": supported values: \"any\", \"cert sign\", \"client auth\"",
        "spec.usages[2]: Duplicate value: \"client auth\"",
        "spec.signerName: Invalid value: \"foo\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
        "spec.expirationSeconds: Invalid value: 5: may not specify a duration less than 600 seconds (10 minutes)",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in {err}");
    }
    let err = refused(
        s,
        &csr_yaml(
            "legacy",
            &signed_request(),
            "  signerName: kubernetes.io/legacy-unknown\n  usages: [client auth]\n",
        ),
    );
    assert!(
        err.contains("The CertificateSigningRequest \"legacy\" is invalid: spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"),
        "{err}"
    );
    let good = csr_yaml(
        "node-csr-Ab_9",
        &signed_request(),
        "  signerName: example.com/signer\n  expirationSeconds: 600\n  usages: [digital signature, client auth]\n",
    );
    let out = s.kubectl_stdin(&["create", "-f", "-"], &good);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.ok(&["label", "csr", "node-csr-Ab_9", "team=a"]);
    let patch = r#"{"spec":{"signerName":"example.com/other","usages":["server auth"]}}"#;
    s.ok(&["patch", "csr", "node-csr-Ab_9", "--type=merge", "-p", patch]);
    let kept = s.ok(&[
        "get",
        "csr",
        "node-csr-Ab_9",
        "-o",
        "jsonpath={.spec.signerName} {.spec.usages} {.metadata.labels.team}",
    ]);
    assert_eq!(
        kept,
        r#"example.com/signer ["digital signature","client auth"] a"#
    );
}

crate::harness::on_both_backends!(bad_requests_are_refused_and_signed_ones_created);
