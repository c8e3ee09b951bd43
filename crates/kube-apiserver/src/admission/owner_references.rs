//! OwnerReferencesPermissionEnforcement (upstream's `gc` admission): only a
//! user who may delete an object may change its owner references, and only
//! one who may update an owner's `finalizers` subresource may make a
//! reference to it block the owner's deletion.

use std::collections::HashMap;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use apiserver::authorization::authorizer::{Attributes as AuthzAttributes, Decision};
use apiserver::filters::authorization::Authorization;
use async_trait::async_trait;
use serde_json::Value;

use apiserver::admission::initializer::Stores;

pub struct OwnerReferencesPermissionEnforcement {
    pub authorization: Arc<Authorization>,
    pub stores: Stores,
}

impl Handler for OwnerReferencesPermissionEnforcement {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

fn owner_references(obj: Option<&Value>) -> &[Value] {
    obj.and_then(|o| o.pointer("/metadata/ownerReferences"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn blocks(reference: &Value) -> bool {
    reference.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
}

fn field<'a>(reference: &'a Value, name: &str) -> &'a str {
    reference
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// References that block deletion now and did not before (new ones, or
/// existing ones, matched by uid, that did not block).
fn newly_blocking<'a>(new: &'a [Value], old: Option<&[Value]>) -> Vec<&'a Value> {
    let old: Option<HashMap<&str, &Value>> =
        old.map(|refs| refs.iter().map(|r| (field(r, "uid"), r)).collect());
    new.iter()
        .filter(|r| blocks(r))
        .filter(|r| match &old {
            None => true,
            Some(old) => old.get(field(r, "uid")).is_none_or(|o| !blocks(o)),
        })
        .collect()
}

/// `group/version` into its parts, as upstream parses an apiVersion.
fn parse_group_version(api_version: &str) -> Result<(&str, &str), String> {
    match api_version.split('/').collect::<Vec<_>>()[..] {
        [version] if !version.is_empty() => Ok(("", version)),
        [group, version] if !version.is_empty() => Ok((group, version)),
        _ => Err(format!("unexpected GroupVersion string: {api_version}")),
    }
}

/// `reason, err` as upstream prints an authorizer's refusal (no error).
fn refusal_detail(decision: &Decision) -> String {
    format!("{}, <nil>", decision.reason())
}

impl OwnerReferencesPermissionEnforcement {
    async fn decide(&self, attrs: &AuthzAttributes<'_>) -> Decision {
        self.authorization.decide(attrs).await
    }

