//! RBAC escalation prevention (upstream's policy-based RBAC storage in
//! `pkg/registry/rbac`): a Role or ClusterRole may be written only by a user
//! who already holds its rules or may `escalate` it; a RoleBinding or
//! ClusterRoleBinding only by one who holds the referenced role's rules or
//! may `bind` it. Members of `system:masters` are exempt. Upstream checks
//! this in the RBAC registry on every write, so this validating step is
//! always last in the chain, whatever plugins are enabled.

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use apiserver::authentication::user::PRIVILEGED_GROUP;
use apiserver::authorization::authorizer::{Attributes as AuthzAttributes, Decision};
use apiserver::filters::authorization::Authorization;
use async_trait::async_trait;
use serde_json::Value;

use crate::authorization::rbac::{RbacAuthorizer, RoleReferenceError};
use crate::registry::rbac::validation::{escalation_error, owner_rules, PolicyRule};
use apiserver::admission::initializer::text;

const GROUP: &str = "rbac.authorization.k8s.io";
const AGGREGATION_MESSAGE: &str = "must have cluster-admin privileges to use the aggregationRule";

/// Metadata fields a garbage-collection update may change without the
/// write being re-checked (upstream's `IsOnlyMutatingGCFields`), plus those
/// the server itself maintains.
const GC_FIELDS: [&str; 5] = [
    "ownerReferences",
    "finalizers",
    "resourceVersion",
    "managedFields",
    "generation",
];

pub struct RbacEscalation {
    pub authorization: Arc<Authorization>,
    /// The RBAC authorizer the server started with, which resolves the
    /// role a binding refers to.
    pub rbac: Option<Arc<RbacAuthorizer>>,
}

impl Handler for RbacEscalation {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    obj.get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(PolicyRule::from_json)
        .collect()
}

fn has_aggregation_rule(obj: &Value) -> bool {
    obj.get("aggregationRule").is_some_and(|r| !r.is_null())
}

/// The object without the fields a GC-only update may change.
fn without_gc_fields(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in GC_FIELDS {
            meta.remove(field);
        }
    }
    obj
}

/// Upstream's `fullAuthority`: everything, resources and URLs.
fn full_authority() -> Vec<PolicyRule> {
    let all = || vec!["*".to_owned()];
    vec![
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

impl RbacEscalation {
    async fn allowed(&self, a: &Attributes, verb: &str, resource: &str, name: &str) -> bool {
        let attrs = AuthzAttributes {
            user: a.user(),
            verb,
            is_resource_request: true,
            namespace: &a.namespace,
            api_group: GROUP,
            resource,
            subresource: "",
            name,
            path: "",
            api_version: "",
            field_selector: "",
            label_selector: "",
        };
        matches!(self.authorization.decide(&attrs).await, Decision::Allow(_))
    }

    /// Upstream's `ConfirmNoEscalation` in the write's namespace.
    async fn confirm(&self, a: &Attributes, rules: &[PolicyRule]) -> Result<(), ApiError> {
        let held = self.authorization.rules_for(a.user(), &a.namespace).await;
        let owner = owner_rules(&held);
        match escalation_error(a.user(), &owner, &held.errors, rules) {
            Some(msg) => Err(a.forbidden(msg)),
            None => Ok(()),
        }
    }

    async fn check_role(&self, a: &Attributes, obj: &Value) -> Result<(), ApiError> {
        if self
            .allowed(a, "escalate", &a.resource.resource, &a.name)
            .await
        {
            return Ok(());
        }
        self.confirm(a, &rules_of(obj)).await?;
        let aggregated = has_aggregation_rule(obj)
            || a.old_object
                .as_deref()
                .is_some_and(|o| has_aggregation_rule(o));
        if a.resource.resource == "clusterroles" && aggregated {
            self.confirm(a, &full_authority())
                .await
                .map_err(|_| a.forbidden(AGGREGATION_MESSAGE))?;
        }
        Ok(())
    }

    async fn check_binding(&self, a: &Attributes, obj: &Value) -> Result<(), ApiError> {
        let role_resource = match text(obj, "/roleRef/kind") {
            Some("ClusterRole") => "clusterroles",
            Some("Role") => "roles",
            // Validation refuses other kinds; nothing is granted.
            _ => return Ok(()),
        };
        let role_name = text(obj, "/roleRef/name").unwrap_or_default();
        if self.allowed(a, "bind", role_resource, role_name).await {
            return Ok(());
        }
        let Some(rbac) = &self.rbac else {
            return Err(a.forbidden("no RBAC policy to resolve the role reference"));
        };
        // A missing role is the role registry's 404, as upstream reads it.
        let rules = rbac.role_reference_rules(obj).await.map_err(|e| match e {
            RoleReferenceError::NotFound(kind, name) => {
                ApiError::not_found(GROUP, &format!("{kind}s"), &name)
            }
            RoleReferenceError::Other(message) => a.forbidden(message),
        })?;
        let rules: Vec<PolicyRule> = rules.iter().map(PolicyRule::from_json).collect();
        self.confirm(a, &rules).await
    }
}

#[async_trait]
impl ValidationInterface for RbacEscalation {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if a.resource.group != GROUP || !a.subresource.is_empty() {
            return Ok(());
        }
        if a.user().groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            return Ok(());
        }
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        if let Some(old) = a.old_object.as_deref() {
            if without_gc_fields(obj) == without_gc_fields(old) {
                return Ok(());
            }
        }
        match a.resource.resource.as_str() {
            "roles" | "clusterroles" => self.check_role(a, obj).await,
            "rolebindings" | "clusterrolebindings" => self.check_binding(a, obj).await,
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gc_only_updates_compare_equal() {
        let old = json!({"metadata": {"name": "r", "resourceVersion": "1"}, "rules": []});
        let gc = json!({"metadata": {"name": "r", "resourceVersion": "2",
            "finalizers": ["x"]}, "rules": []});
        assert_eq!(without_gc_fields(&old), without_gc_fields(&gc));
        let labelled = json!({"metadata": {"name": "r", "labels": {"a": "b"}}, "rules": []});
        assert_ne!(without_gc_fields(&old), without_gc_fields(&labelled));
    }
}
