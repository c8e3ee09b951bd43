//! Validation of CertificateSigningRequests (upstream's
//! `ValidateCertificateSigningRequestCreate` and `…Update`): the request
//! must be a PEM `CERTIFICATE REQUEST` whose signature checks out, usages
//! are given, known and unique, the signer name is well formed (and not the
//! legacy one), a requested duration is at least ten minutes, and status
//! writes keep conditions and certificates within upstream's rules. What a
//! stored request already breaks it may keep breaking, as upstream
//! tolerates existing data.

use std::collections::HashSet;
use std::fmt::Write as _;

use apimachinery::field_errors::{ErrorType, FieldError, Path};
use apimachinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, DNS1123_LABEL_MAX_LENGTH, DNS1123_SUBDOMAIN_MAX_LENGTH,
};
use base64::Engine as _;
use serde_json::Value;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::error::X509Error;
use x509_parser::oid_registry::{
    OID_KEY_TYPE_EC_PUBLIC_KEY, OID_PKCS1_MD5WITHRSAENC, OID_PKCS1_RSAENCRYPTION, OID_SIG_ED25519,
};
use x509_parser::prelude::FromDer as _;

use super::certificate_approval::validate_approval;
use super::go_pem;
use super::{items, text};

/// Upstream's `LegacyUnknownSignerName`, refused in v1 for new requests.
const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Upstream's known key usages, in the sorted order its errors list them.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The shortest certificate lifetime a request may ask for.
const MIN_EXPIRATION_SECONDS: i64 = 600;

/// What a stored request already breaks and may keep breaking.
#[derive(Default)]
struct Tolerated {
    legacy_signer: bool,
    unknown_usages: bool,
    duplicate_usages: bool,
}

impl Tolerated {
    fn by(old: &Value) -> Self {
        let usages = usages(old);
        Tolerated {
            legacy_signer: text(spec(old), "signerName") == LEGACY_SIGNER,
            unknown_usages: usages.iter().any(|u| !USAGES.contains(u)),
            duplicate_usages: has_duplicates(&usages),
        }
    }
}

/// A new request (upstream's `ValidateCertificateSigningRequestCreate`).
pub fn validate_create(csr: &Value) -> Vec<FieldError> {
    validate_spec(csr, &Tolerated::default())
}

/// An update of the request or of its status (upstream's
/// `ValidateCertificateSigningRequestUpdate` and `…StatusUpdate`; the main
/// resource keeps its stored status, so the status rules only bite on
/// status writes).
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate_spec(new, &Tolerated::by(old));
    // The approval subresource's rules for conditions hold here as well.
    errs.extend(validate_approval(new, old));
    let conditions = Path::new("status").child("conditions");
    for kind in ["Approved", "Denied"] {
        if condition_count(new, kind) > condition_count(old, kind) {
            errs.push(FieldError::forbidden(
                &conditions,
                format!("updates may not add a condition of type {kind:?}"),
            ));
        }
    }
    errs.extend(validate_certificate_update(new, old));
    errs
}

fn spec(csr: &Value) -> &Value {
    csr.get("spec").unwrap_or(&Value::Null)
}

fn usages(csr: &Value) -> Vec<&str> {
    items(spec(csr), "usages")
        .iter()
        .map(|u| u.as_str().unwrap_or_default())
        .collect()
}

fn has_duplicates(values: &[&str]) -> bool {
    let mut seen = HashSet::new();
    values.iter().any(|v| !seen.insert(*v))
}

fn condition_count(csr: &Value, kind: &str) -> usize {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(0, |all| all.iter().filter(|c| c["type"] == kind).count())
}