    /// Whether the user may update the owner's finalizers, for every
    /// resource its kind maps to.
    async fn check_owner(&self, a: &Attributes, owner: &Value) -> Result<(), ApiError> {
        let (api_version, kind) = (field(owner, "apiVersion"), field(owner, "kind"));
        let unmapped = |err: String| {
            a.forbidden(format!("cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}: {err}"))
        };
        let (group, version) = parse_group_version(api_version).map_err(unmapped)?;
        let mappings: Vec<_> = self
            .stores
            .resources_of_kind(group, kind)
            .filter(|info| info.version == version)
            .collect();
        if mappings.is_empty() {
            return Err(unmapped(format!(
                "no matches for kind {kind:?} in version {api_version:?}"
            )));
        }
        for info in mappings {
            let attrs = AuthzAttributes {
                user: a.user(),
                verb: "update",
                is_resource_request: true,
                // A namespaced owner is in the dependent's namespace.
                namespace: if info.namespaced { &a.namespace } else { "" },
                api_group: &info.group,
                api_version: &info.version,
                resource: &info.resource,
                subresource: "finalizers",
                name: field(owner, "name"),
                path: "",
                field_selector: "",
                label_selector: "",
            };
            let decision = self.decide(&attrs).await;
            if !matches!(decision, Decision::Allow(_)) {
                return Err(a.forbidden(format!(
                    "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: {}",
                    refusal_detail(&decision)
                )));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for OwnerReferencesPermissionEnforcement {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        // Kubelets write pod status with the references they found.
        if a.is("", "pods") && a.subresource == "status" {
            return Ok(());
        }
        let new = owner_references(a.object.as_ref());
        let old = a.old_object.as_deref().map(|o| owner_references(Some(o)));
        let changing = match old {
            None => !new.is_empty(),
            Some(old) => old != new,
        };
        if !changing {
            return Ok(());
        }
        // Whoever creates an object may say who owns it.
        if a.operation != Operation::Create {
            let attrs = AuthzAttributes {
                user: a.user(),
                verb: "delete",
                is_resource_request: true,
                namespace: &a.namespace,
                api_group: &a.resource.group,
                api_version: &a.resource.version,
                resource: &a.resource.resource,
                subresource: &a.subresource,
                name: &a.name,
                path: "",
                field_selector: "",
                label_selector: "",
            };
            let decision = self.decide(&attrs).await;
            if !matches!(decision, Decision::Allow(_)) {
                return Err(a.forbidden(format!(
                    "cannot set an ownerRef on a resource you can't delete: {}",
                    refusal_detail(&decision)
                )));
            }
        }
        for owner in newly_blocking(new, old) {
            self.check_owner(a, owner).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::admission::testing::{rbac, refusal, stores, user, Write};

    fn config_map(owners: Value) -> Value {
        json!({"metadata": {"name": "cm", "namespace": "ns", "ownerReferences": owners}})
    }

    fn owner(block: bool) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1",
            "blockOwnerDeletion": block})
    }

    async fn plugin(rules: Value) -> OwnerReferencesPermissionEnforcement {
        OwnerReferencesPermissionEnforcement {
            authorization: rbac("alice", rules),
            stores: stores(vec![]).await,
        }
    }

    fn write(op: Operation, new: Value, old: Option<Value>) -> Attributes {
        let w = Write::new("", "configmaps", op).object(new).name("cm");
        match old {
            Some(old) => w.old(old),
            None => w,
        }
        .by(user("alice", &[]))
    }

    #[tokio::test]
    async fn blocking_an_owners_deletion_needs_its_finalizers() {
        let none = plugin(json!([])).await;
        let create = write(Operation::Create, config_map(json!([owner(true)])), None);
        assert_eq!(
            refusal(none.validate(&create).await),
            "configmaps \"cm\" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>"
        );
        let create = write(Operation::Create, config_map(json!([owner(false)])), None);
        assert_eq!(refusal(none.validate(&create).await), "");
        let finalizers = plugin(
            json!([{"apiGroups": ["apps"], "resources": ["deployments/finalizers"],
            "verbs": ["update"]}]),
        )
        .await;
        let create = write(Operation::Create, config_map(json!([owner(true)])), None);
        assert_eq!(refusal(finalizers.validate(&create).await), "");
        let mut unknown = owner(true);
        unknown["kind"] = json!("Widget");
        let create = write(Operation::Create, config_map(json!([unknown])), None);
        assert_eq!(
            refusal(finalizers.validate(&create).await),
            "configmaps \"cm\" is forbidden: cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion apps/v1 Kind Widget: no matches for kind \"Widget\" in version \"apps/v1\""
        );
    }

    #[tokio::test]
    async fn changing_references_needs_delete_on_the_object() {
        let deleter = plugin(json!([{"apiGroups": [""], "resources": ["configmaps"],
            "verbs": ["delete"]}]))
        .await;
        let none = plugin(json!([])).await;
        let update = || {
            write(
                Operation::Update,
                config_map(json!([owner(false)])),
                Some(config_map(json!([]))),
            )
        };
        assert_eq!(refusal(deleter.validate(&update()).await), "");
        assert_eq!(
            refusal(none.validate(&update()).await),
            "configmaps \"cm\" is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>"
        );
        // Unchanged references need nothing; a reference that already
        // blocked needs no finalizers permission.
        let same = write(
            Operation::Update,
            config_map(json!([owner(true)])),
            Some(config_map(json!([owner(true)]))),
        );
        assert_eq!(refusal(none.validate(&same).await), "");
        let unblocking = write(
            Operation::Update,
            config_map(
                json!([owner(true), {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u2"}]),
            ),
            Some(config_map(json!([owner(true)]))),
        );
        assert_eq!(refusal(deleter.validate(&unblocking).await), "");
    }
}
