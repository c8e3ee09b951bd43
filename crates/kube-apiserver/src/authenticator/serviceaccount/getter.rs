//! Object lookups for service-account and bootstrap token authentication
//! and TokenRequest (upstream's `ServiceAccountTokenGetter` of
//! `pkg/serviceaccount`, served from informers by
//! `pkg/controller/serviceaccount/tokengetter.go`): service accounts,
//! secrets, pods and nodes, read from the shared informers' listers with a
//! live lookup on a miss, once bound.

use std::sync::{Arc, OnceLock};

use apimachinery::status::ApiError;
use apiserver::admission::initializer::Stores;
use apiserver::registry::store::Store;
use serde_json::Value;
use storage::Object;

/// The kinds of object authentication looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ServiceAccount,
    Secret,
    Pod,
    Node,
}

impl Kind {
    /// The core v1 resource of the kind.
    fn resource(self) -> &'static str {
        match self {
            Kind::ServiceAccount => "serviceaccounts",
            Kind::Secret => "secrets",
            Kind::Pod => "pods",
            Kind::Node => "nodes",
        }
    }
}

/// Object lookups for authenticators and TokenRequest; until the stores
/// are bound every lookup fails.
#[derive(Default)]
pub struct Objects {
    stores: OnceLock<Stores>,
}

impl Objects {
    /// Binds the core v1 stores of the four kinds, read through the shared
    /// informers' listers when `stores` has them; only the first binding
    /// counts.
    pub fn bind(&self, stores: Stores) {
        // A second binding would be the same stores: ignore it.
        let _ = self.stores.set(stores);
    }

    /// The store of `kind`, once bound (for the writes authentication
    /// makes, such as a legacy token's last-used label).
    pub fn store(&self, kind: Kind) -> Option<&Arc<Store>> {
        self.stores.get()?.store("", kind.resource())
    }

    /// The object, from its informer's cache or else looked up live (as
    /// upstream's getter falls back from its listers to the client), or a
    /// NotFound error naming it like upstream.
    pub async fn get(&self, kind: Kind, namespace: &str, name: &str) -> Result<Object, ApiError> {
        let stores = self
            .stores
            .get()
            .filter(|s| s.store("", kind.resource()).is_some())
            .ok_or_else(|| ApiError::internal_error("object stores are not ready"))?;
        let namespace = (kind != Kind::Node).then_some(namespace);
        stores
            .get("", kind.resource(), namespace, name)
            .await?
            .ok_or_else(|| ApiError::not_found("", kind.resource(), name))
    }
}

/// A string field of an object ("" when absent).
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}