fn validate_spec(csr: &Value, tolerated: &Tolerated) -> Vec<FieldError> {
    let spec = spec(csr);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let request = decoded(spec.get("request"));
    if let Err(msg) = check_request(request.as_deref()) {
        errs.push(invalid_bytes(
            &path.child("request"),
            request.as_deref(),
            &msg,
        ));
    }
    let usages = usages(csr);
    let usages_path = path.child("usages");
    if usages.is_empty() {
        errs.push(FieldError::required(&usages_path, ""));
    }
    if !tolerated.unknown_usages {
        for (i, usage) in usages.iter().enumerate() {
            if !USAGES.contains(usage) {
                errs.push(FieldError::not_supported(
                    &usages_path.index(i),
                    *usage,
                    USAGES,
                ));
            }
        }
    }
    if !tolerated.duplicate_usages {
        let mut seen = HashSet::new();
        for (i, usage) in usages.iter().enumerate() {
            if !seen.insert(*usage) {
                errs.push(FieldError::duplicate(&usages_path.index(i), *usage));
            }
        }
    }
    let signer = text(spec, "signerName");
    let signer_path = path.child("signerName");
    if signer == LEGACY_SIGNER && !tolerated.legacy_signer {
        errs.push(FieldError::invalid(
            &signer_path,
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name(&signer_path, signer));
    }
    if let Some(seconds) = spec.get("expirationSeconds").and_then(Value::as_i64) {
        if seconds < MIN_EXPIRATION_SECONDS {
            errs.push(FieldError::invalid(
                &path.child("expirationSeconds"),
                seconds,
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
    }
    errs
}

/// The bytes of a base64 field (`None` when absent, as a nil slice in Go).
fn decoded(field: Option<&Value>) -> Option<Vec<u8>> {
    let encoded = field?.as_str()?;
    // Typed decoding already refused bodies that are not base64.
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap_or_default(),
    )
}

/// An Invalid error over a byte field, showing the bytes as Go's `%#v`
/// prints a `[]byte` (field errors have no raw rendering of their own).
fn invalid_bytes(path: &Path, bytes: Option<&[u8]>, detail: &str) -> FieldError {
    let mut shown = String::from("[]byte");
    match bytes {
        None => shown.push_str("(nil)"),
        Some(bytes) => {
            shown.push('{');
            for (i, b) in bytes.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                let _ = write!(shown, "{sep}0x{b:x}");
            }
            shown.push('}');
        }
    }
    FieldError {
        error_type: ErrorType::Invalid,
        field: path.to_string(),
        bad_value: None,
        detail: format!("{shown}: {detail}"),
    }
}

/// Upstream's `ParseCSR` and `CheckSignature`, with Go's messages where our
/// parser can tell the same cases apart.
fn check_request(pem: Option<&[u8]>) -> Result<(), String> {
    let not_a_request = || "PEM block type must be CERTIFICATE REQUEST".to_owned();
    let (block, _) = go_pem::decode(pem.unwrap_or_default()).ok_or_else(not_a_request)?;
    if block.kind != "CERTIFICATE REQUEST" {
        return Err(not_a_request());
    }
    if block.bytes.is_empty() {
        return Err("asn1: syntax error: sequence truncated".into());
    }
    let (rest, csr) = X509CertificationRequest::from_der(&block.bytes)
        .map_err(|_| "asn1: syntax error: data truncated".to_owned())?;
    if !rest.is_empty() {
        return Err("asn1: syntax error: trailing data".into());
    }
    if csr.signature_algorithm.algorithm == OID_PKCS1_MD5WITHRSAENC {
        return Err("x509: cannot verify signature: insecure algorithm MD5-RSA".into());
    }
    let key = &csr
        .certification_request_info
        .subject_pki
        .algorithm
        .algorithm;
    match csr.verify_signature() {
        Ok(()) => Ok(()),
        Err(X509Error::SignatureVerificationError) if *key == OID_PKCS1_RSAENCRYPTION => {
            Err("crypto/rsa: verification error".into())
        }
        Err(X509Error::SignatureVerificationError) if *key == OID_KEY_TYPE_EC_PUBLIC_KEY => {
            Err("x509: ECDSA verification failure".into())
        }
        Err(X509Error::SignatureVerificationError) if *key == OID_SIG_ED25519 => {
            Err("x509: Ed25519 verification failure".into())
        }
        Err(_) => Err("x509: cannot verify signature: algorithm unimplemented".into()),
    }
}

/// Upstream's `ValidateSignerName`: `<domain>/<path>`, the domain made of
/// at least two DNS labels and the path of DNS subdomains.
pub fn validate_signer_name(path: &Path, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let Some((domain, rest)) = name.split_once('/').filter(|(_, r)| !r.contains('/')) else {
        return vec![FieldError::invalid(
            path,
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut errs = Vec::new();
    if domain.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(FieldError::too_long(
            path,
            Some(DNS1123_SUBDOMAIN_MAX_LENGTH),
        ));
    }
    // Only the first bad label is reported: the others would read the same.
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some((label, msgs)) = first_failing(&labels, is_dns1123_label) {
        for msg in msgs {
            let detail = format!("validating label {label:?}: {msg}");
            errs.push(FieldError::invalid(path, domain, detail));
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(
            path,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    let segments: Vec<&str> = rest.split('.').collect();
    if let Some((label, msgs)) = first_failing(&segments, is_dns1123_subdomain) {
        for msg in msgs {
            let detail = format!("validating label {label:?}: {msg}");
            errs.push(FieldError::invalid(path, rest, detail));
        }
    }
    let max = DNS1123_SUBDOMAIN_MAX_LENGTH * 2 + DNS1123_LABEL_MAX_LENGTH + 2;
    if name.len() > max {
        errs.push(FieldError::too_long(path, Some(max)));
    }
    errs
}

fn first_failing<'a>(
    labels: &[&'a str],
    check: fn(&str) -> Vec<String>,
) -> Option<(&'a str, Vec<String>)> {
    labels
        .iter()
        .map(|label| (*label, check(label)))
        .find(|(_, msgs)| !msgs.is_empty())
}

/// Upstream's rules for `status.certificate`: set once, and only to PEM
/// `CERTIFICATE` blocks (a stored value that breaks them is left alone).
fn validate_certificate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let path = Path::new("status").child("certificate");
    let new_cert = decoded(new.pointer("/status/certificate")).unwrap_or_default();
    let old_cert = decoded(old.pointer("/status/certificate")).unwrap_or_default();
    if new_cert == old_cert {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if check_certificate(&old_cert).is_ok() {
        if let Err(msg) = check_certificate(&new_cert) {
            errs.push(FieldError::invalid(&path, "<certificate data>", msg));
        }
    }
    if !old_cert.is_empty() {
        errs.push(FieldError::forbidden(
            &path,
            "updates may not modify existing certificate content",
        ));
    }
    errs
}

/// Upstream's `validateCertificate`: empty, or one or more PEM
/// `CERTIFICATE` blocks of parseable certificates.
fn check_certificate(pem: &[u8]) -> Result<(), String> {
    if pem.is_empty() {
        return Ok(());
    }
    let mut blocks = 0;
    let mut rest = pem;
    while let Some((block, next)) = go_pem::decode(rest) {
        rest = next;
        if block.kind != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {:?}",
                block.kind
            ));
        }
        blocks += 1;
        if block.bytes.is_empty() {
            return Err("found CERTIFICATE PEM block containing 0 certificates".into());
        }
        let mut der = block.bytes.as_slice();
        while !der.is_empty() {
            let (rest, _) = x509_parser::parse_x509_certificate(der)
                .map_err(|_| "x509: malformed certificate".to_owned())?;
            der = rest;
        }
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    Ok(())
}

#[cfg(test)]
#[path = "certificates_tests.rs"]
mod tests;
