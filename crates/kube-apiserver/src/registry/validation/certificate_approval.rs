//! Approval and denial conditions of a CertificateSigningRequest
//! (upstream's `ValidateCertificateSigningRequestApprovalUpdate` in
//! `pkg/apis/certificates/validation`): written through the `approval`
//! subresource and checked again on every update of the request.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use serde_json::Value;

const APPROVED: &str = "Approved";
const DENIED: &str = "Denied";
const FAILED: &str = "Failed";

fn conditions(csr: &Value) -> &[Value] {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn field<'a>(condition: &'a Value, name: &str) -> &'a str {
    condition
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn count(csr: &Value, kind: &str) -> usize {
    conditions(csr)
        .iter()
        .filter(|c| field(c, "type") == kind)
        .count()
}

fn has_duplicate_types(csr: &Value) -> bool {
    let mut seen = HashSet::new();
    conditions(csr)
        .iter()
        .any(|c| !seen.insert(field(c, "type")))
}

/// The conditions of an approval write. Stored requests that already break
/// a rule (both approved and denied, duplicate or empty types) may keep
/// doing so, as upstream tolerates existing data.
pub fn validate_approval(new: &Value, old: &Value) -> Vec<FieldError> {
    let path = Path::new("status").child("conditions");
    let mut errors = Vec::new();
    let both_allowed = count(old, APPROVED) > 0 && count(old, DENIED) > 0;
    let duplicates_allowed = has_duplicate_types(old);
    let empty_allowed = conditions(old).iter().any(|c| field(c, "type").is_empty());
    let (mut approved, mut denied) = (false, false);
    let mut seen = HashSet::new();
    for (i, c) in conditions(new).iter().enumerate() {
        let (kind, status) = (field(c, "type"), field(c, "status"));
        let at = path.index(i);
        if kind.is_empty() && !empty_allowed {
            errors.push(FieldError::required(&at.child("type"), ""));
        }
        let allowed: &[&str] = if [APPROVED, DENIED, FAILED].contains(&kind) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            errors.push(FieldError::required(&at.child("status"), ""));
        } else if !allowed.contains(&status) {
            errors.push(FieldError::not_supported(
                &at.child("status"),
                status,
                allowed,
            ));
        }
        if !both_allowed {
            approved |= kind == APPROVED;
            denied |= kind == DENIED;
            if (kind == APPROVED && denied) || (kind == DENIED && approved) {
                errors.push(FieldError::invalid(
                    &at.child("type"),
                    kind,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !duplicates_allowed && !seen.insert(kind) {
            errors.push(FieldError::duplicate(&at.child("type"), kind));
        }
    }
    for kind in [APPROVED, DENIED, FAILED] {
        if count(new, kind) < count(old, kind) {
            errors.push(FieldError::forbidden(
                &path,
                format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn csr(conditions: Value) -> Value {
        json!({"metadata": {"name": "req"}, "status": {"conditions": conditions}})
    }

    fn messages(new: Value, old: Value) -> Vec<String> {
        validate_approval(&csr(new), &csr(old))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn conditions_follow_upstreams_rules() {
        assert!(messages(json!([{"type": "Approved", "status": "True"}]), json!([])).is_empty());
        assert_eq!(
            messages(
                json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]),
                json!([])
            ),
            ["status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"]
        );
        assert_eq!(
            messages(json!([{"type": "Approved", "status": "False"}]), json!([])),
            ["status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""]
        );
        assert_eq!(
            messages(json!([]), json!([{"type": "Denied", "status": "True"}])),
            ["status.conditions: Forbidden: updates may not remove a condition of type \"Denied\""]
        );
        assert_eq!(
            messages(
                json!([{"type": "Custom", "status": "True"}, {"type": "Custom", "status": "False"}]),
                json!([])
            ),
            ["status.conditions[1].type: Duplicate value: \"Custom\""]
        );
    }
}
