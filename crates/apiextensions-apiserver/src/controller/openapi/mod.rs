//! OpenAPI documents of custom resources (upstream's
//! `apiextensions-apiserver/pkg/controller/openapi`, its builder): one v3
//! document per served group version with each kind's and list kind's
//! published definitions (from the apiextensions library), the metadata
//! definitions they refer to, and the REST paths, so `kubectl explain` and
//! client-side field checks see custom kinds as built-in ones; and the
//! same kinds in the Swagger 2.0 document ([`v2`]). [`CrdSpecs`] joins
//! them to the server's documents as the CRDs change.

mod v2;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use apiserver::endpoints::openapi::{paths, Parts, SpecSource};
use tokio::sync::watch;

use crate::apis::helpers;
use crate::apiserver::customresource_handler as serving;
use crate::controller::Snapshot;

/// The custom resources of the CRDs a watch follows, for the documents.
pub struct CrdSpecs(pub watch::Receiver<Snapshot>);

impl SpecSource for CrdSpecs {
    type State = Snapshot;

    fn state(&self) -> Snapshot {
        self.0.borrow().clone()
    }

    fn unchanged(built: &Snapshot, now: &Snapshot) -> bool {
        Arc::ptr_eq(built, now)
    }

    fn add_v2(crds: &Snapshot, definitions: &mut Parts, paths: &mut Parts) {
        v2::add(crds, definitions, paths);
    }

    fn v3_documents(crds: &Snapshot) -> BTreeMap<String, Value> {
        documents(crds)
    }
}

/// The paths and schemas of one document.
type DocumentParts = (Map<String, Value>, Map<String, Value>);

/// Every served custom resource group version's document, by path
/// (`apis/<group>/<version>`).
fn documents(crds: &Snapshot) -> BTreeMap<String, Value> {
    // The definitions the published schemas refer to.
    let mut generator = SchemaSettings::openapi3().into_generator();
    generator.subschema_for::<ObjectMeta>();
    generator.subschema_for::<ListMeta>();
    let shared = generator.take_definitions(true);
    let mut docs: BTreeMap<String, DocumentParts> = BTreeMap::new();
    let served = crds
        .iter()
        .filter(|c| serving::is_served(c) && !helpers::is_terminating(c));
    for crd in served {
        let Ok(raw) = serde_json::to_value(crd) else {
            continue;
        };
        for v in crd.spec.versions.iter().filter(|v| v.served) {
            let Some([kind, list]) = ::apiextensions::published_definitions(&raw, &v.name) else {
                continue;
            };
            let info = serving::resource_info(crd, v);
            let (paths, schemas) = docs
                .entry(format!("apis/{}/{}", info.group, info.version))
                .or_default();
            paths::add_v3(paths, &info, &kind.name, &list.name);
            schemas.insert(kind.name, kind.schema);
            schemas.insert(list.name, list.schema);
        }
    }
    docs.into_iter()
        .map(|(path, (paths, mut schemas))| {
            schemas.extend(shared.clone());
            let doc = json!({
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
                "paths": paths,
                "components": {"schemas": schemas},
            });
            (path, doc)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_versions_get_documents_with_their_kinds() {
        let crd = serde_json::from_value(json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                        {"type": "object", "properties": {"spec": {"type": "object", "description": "the spec"}}}}},
                    {"name": "v2", "served": false, "storage": false},
                ]},
            "status": {"conditions": [{"type": "Established", "status": "True"}]},
        }))
        .expect("valid CRD");
        let docs = documents(&Arc::new(vec![crd]));
        assert_eq!(docs.keys().collect::<Vec<_>>(), vec!["apis/example.com/v1"]);
        let schemas = &docs["apis/example.com/v1"]["components"]["schemas"];
        let widget = &schemas["com.example.v1.Widget"];
        assert_eq!(widget["properties"]["spec"]["description"], "the spec");
        assert_eq!(
            widget["x-kubernetes-group-version-kind"][0]["kind"],
            "Widget"
        );
        let meta = widget["properties"]["metadata"]["$ref"]
            .as_str()
            .unwrap_or_default();
        let meta_name = meta.trim_start_matches("#/components/schemas/");
        assert!(schemas.get(meta_name).is_some(), "{meta}");
        assert!(schemas.get("com.example.v1.WidgetList").is_some());
        let paths = &docs["apis/example.com/v1"]["paths"];
        assert!(paths
            .get("/apis/example.com/v1/namespaces/{namespace}/widgets/{name}")
            .is_some());
    }
}
