//! The schema objects are typed and defaulted with after a mutation
//! (upstream's type converter manager and defaulter): a built-in kind's
//! structured-merge tables and its store's defaults, or a custom
//! resource's version schema, read from its CRD and kept per CRD
//! resourceVersion.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use apiextensions::CompiledSchema;
use apiserver::admission::Attributes;
use apiserver::registry::store::Store;
use serde_json::Value;
use structured_merge::schema::{Schema, TypeRef};
use structured_merge::typed::Ty;

use crate::admission::lookup::{text, Stores};

/// How mutated objects get their defaults.
enum Defaults {
    Store(Arc<Store>),
    Custom(Arc<CompiledSchema>),
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

    fn custom_resource(types: &CustomTypes) -> Self {
        Types {
            root: Some(TypeRef::named(types.structured.1.as_str())),
            custom: Some(types.structured.clone()),
            defaults: Defaults::Custom(types.compiled.clone()),
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
            Defaults::Custom(schema) => schema.apply_defaults(object),
            Defaults::None => {}
        }
    }
}

/// A custom resource version's schema, compiled once.
struct CustomTypes {
    compiled: Arc<CompiledSchema>,
    structured: Arc<(Schema, String)>,
}

/// Custom resources' types by CRD name, with the CRD resourceVersion they
/// were built from.
#[derive(Default)]
pub struct TypeCache {
    crds: Mutex<HashMap<String, (String, Arc<CustomTypes>)>>,
}

impl TypeCache {
    /// The types of the request's kind; custom resources whose CRD cannot
    /// be read or has no usable schema are untyped.
    pub async fn types(&self, stores: &Stores, a: &Attributes) -> Types {
        let (group, version, kind) = (&a.kind.group, &a.kind.version, &a.kind.kind);
        // A subresource of a kind of its own (a Scale) is typed and
        // defaulted as that kind, not as the resource's.
        if group == "autoscaling" && kind == "Scale" && !a.subresource.is_empty() {
            return Types::builtin(group, version, kind, None);
        }
        if let Some(store) = stores.store(&a.resource.group, &a.resource.resource) {
            return Types::builtin(group, version, kind, Some(store));
        }
        let name = format!("{}.{}", a.resource.resource, a.resource.group);
        let crd = stores
            .get(
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                None,
                &name,
            )
            .await;
        let Ok(Some(crd)) = crd else {
            return Types::builtin(group, version, kind, None);
        };
        let revision = text(&crd, "/metadata/resourceVersion").unwrap_or_default();
        let cached = self.crds.lock().ok().and_then(|c| {
            c.get(&name)
                .filter(|(rv, _)| rv == revision)
                .map(|(_, t)| t.clone())
        });
        let types = match cached {
            Some(types) => types,
            None => {
                let Some(types) = build(&crd, group, version, kind) else {
                    return Types::builtin(group, version, kind, None);
                };
                let types = Arc::new(types);
                if let Ok(mut cache) = self.crds.lock() {
                    cache.insert(name, (revision.to_owned(), types.clone()));
                }
                types
            }
        };
        Types::custom_resource(&types)
    }
}

/// The types of one version of a CRD, from its `openAPIV3Schema`.
fn build(crd: &Value, group: &str, version: &str, kind: &str) -> Option<CustomTypes> {
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array)?;
    let served = versions
        .iter()
        .find(|v| text(v, "/name") == Some(version))?;
    let schema = served.pointer("/schema/openAPIV3Schema")?;
    let compiled = CompiledSchema::new(schema).ok()?;
    let structured = compiled.structured(group, version, kind);
    Some(CustomTypes {
        compiled: Arc::new(compiled),
        structured: Arc::new(structured),
    })
}
