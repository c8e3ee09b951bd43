//! Validation of ClusterTrustBundles (upstream's `ValidateClusterTrustBundle`
//! and `ValidateClusterTrustBundleUpdate` in
//! pkg/apis/certificates/validation, and `ValidateClusterTrustBundleName`
//! in pkg/apis/core/validation): a name that carries the signer name, a
//! well-formed signer name, and a bundle of distinct X.509 CA certificates
//! (parsed only when it changes, as upstream does).
//!
//! The name rule depends on the object, so the strategy's name check lets
//! every name through and [`validate_cluster_trust_bundle`] reports it,
//! after the other metadata errors (upstream reports it first).

use std::collections::HashMap;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::name_is_dns_subdomain;
use serde_json::Value;
use x509_parser::prelude::FromDer as _;

use super::certificates::validate_signer_name;
use super::go_pem;
use super::text;

/// Upstream's `MaxTrustBundleSize`.
const MAX_TRUST_BUNDLE_SIZE: usize = 1024 * 1024;
const OMITTED: &str = "<value omitted>";

fn spec(bundle: &Value) -> &Value {
    bundle.get("spec").unwrap_or(&Value::Null)
}

/// The strategy's name check: every name passes here (see the module
/// documentation).
pub fn any_name(_: &str, _: bool) -> Vec<String> {
    Vec::new()
}

/// What holds for every ClusterTrustBundle written: its names and signer
/// name.
pub fn validate_cluster_trust_bundle(bundle: &Value) -> Vec<FieldError> {
    let signer = text(spec(bundle), "signerName");
    let meta = Path::new("metadata");
    let mut errs = Vec::new();
    for (key, prefix) in [("generateName", true), ("name", false)] {
        let name = bundle
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !name.is_empty() {
            for msg in bundle_name(signer, name, prefix) {
                errs.push(FieldError::invalid(&meta.child(key), name, msg));
            }
        }
    }
    if !signer.is_empty() {
        let path = Path::new("spec").child("signerName");
        errs.extend(validate_signer_name(&path, signer));
    }
    errs
}

/// A new bundle's certificates.
pub fn validate_cluster_trust_bundle_create(bundle: &Value) -> Vec<FieldError> {
    trust_bundle(text(spec(bundle), "trustBundle"))
}

/// An update: the certificates when they change, the signer name fixed.
pub fn validate_cluster_trust_bundle_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let bundle = text(spec(new), "trustBundle");
    let mut errs = Vec::new();
    if bundle != text(spec(old), "trustBundle") {
        errs = trust_bundle(bundle);
    }
    errs.extend(super::update_classes::validate_cluster_trust_bundle_update(
        new, old,
    ));
    errs
}

/// Upstream's `ValidateClusterTrustBundleName`.
fn bundle_name(signer: &str, name: &str, prefix: bool) -> Vec<String> {
    if signer.is_empty() {
        if name.contains(':') {
            return vec![
                "ClusterTrustBundle without signer name must not have \":\" in its name".into(),
            ];
        }
        return name_is_dns_subdomain(name, prefix);
    }
    let required = format!("{}:", signer.replace('/', ":"));
    match name.strip_prefix(&required) {
        Some(rest) => name_is_dns_subdomain(rest, prefix),
        None => vec![format!(
            "ClusterTrustBundle for signerName {signer} must be named with prefix {required}"
        )],
    }
}

/// Upstream's `validateTrustBundle`: only CERTIFICATE blocks without
/// headers, each a CA certificate, at least one, none twice.
fn trust_bundle(bundle: &str) -> Vec<FieldError> {
    let path = Path::new("spec").child("trustBundle");
    if bundle.len() > MAX_TRUST_BUNDLE_SIZE {
        return vec![FieldError::too_long(&path, Some(MAX_TRUST_BUNDLE_SIZE))];
    }
    let mut errs = Vec::new();
    let mut seen: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
    let mut rest = bundle.as_bytes();
    let mut i = 0;
    while let Some((block, next)) = go_pem::decode(rest) {
        rest = next;
        if let Some(problem) = block_problem(&block) {
            errs.push(FieldError::invalid(
                &path,
                OMITTED,
                format!("entry {i} {problem}"),
            ));
        } else {
            seen.entry(block.bytes).or_default().push(i);
        }
        i += 1;
    }
    if !errs.is_empty() {
        return errs;
    }
    if seen.is_empty() {
        let msg = "at least one trust anchor must be provided";
        errs.push(FieldError::invalid(&path, OMITTED, msg));
    }
    // Upstream walks a Go map here; the first occurrences' order is used.
    let mut groups: Vec<&Vec<usize>> = seen.values().filter(|v| v.len() > 1).collect();
    groups.sort_by_key(|v| v[0]);
    for indices in groups {
        let shown: Vec<String> = indices.iter().map(ToString::to_string).collect();
        let msg = format!("duplicate trust anchor (indices [{}])", shown.join(" "));
        errs.push(FieldError::invalid(&path, OMITTED, msg));
    }
    errs
}

/// Why a block is not a trust anchor, in upstream's words.
fn block_problem(block: &go_pem::Block) -> Option<String> {
    if block.kind != "CERTIFICATE" {
        return Some(format!("has bad block type: {}", block.kind));
    }
    if block.has_headers {
        return Some("has PEM block headers".into());
    }
    let cert = match x509_parser::certificate::X509Certificate::from_der(&block.bytes) {
        Ok((&[], cert)) => cert,
        _ => return Some("does not parse as X.509".into()),
    };
    if !cert.is_ca() {
        return Some("does not have the CA bit set".into());
    }
    if !matches!(cert.basic_constraints(), Ok(Some(_))) {
        return Some("has invalid basic constraints".into());
    }
    None
}

#[cfg(test)]
#[path = "cluster_trust_bundles_tests.rs"]
mod tests;
