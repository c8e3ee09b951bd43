use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::*;

fn b64(data: impl AsRef<[u8]>) -> String {
    STANDARD.encode(data)
}

fn key_and_params() -> (rcgen::KeyPair, rcgen::CertificateParams) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec!["example.com".to_owned()]).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    (key, params)
}

fn request_der() -> Vec<u8> {
    let (key, params) = key_and_params();
    let csr = params.serialize_request(&key).expect("csr");
    csr.der().to_vec()
}

fn pem_of(label: &str, der: &[u8]) -> String {
    let lines: Vec<String> = b64(der)
        .as_bytes()
        .chunks(64)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

fn csr(request: &str, spec: Value) -> Value {
    let mut csr = json!({
        "metadata": {"name": "req"},
        "spec": {"request": request, "signerName": "example.com/signer", "usages": ["client auth"]},
    });
    for (k, v) in spec.as_object().expect("spec") {
        csr["spec"][k] = v.clone();
    }
    csr
}

fn good(spec: Value) -> Value {
    csr(&b64(pem_of("CERTIFICATE REQUEST", &request_der())), spec)
}

fn messages(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn a_signed_request_with_known_usages_is_valid() {
    assert!(validate_create(&good(json!({}))).is_empty());
    let spec = json!({"usages": ["digital signature", "key encipherment", "server auth"],
        "signerName": "kubernetes.io/kubelet-serving", "expirationSeconds": 600});
    assert!(validate_create(&good(spec)).is_empty());
}

#[test]
fn the_request_must_be_a_pem_certificate_request() {
    assert_eq!(
        messages(validate_create(&csr(&b64("notacsr"), json!({})))),
        ["spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74, 0x61, 0x63, 0x73, 0x72}: PEM block type must be CERTIFICATE REQUEST"]
    );
    let mut absent = good(json!({}));
    absent["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("request");
    assert_eq!(
        messages(validate_create(&absent)),
        ["spec.request: Invalid value: []byte(nil): PEM block type must be CERTIFICATE REQUEST"]
    );
    let wrong_label = pem_of("CERTIFICATE", &request_der());
    let errs = validate_create(&csr(&b64(&wrong_label), json!({})));
    assert!(errs[0]
        .detail
        .ends_with(": PEM block type must be CERTIFICATE REQUEST"));
    let empty = pem_of("CERTIFICATE REQUEST", &[]);
    let errs = validate_create(&csr(&b64(&empty), json!({})));
    assert!(errs[0]
        .detail
        .ends_with(": asn1: syntax error: sequence truncated"));
    let mut trailing = request_der();
    trailing.push(0);
    let errs = validate_create(&csr(
        &b64(pem_of("CERTIFICATE REQUEST", &trailing)),
        json!({}),
    ));
    assert!(errs[0]
        .detail
        .ends_with(": asn1: syntax error: trailing data"));
}

#[test]
fn the_request_signature_must_check_out() {
    let mut der = request_der();
    let last = der.len() - 2;
    der[last] ^= 0xff;
    let errs = validate_create(&csr(&b64(pem_of("CERTIFICATE REQUEST", &der)), json!({})));
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "spec.request");
    assert!(
        errs[0]
            .detail
            .ends_with(": x509: ECDSA verification failure"),
        "{}",
        errs[0].detail
    );
}

#[test]
fn usages_are_required_known_and_unique() {
    assert_eq!(
        messages(validate_create(&good(json!({"usages": []})))),
        ["spec.usages: Required value"]
    );
    let errs = messages(validate_create(&good(
        json!({"usages": ["client auth", "teleport", "client auth"]}),
    )));
    assert_eq!(errs.len(), 2);
    assert!(errs[0].starts_with("spec.usages[1]: Unsupported value: \"teleport\": supported values: \"any\", \"cert sign\", \"client auth\", "));
    assert!(errs[0].ends_with(", \"signing\", \"timestamping\""));
    assert_eq!(errs[1], "spec.usages[2]: Duplicate value: \"client auth\"");
}

#[test]
fn signer_names_are_domain_and_path() {
    let check = |name: &str| messages(validate_create(&good(json!({"signerName": name}))));
    assert_eq!(check(""), ["spec.signerName: Required value"]);
    assert_eq!(
        check("foo"),
        ["spec.signerName: Invalid value: \"foo\": must be a fully qualified domain and path of the form 'example.com/signer-name'"]
    );
    assert_eq!(
        check("foo/bar"),
        ["spec.signerName: Invalid value: \"foo\": should be a domain with at least two segments separated by dots"]
    );
    assert_eq!(
        check("Example.com/x"),
        ["spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
    );
    assert_eq!(
        check("example.com/a_b"),
        ["spec.signerName: Invalid value: \"a_b\": validating label \"a_b\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
    );
    let long = format!("example.com/{}", "a".repeat(560));
    assert_eq!(
        check(&long).last().map(String::as_str),
        Some("spec.signerName: Too long: may not be more than 571 bytes")
    );
}

#[test]
fn the_legacy_signer_is_kept_only_by_requests_that_had_it() {
    let legacy = good(json!({"signerName": LEGACY_SIGNER}));
    assert_eq!(
        messages(validate_create(&legacy)),
        ["spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"]
    );
    assert!(validate_update(&legacy, &legacy).is_empty());
    let odd = good(json!({"usages": ["teleport", "teleport"]}));
    // Two unknown usages and one duplicate.
    assert_eq!(validate_create(&odd).len(), 3);
    assert!(validate_update(&odd, &odd).is_empty());
    assert_eq!(validate_update(&odd, &good(json!({}))).len(), 3);
}

#[test]
fn a_certificate_lives_at_least_ten_minutes() {
    assert_eq!(
        messages(validate_create(&good(json!({"expirationSeconds": 5})))),
        ["spec.expirationSeconds: Invalid value: 5: may not specify a duration less than 600 seconds (10 minutes)"]
    );
}

fn with_status(mut csr: Value, status: Value) -> Value {
    csr["status"] = status;
    csr
}

#[test]
fn status_writes_may_not_approve_or_replace_a_certificate() {
    let old = good(json!({}));
    let approved = with_status(
        old.clone(),
        json!({"conditions": [{"type": "Approved", "status": "True"}]}),
    );
    assert_eq!(
        messages(validate_update(&approved, &old)),
        ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
    );
    assert_eq!(
        messages(validate_update(&old, &approved)),
        ["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
    );
    let (key, params) = key_and_params();
    let cert = params.self_signed(&key).expect("cert").pem();
    let issued = with_status(
        approved.clone(),
        json!({"certificate": b64(&cert), "conditions": approved["status"]["conditions"]}),
    );
    assert!(validate_update(&issued, &approved).is_empty());
    let garbage = with_status(
        approved.clone(),
        json!({"certificate": b64("junk"), "conditions": approved["status"]["conditions"]}),
    );
    assert_eq!(
        messages(validate_update(&garbage, &approved)),
        ["status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"]
    );
    let key_block = with_status(
        approved.clone(),
        json!({"certificate": b64(key.serialize_pem()), "conditions": approved["status"]["conditions"]}),
    );
    assert_eq!(
        messages(validate_update(&key_block, &approved)),
        ["status.certificate: Invalid value: \"<certificate data>\": only CERTIFICATE PEM blocks are allowed, found \"PRIVATE KEY\""]
    );
    let (key, params) = key_and_params();
    let other = params.self_signed(&key).expect("cert").pem();
    let replaced = with_status(
        issued.clone(),
        json!({"certificate": b64(&other), "conditions": approved["status"]["conditions"]}),
    );
    assert_eq!(
        messages(validate_update(&replaced, &issued)),
        ["status.certificate: Forbidden: updates may not modify existing certificate content"]
    );
}
