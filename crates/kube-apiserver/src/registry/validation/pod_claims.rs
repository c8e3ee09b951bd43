//! Dynamic resource allocation in a pod spec (upstream's
//! `validatePodResourceClaims` and `validateResourceClaimNames`): the pod's
//! `resourceClaims` and the containers' `resources.claims` that refer to
//! them.

use std::collections::{BTreeSet, HashSet};

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::name_is_dns_subdomain;
use serde_json::{json, Value};

use super::{dns_label, invalid_all, items, set, text};

/// The non-empty names of the pod's claims, sorted as upstream lists them.
pub(super) type ClaimNames<'a> = BTreeSet<&'a str>;

/// Validates `spec.resourceClaims` and returns their names.
pub(super) fn validate_pod_claims<'a>(
    spec: &'a Value,
    path: &Path,
    errs: &mut Vec<FieldError>,
) -> ClaimNames<'a> {
    let mut seen = HashSet::new();
    for (i, claim) in items(spec, "resourceClaims").iter().enumerate() {
        let idx = path.index(i);
        let name = text(claim, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&idx.child("name"), ""));
        } else if !seen.insert(name) {
            errs.push(FieldError::duplicate(&idx.child("name"), name));
        } else {
            dns_label(&idx.child("name"), name, errs);
        }
        claim_source(claim, &idx, errs);
    }
    items(spec, "resourceClaims")
        .iter()
        .map(|c| text(c, "name"))
        .filter(|name| !name.is_empty())
        .collect()
}

/// Exactly one of the claim's two sources, each a DNS subdomain.
fn claim_source(claim: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let direct = set(claim, "resourceClaimName").and_then(Value::as_str);
    let template = set(claim, "resourceClaimTemplateName").and_then(Value::as_str);
    let detail = match (direct, template) {
        (Some(_), Some(_)) => Some(
            "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
        ),
        (None, None) => {
            Some("must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        }
        _ => None,
    };
    if let Some(detail) = detail {
        errs.push(FieldError::invalid(path, shown_claim(claim), detail));
    }
    for (key, value) in [
        ("resourceClaimName", direct),
        ("resourceClaimTemplateName", template),
    ] {
        if let Some(value) = value {
            let msgs = name_is_dns_subdomain(value, false);
            invalid_all(&path.child(key), value, msgs, errs);
        }
    }
}

/// The claim as upstream prints it: its name and whichever sources are set.
fn shown_claim(claim: &Value) -> Value {
    let mut shown = json!({"name": text(claim, "name")});
    for key in ["resourceClaimName", "resourceClaimTemplateName"] {
        if let Some(value) = set(claim, key) {
            shown[key] = value.clone();
        }
    }
    shown
}

/// A container's `resources.claims`: each names a pod claim (and
/// optionally one of its requests), without repeating a reference.
pub(super) fn validate_claim_refs(
    resources: &Value,
    claims: &ClaimNames<'_>,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let mut seen: HashSet<String> = HashSet::new();
    for (i, claim) in items(resources, "claims").iter().enumerate() {
        let idx = path.index(i);
        let name = text(claim, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&idx, ""));
            continue;
        }
        if seen.contains(name) {
            // Every request of the claim is already referenced.
            errs.push(FieldError::duplicate(&idx, name));
        } else {
            let request = text(claim, "request");
            let key = if request.is_empty() {
                name.to_owned()
            } else {
                dns_label(&idx.child("request"), request, errs);
                format!("{name}/{request}")
            };
            if seen.contains(&key) {
                errs.push(FieldError::duplicate(&idx, key.as_str()));
            } else if request.is_empty() {
                // The whole claim overlaps any of its requests named before.
                let prefix = format!("{name}/");
                for _ in seen.iter().filter(|k| k.starts_with(&prefix)) {
                    errs.push(FieldError::duplicate(&idx, name));
                }
            }
            seen.insert(key);
        }
        if !claims.contains(name) {
            let mut err = FieldError::not_found(&idx, name);
            err.detail = if claims.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_owned()
            } else {
                let names: Vec<&str> = claims.iter().copied().collect();
                format!(
                    "must be one of the names in pod.spec.resourceClaims: {}",
                    names.join(", ")
                )
            };
            errs.push(err);
        }
    }
}
