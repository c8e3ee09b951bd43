use serde_json::json;

use super::*;

fn cert_pem(is_ca: rcgen::IsCa) -> String {
    let mut params = rcgen::CertificateParams::new(Vec::new()).expect("params");
    params.is_ca = is_ca;
    let key = rcgen::KeyPair::generate().expect("key");
    params.self_signed(&key).expect("cert").pem()
}

fn ca_pem() -> String {
    cert_pem(rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained))
}

fn bundle(name: &str, signer: &str, pem: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"signerName": signer, "trustBundle": pem}})
}

fn messages(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn create(b: &Value) -> Vec<String> {
    let mut errs = validate_cluster_trust_bundle(b);
    errs.extend(validate_cluster_trust_bundle_create(b));
    messages(errs)
}

#[test]
fn good_bundles_pass() {
    let ca = ca_pem();
    assert_eq!(create(&bundle("foo", "", &ca)), Vec::<String>::new());
    let signed = bundle("k8s.example.com:signer:foo", "k8s.example.com/signer", &ca);
    assert_eq!(create(&signed), Vec::<String>::new());
}

#[test]
fn names_must_carry_the_signer_name() {
    let ca = ca_pem();
    assert_eq!(
        create(&bundle("foo:bar", "", &ca)),
        ["metadata.name: Invalid value: \"foo:bar\": ClusterTrustBundle without signer name must not have \":\" in its name"]
    );
    assert_eq!(
        create(&bundle("foo", "k8s.example.com/signer", &ca)),
        ["metadata.name: Invalid value: \"foo\": ClusterTrustBundle for signerName k8s.example.com/signer must be named with prefix k8s.example.com:signer:"]
    );
    let errs = create(&bundle(
        "k8s.example.com:signer:Foo",
        "k8s.example.com/signer",
        &ca,
    ));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].starts_with(
        "metadata.name: Invalid value: \"k8s.example.com:signer:Foo\": a lowercase RFC 1123 subdomain"
    ));
    let errs = create(&bundle("bad:foo", "bad", &ca));
    assert_eq!(
        errs,
        ["spec.signerName: Invalid value: \"bad\": must be a fully qualified domain and path of the form 'example.com/signer-name'"]
    );
}

#[test]
fn bundles_hold_distinct_ca_certificates() {
    let (ca, leaf) = (ca_pem(), cert_pem(rcgen::IsCa::ExplicitNoCa));
    let key = "-----BEGIN PRIVATE KEY-----\naGk=\n-----END PRIVATE KEY-----\n";
    let garbage = "-----BEGIN CERTIFICATE-----\naGk=\n-----END CERTIFICATE-----\n";
    let headers = ca.replacen("-----\n", "-----\nProc-Type: 4,ENCRYPTED\n\n", 1);
    let all = format!("{key}{leaf}{garbage}{headers}{ca}");
    assert_eq!(
        create(&bundle("foo", "", &all)),
        [
            "spec.trustBundle: Invalid value: \"<value omitted>\": entry 0 has bad block type: PRIVATE KEY",
            "spec.trustBundle: Invalid value: \"<value omitted>\": entry 1 does not have the CA bit set",
            "spec.trustBundle: Invalid value: \"<value omitted>\": entry 2 does not parse as X.509",
            "spec.trustBundle: Invalid value: \"<value omitted>\": entry 3 has PEM block headers",
        ]
    );
    let other = ca_pem();
    let twice = format!("{ca}{other}{ca}{other}{ca}");
    assert_eq!(
        create(&bundle("foo", "", &twice)),
        [
            "spec.trustBundle: Invalid value: \"<value omitted>\": duplicate trust anchor (indices [0 2 4])",
            "spec.trustBundle: Invalid value: \"<value omitted>\": duplicate trust anchor (indices [1 3])",
        ]
    );
    assert_eq!(
        create(&bundle("foo", "", "not pem")),
        ["spec.trustBundle: Invalid value: \"<value omitted>\": at least one trust anchor must be provided"]
    );
    let big = "x".repeat(MAX_TRUST_BUNDLE_SIZE + 1);
    assert_eq!(
        create(&bundle("foo", "", &big)),
        ["spec.trustBundle: Too long: may not be more than 1048576 bytes"]
    );
}

#[test]
fn updates_parse_a_changed_bundle_and_keep_the_signer() {
    let old = bundle("foo", "", "stored before validation");
    assert_eq!(
        messages(validate_cluster_trust_bundle_update(&old, &old)),
        Vec::<String>::new()
    );
    let changed = bundle("foo", "", "still not pem");
    assert_eq!(
        messages(validate_cluster_trust_bundle_update(&changed, &old)),
        ["spec.trustBundle: Invalid value: \"<value omitted>\": at least one trust anchor must be provided"]
    );
    let signed = bundle("foo", "k8s.example.com/s", "stored before validation");
    assert_eq!(
        messages(validate_cluster_trust_bundle_update(&signed, &old)),
        ["spec.signerName: Invalid value: \"k8s.example.com/s\": field is immutable"]
    );
}
