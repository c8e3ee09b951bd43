//! The schema objects are typed and defaulted with after a mutation
//! (upstream's type converter manager and defaulter): a built-in kind's
//! structured-merge tables and its store's defaults, or the types the
//! server passes in for kinds no store serves (custom resources, whose
//! schemas the kube-apiserver reads from their CRDs).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use structured_merge::schema::{Schema, TypeRef};
use structured_merge::typed::Ty;

use crate::admission::initializer::Stores;
use crate::admission::Attributes;
use crate::registry::store::Store;

/// Applies a kind's defaults to an object.
pub type Defaulter = Arc<dyn Fn(&mut Value) + Send + Sync>;

/// How mutated objects get their defaults.
enum Defaults {
    Store(Arc<Store>),
    Custom(Defaulter),
    None,
}

/// The schema objects of the request's kind are typed with: a custom
/// resource's own, else the built-in one (untyped when there is none).
pub struct Types {
    custom: Option<Arc<(Schema, String)>>,
    root: Option<TypeRef>,
    defaults: Defaults,
}

impl Types {
    /// A built-in kind's types (a store's own schema when it has one).
    pub fn builtin(group: &str, version: &str, kind: &str, store: Option<&Arc<Store>>) -> Self {
        let custom = store.and_then(|s| s.strategies.scheme.type_schema());
        let root = match &custom {
            Some(types) => Some(TypeRef::named(types.1.as_str())),
            None => structured_merge::builtin::root(group, version, kind).map(TypeRef::named),
        };
        let defaults = store.map_or(Defaults::None, |s| Defaults::Store(s.clone()));
        Types {
            custom,
            root,
            defaults,
        }
    }

    /// A custom resource's types: its structured schema with the name of
    /// its root type, and its defaulter.
    pub fn custom_resource(structured: Arc<(Schema, String)>, defaults: Defaulter) -> Self {
        Types {
            root: Some(TypeRef::named(structured.1.as_str())),
            custom: Some(structured),
            defaults: Defaults::Custom(defaults),
        }
    }

    pub fn schema(&self) -> &Schema {
        match &self.custom {
            Some(types) => &types.0,
            None => structured_merge::builtin::schema(),
        }
    }

    pub fn ty(&self) -> Ty<'_> {
        match &self.root {
            Some(r) => Ty::Ref(r),
            None => Ty::Untyped,
        }
    }

    /// Applies the kind's defaults to a mutated object.
    pub fn apply_defaults(&self, object: &mut Value) {
        match &self.defaults {
            Defaults::Store(store) => store.strategies.scheme.apply_defaults(object),
            Defaults::Custom(defaults) => defaults(object),
            Defaults::None => {}
        }
    }
}

/// The types of kinds no store of the server serves, passed in by the
/// server (upstream's type converter reads them from the OpenAPI the
/// apiextensions-apiserver publishes).
#[async_trait]
pub trait CustomTypes: Send + Sync {
    /// The types of the request's kind; None when it is not known or has
    /// no usable schema (its objects are then untyped).
    async fn types(&self, stores: &Stores, a: &Attributes) -> Option<Types>;
}

/// The types of the request's kind.
pub async fn types(stores: &Stores, custom: &dyn CustomTypes, a: &Attributes) -> Types {
    let (group, version, kind) = (&a.kind.group, &a.kind.version, &a.kind.kind);
    // A subresource of a kind of its own (a Scale) is typed and
    // defaulted as that kind, not as the resource's.
    if group == "autoscaling" && kind == "Scale" && !a.subresource.is_empty() {
        return Types::builtin(group, version, kind, None);
    }
    if let Some(store) = stores.store(&a.resource.group, &a.resource.resource) {
        return Types::builtin(group, version, kind, Some(store));
    }
    custom
        .types(stores, a)
        .await
        .unwrap_or_else(|| Types::builtin(group, version, kind, None))
}
