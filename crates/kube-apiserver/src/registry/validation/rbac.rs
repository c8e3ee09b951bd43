//! Validation of RBAC objects (upstream's `pkg/apis/rbac/validation`):
//! policy rules of Roles and ClusterRoles, a binding's `roleRef` and
//! subjects, and the immutability of `roleRef` on update
//! (`ValidateRoleBindingUpdate`, `ValidateClusterRoleBindingUpdate`).

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::{name_is_dns_subdomain, name_is_path_segment};
use serde_json::{json, Value};

use super::{items, text};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// `ValidateRole` (namespaced) and `ValidateClusterRole` rules.
fn validate_rules(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, rule) in items(obj, "rules").iter().enumerate() {
        validate_policy_rule(rule, namespaced, &Path::new("rules").index(i), &mut errs);
    }
    errs
}

pub fn validate_role(obj: &Value) -> Vec<FieldError> {
    validate_rules(obj, true)
}

pub fn validate_cluster_role(obj: &Value) -> Vec<FieldError> {
    validate_rules(obj, false)
}

/// Upstream's `validatePolicyRule`.
fn validate_policy_rule(rule: &Value, namespaced: bool, path: &Path, errs: &mut Vec<FieldError>) {
    let has = |key: &str| !items(rule, key).is_empty();
    if !has("verbs") {
        errs.push(FieldError::required(
            &path.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    if has("nonResourceURLs") {
        let urls = rule.get("nonResourceURLs").cloned().unwrap_or(Value::Null);
        let urls_path = path.child("nonResourceURLs");
        if namespaced {
            errs.push(FieldError::invalid(
                &urls_path,
                urls.clone(),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if has("apiGroups") || has("resources") || has("resourceNames") {
            errs.push(FieldError::invalid(
                &urls_path,
                urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if !has("apiGroups") {
        errs.push(FieldError::required(
            &path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if !has("resources") {
        errs.push(FieldError::required(
            &path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    if has("resourceNames") && items(rule, "resources").len() > 1 {
        errs.push(FieldError::required(
            &path.child("resourceNames"),
            "resource names cannot apply to multiple resources",
        ));
    }
}

/// `ValidateRoleBinding`: a Role or ClusterRole of the RBAC group.
pub fn validate_role_binding(obj: &Value) -> Vec<FieldError> {
    validate_binding(obj, true)
}

/// `ValidateClusterRoleBinding`: a ClusterRole of the RBAC group.
pub fn validate_cluster_role_binding(obj: &Value) -> Vec<FieldError> {
    validate_binding(obj, false)
}

fn validate_binding(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let role_ref = obj.get("roleRef").unwrap_or(&Value::Null);
    let path = Path::new("roleRef");
    let group = text(role_ref, "apiGroup");
    if group != RBAC_GROUP {
        errs.push(FieldError::not_supported(
            &path.child("apiGroup"),
            group,
            &[RBAC_GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = text(role_ref, "kind");
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported(&path.child("kind"), kind, kinds));
    }
    let name = text(role_ref, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        for msg in name_is_path_segment(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, msg));
        }
    }
    for (i, subject) in items(obj, "subjects").iter().enumerate() {
        validate_subject(
            subject,
            namespaced,
            &Path::new("subjects").index(i),
            &mut errs,
        );
    }
    errs
}

/// Upstream's `validateRoleBindingSubject`.
fn validate_subject(subject: &Value, namespaced: bool, path: &Path, errs: &mut Vec<FieldError>) {
    let (name, group) = (text(subject, "name"), text(subject, "apiGroup"));
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    match text(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in name_is_dns_subdomain(name, false) {
                    errs.push(FieldError::invalid(&path.child("name"), name, msg));
                }
            }
            if !group.is_empty() {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    group,
                    &[""],
                ));
            }
            if !namespaced && text(subject, "namespace").is_empty() {
                errs.push(FieldError::required(&path.child("namespace"), ""));
            }
        }
        kind @ ("User" | "Group") => {
            if name.is_empty() {
                let what = if kind == "User" { "user" } else { "group" };
                errs.push(FieldError::invalid(
                    &path.child("name"),
                    name,
                    format!("{what} name cannot be empty"),
                ));
            }
            if group != RBAC_GROUP {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    group,
                    &[RBAC_GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

/// The binding's `roleRef` as upstream's internal `rbac.RoleRef` shows in
/// an error (Go field names, JSON).
fn role_ref_value(obj: &Value) -> Value {
    let role_ref = obj.get("roleRef").unwrap_or(&Value::Null);
    json!({
        "APIGroup": text(role_ref, "apiGroup"),
        "Kind": text(role_ref, "kind"),
        "Name": text(role_ref, "name"),
    })
}

/// `roleRef` cannot change once a binding exists (both binding kinds).
pub fn validate_binding_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let new_ref = role_ref_value(new);
    if new_ref == role_ref_value(old) {
        return Vec::new();
    }
    vec![FieldError::invalid(
        &Path::new("roleRef"),
        new_ref,
        "cannot change roleRef",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn binding(kind: &str, name: &str) -> Value {
        json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": name},
            "subjects": [{"kind": "User", "apiGroup": RBAC_GROUP, "name": "alice"}]})
    }

    #[test]
    fn role_ref_cannot_change() {
        let old = binding("ClusterRole", "view");
        assert!(validate_binding_update(&binding("ClusterRole", "view"), &old).is_empty());
        let mut more_subjects = old.clone();
        more_subjects["subjects"] = json!([]);
        assert!(validate_binding_update(&more_subjects, &old).is_empty());
        assert_eq!(
            messages(&validate_binding_update(&binding("ClusterRole", "edit"), &old)),
            ["roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"]
        );
        assert_eq!(
            validate_binding_update(&binding("Role", "view"), &old).len(),
            1
        );
    }

    #[test]
    fn bindings_name_a_role_of_the_rbac_group() {
        assert!(validate_role_binding(&binding("Role", "r")).is_empty());
        assert!(validate_cluster_role_binding(&binding("ClusterRole", "system:r")).is_empty());
        let bad = json!({"roleRef": {"apiGroup": "x", "kind": "Role", "name": ""},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "r"}]});
        assert_eq!(
            messages(&validate_cluster_role_binding(&bad)),
            [
                "roleRef.apiGroup: Unsupported value: \"x\": supported values: \"rbac.authorization.k8s.io\"",
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "roleRef.name: Required value",
                "subjects[0].namespace: Required value",
                "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
            ]
        );
        // Namespaced bindings need no subject namespace.
        let sa = json!({"roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}]});
        assert!(validate_role_binding(&sa).is_empty());
    }

    #[test]
    fn policy_rules_follow_upstream() {
        let ok = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert!(validate_role(&ok).is_empty());
        let urls = json!({"rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]});
        assert!(validate_cluster_role(&urls).is_empty());
        assert_eq!(
            messages(&validate_role(&urls)),
            ["rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs"]
        );
        let empty = json!({"rules": [{"resourceNames": ["a"], "resources": ["a", "b"]}]});
        assert_eq!(
            messages(&validate_cluster_role(&empty)),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resourceNames: Required value: resource names cannot apply to multiple resources",
            ]
        );
    }
}
