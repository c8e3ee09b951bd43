//! Object lookups for service-account and bootstrap token authentication
//! and TokenRequest (upstream's `ServiceAccountTokenGetter` of
//! `pkg/serviceaccount`, served from informers by
//! `pkg/controller/serviceaccount/tokengetter.go`): service accounts,
//! secrets, pods and nodes, read from the server's stores once bound.

use std::sync::{Arc, OnceLock};

use apimachinery::status::ApiError;
use apiserver::registry::store::Store;
use serde_json::Value;
use storage::{GetOptions, ReadVersion};

/// The kinds of object authentication looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ServiceAccount,
    Secret,
    Pod,
    Node,
}

/// The stores lookups read, bound once the server's stores exist.
pub struct ObjectStores {
    pub service_accounts: Arc<Store>,
    pub secrets: Arc<Store>,
    pub pods: Arc<Store>,
    pub nodes: Arc<Store>,
}

/// Object lookups for authenticators and TokenRequest; until the stores
/// are bound every lookup fails.
#[derive(Default)]
pub struct Objects {
    stores: OnceLock<ObjectStores>,
}

impl Objects {
    /// Binds the stores; only the first binding counts.
    pub fn bind(&self, stores: ObjectStores) {
        // A second binding would be the same stores: ignore it.
        let _ = self.stores.set(stores);
    }

    /// The store of `kind`, once bound (for the writes authentication
    /// makes, such as a legacy token's last-used label).
    pub fn store(&self, kind: Kind) -> Option<&Arc<Store>> {
        let stores = self.stores.get()?;
        Some(match kind {
            Kind::ServiceAccount => &stores.service_accounts,
            Kind::Secret => &stores.secrets,
            Kind::Pod => &stores.pods,
            Kind::Node => &stores.nodes,
        })
    }

    /// The object, or a NotFound error naming it like upstream.
    pub async fn get(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        let store = self
            .store(kind)
            .ok_or_else(|| ApiError::internal_error("object stores are not ready"))?;
        let namespace = (kind != Kind::Node).then_some(namespace);
        // Like upstream's informer-backed getters, a cached state will do.
        let opts = GetOptions {
            version: ReadVersion::Any,
            ..GetOptions::default()
        };
        store.get(namespace, name, opts).await
    }
}

/// A string field of an object ("" when absent).
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}
