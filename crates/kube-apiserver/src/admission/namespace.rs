//! The namespace plugins: NamespaceLifecycle (no content in missing or
//! terminating namespaces, the system namespaces cannot be deleted),
//! NamespaceExists and NamespaceAutoProvision.

use apimachinery::status::{ApiError, StatusCause};
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use apiserver::registry::store::WriteOptions;
use async_trait::async_trait;
use serde_json::json;

use apiserver::admission::initializer::{text, Stores};

/// Namespaces that exist from startup and may never be deleted.
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

/// Whether the request is about content in a namespace (not the namespace
/// itself, not an access review answered in it).
fn in_namespace(a: &Attributes) -> bool {
    !a.namespace.is_empty()
        && !a.is("", "namespaces")
        && !a.is("authorization.k8s.io", "localsubjectaccessreviews")
}

pub struct NamespaceLifecycle {
    pub stores: Stores,
}

impl Handler for NamespaceLifecycle {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Delete)
    }
}

/// A mutating plugin upstream, so it answers before ServiceAccount and the
/// other mutating plugins look anything up in the namespace. Only creates
/// are checked: updates and deletes of content in a missing namespace find
/// no object anyway.
#[async_trait]
impl MutationInterface for NamespaceLifecycle {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if a.operation == Operation::Delete
            && a.is("", "namespaces")
            && a.subresource.is_empty()
            && IMMORTAL.contains(&a.name.as_str())
        {
            return Err(a.forbidden("this namespace may not be deleted"));
        }
        if a.operation != Operation::Create || !in_namespace(a) {
            return Ok(());
        }
        let Some(ns) = self
            .stores
            .get("", "namespaces", None, &a.namespace)
            .await?
        else {
            return Err(ApiError::not_found("", "namespaces", &a.namespace));
        };
        if text(&ns, "/status/phase") == Some("Terminating") {
            let mut err = a.forbidden(format!(
                "unable to create new content in namespace {} because it is being terminated",
                a.namespace
            ));
            if let Some(details) = err.details.as_mut() {
                details.causes.push(StatusCause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {} is being terminated", a.namespace),
                    field: "metadata.namespace".into(),
                });
            }
            return Err(err);
        }
        Ok(())
    }
}

/// NamespaceExists: refuses content in namespaces that do not exist.
pub struct NamespaceExists {
    pub stores: Stores,
}

impl Handler for NamespaceExists {
    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }
}

#[async_trait]
impl ValidationInterface for NamespaceExists {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !in_namespace(a) {
            return Ok(());
        }
        match self
            .stores
            .get("", "namespaces", None, &a.namespace)
            .await?
        {
            Some(_) => Ok(()),
            None => Err(ApiError::not_found("", "namespaces", &a.namespace)),
        }
    }
}

/// NamespaceAutoProvision: creating content in a missing namespace creates
/// the namespace first.
pub struct NamespaceAutoProvision {
    pub stores: Stores,
}

impl Handler for NamespaceAutoProvision {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

#[async_trait]
impl MutationInterface for NamespaceAutoProvision {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !in_namespace(a) || a.dry_run {
            return Ok(());
        }
        if self
            .stores
            .get("", "namespaces", None, &a.namespace)
            .await?
            .is_some()
        {
            return Ok(());
        }
        let Some(store) = self.stores.store("", "namespaces") else {
            return Ok(());
        };
        let mut ns = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": a.namespace},
        });
        store.strategies.scheme.apply_defaults(&mut ns);
        match store.create(ns, &WriteOptions::default()).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }
}
