//! The types MutatingAdmissionPolicy mutates custom resources with (the
//! OpenAPI upstream's apiextensions-apiserver publishes for the type
//! converter): a custom resource version's schema, read from its CRD and
//! kept per CRD resourceVersion.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use apiextensions::CompiledSchema;
use apiserver::admission::initializer::{text, Stores};
use apiserver::admission::plugin::policy::mutating::{CustomTypes, Types};
use apiserver::admission::Attributes;
use async_trait::async_trait;
use serde_json::Value;
use structured_merge::schema::Schema;

/// A custom resource version's schema, compiled once.
struct Compiled {
    compiled: Arc<CompiledSchema>,
    structured: Arc<(Schema, String)>,
}

impl Compiled {
    fn types(&self) -> Types {
        let compiled = self.compiled.clone();
        let defaults = Arc::new(move |object: &mut Value| compiled.apply_defaults(object));
        Types::custom_resource(self.structured.clone(), defaults)
    }
}

/// Custom resources' types by CRD name, with the CRD resourceVersion they
/// were built from.
#[derive(Default)]
pub struct CrdTypes {
    crds: Mutex<HashMap<String, (String, Arc<Compiled>)>>,
}

#[async_trait]
impl CustomTypes for CrdTypes {
    /// Custom resources whose CRD cannot be read or has no usable schema
    /// are untyped.
    async fn types(&self, stores: &Stores, a: &Attributes) -> Option<Types> {
        let (group, version, kind) = (&a.kind.group, &a.kind.version, &a.kind.kind);
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
            return None;
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
                let types = Arc::new(build(&crd, group, version, kind)?);
                if let Ok(mut cache) = self.crds.lock() {
                    cache.insert(name, (revision.to_owned(), types.clone()));
                }
                types
            }
        };
        Some(types.types())
    }
}

/// The types of one version of a CRD, from its `openAPIV3Schema`.
fn build(crd: &Value, group: &str, version: &str, kind: &str) -> Option<Compiled> {
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array)?;
    let served = versions
        .iter()
        .find(|v| text(v, "/name") == Some(version))?;
    let schema = served.pointer("/schema/openAPIV3Schema")?;
    let compiled = CompiledSchema::new(schema).ok()?;
    let structured = compiled.structured(group, version, kind);
    Some(Compiled {
        compiled: Arc::new(compiled),
        structured: Arc::new(structured),
    })
}
