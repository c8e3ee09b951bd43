//! OpenAPI v3 documents of custom resources (upstream's CRD OpenAPI
//! builder): one document per served group version, with each kind's
//! schema from its CRD version (plus apiVersion, kind and metadata), its
//! list kind and its REST paths, so `kubectl explain` and client-side field
//! checks see custom kinds as they see built-in ones.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

use super::conditions;
use super::controller::Snapshot;
use super::serving;
use crate::controlplane::openapi::add_paths;

const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// `example.com` → `com.example`, as upstream names CRD definitions.
fn reversed(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

fn with_type_fields(mut schema: Value, metadata_ref: &str) -> Value {
    if !schema.is_object() {
        schema = json!({});
    }
    let Some(map) = schema.as_object_mut() else {
        return schema;
    };
    map.entry("type").or_insert(json!("object"));
    let props = map.entry("properties").or_insert(json!({}));
    if let Some(props) = props.as_object_mut() {
        props.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": API_VERSION}),
        );
        props.insert(
            "kind".into(),
            json!({"type": "string", "description": KIND}),
        );
        props.insert(
            "metadata".into(),
            json!({"description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                "allOf": [{"$ref": metadata_ref}]}),
        );
    }
    schema
}

/// The paths and schemas of one document.
type DocumentParts = (Map<String, Value>, Map<String, Value>);

/// Every served custom resource group version's document, by path
/// (`apis/<group>/<version>`).
pub fn documents(crds: &Snapshot) -> BTreeMap<String, Value> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let object_meta = generator.subschema_for::<ObjectMeta>();
    let list_meta = generator.subschema_for::<ListMeta>();
    let meta_ref = |s: &schemars::Schema| {
        s.get("$ref")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (object_meta, list_meta) = (meta_ref(&object_meta), meta_ref(&list_meta));
    let shared = generator.take_definitions(true);
    let mut docs: BTreeMap<String, DocumentParts> = BTreeMap::new();
    for crd in crds
        .iter()
        .filter(|c| serving::is_served(c) && !conditions::is_terminating(c))
    {
        for v in crd.spec.versions.iter().filter(|v| v.served) {
            let info = serving::resource_info(crd, v);
            let schema = v
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| serde_json::to_value(s).ok())
                .unwrap_or_else(
                    || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                );
            let name = format!("{}.{}.{}", reversed(&info.group), info.version, info.kind);
            let list_name = format!(
                "{}.{}.{}",
                reversed(&info.group),
                info.version,
                info.list_kind
            );
            let gvk =
                |kind: &str| json!([{"group": info.group, "version": info.version, "kind": kind}]);
            let mut kind_schema = with_type_fields(schema, &object_meta);
            kind_schema["x-kubernetes-group-version-kind"] = gvk(&info.kind);
            let list_schema = json!({
                "type": "object", "required": ["items"],
                "description": format!("{} is a list of {}", info.list_kind, info.kind),
                "properties": {
                    "apiVersion": {"type": "string", "description": API_VERSION},
                    "items": {"type": "array", "items": {"$ref": format!("#/components/schemas/{name}")}},
                    "kind": {"type": "string", "description": KIND},
                    "metadata": {"allOf": [{"$ref": list_meta}]},
                },
                "x-kubernetes-group-version-kind": gvk(&info.list_kind),
            });
            let (paths, schemas) = docs
                .entry(format!("apis/{}/{}", info.group, info.version))
                .or_default();
            add_paths(paths, &info, &format!("#/components/schemas/{name}"));
            schemas.insert(name, kind_schema);
            schemas.insert(list_name, list_schema);
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
    use std::sync::Arc;

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
        let meta = widget["properties"]["metadata"]["allOf"][0]["$ref"]
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
