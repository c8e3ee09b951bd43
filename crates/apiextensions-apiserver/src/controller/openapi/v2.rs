//! Custom resources in the Swagger 2.0 document (upstream's
//! `apiextensions-apiserver/pkg/controller/openapi/v2`): for every served version
//! of an established, not terminating CRD, the kind's and list kind's
//! definitions the apiextensions library publishes for OpenAPI v3, turned
//! into v2 (references under `#/definitions/`, no `anyOf`/`nullable`…),
//! and the resource's paths.

use serde_json::{Map, Value};

use apiserver::endpoints::openapi::v3::{strip_v3, V3_PREFIX};
use apiserver::endpoints::openapi::{paths, roots, PREFIX};

use crate::apiserver::customresource_handler as serving;
use crate::controller::Snapshot;

/// Adds the custom resources of `crds` to `definitions` and `paths`
/// (built-in definitions keep their place).
pub(super) fn add(
    crds: &Snapshot,
    definitions: &mut Map<String, Value>,
    paths: &mut Map<String, Value>,
) {
    for crd in crds.iter().filter(|c| serving::is_served(c)) {
        let Ok(raw) = serde_json::to_value(crd) else {
            continue;
        };
        for v in crd.spec.versions.iter().filter(|v| v.served) {
            let info = serving::resource_info(crd, v);
            // A terminating CRD takes no new objects and is not published.
            if !info.verbs.iter().any(|verb| verb == "create") {
                continue;
            }
            let Some([kind, list]) = ::apiextensions::published_definitions(&raw, &v.name) else {
                continue;
            };
            if definitions.contains_key(&kind.name) {
                continue;
            }
            paths::add(
                paths,
                &info,
                &kind.name,
                &list.name,
                false,
                paths::no_subresources,
            );
            roots::add_group_version(paths, &info.group, &info.version);
            roots::add_group(paths, &info.group);
            for def in [kind, list] {
                let mut schema = def.schema;
                rewrite_refs(&mut schema);
                strip_v3(&mut schema);
                definitions.insert(def.name, schema);
            }
        }
    }
}

/// Points the v3 references (`#/components/schemas/…`) at the v2
/// definitions.
fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                match child {
                    Value::String(s) if key == "$ref" => {
                        if let Some(name) = s.strip_prefix(V3_PREFIX) {
                            *s = format!("{PREFIX}{name}");
                        }
                    }
                    _ => rewrite_refs(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn widget_crd(
    ) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition
    {
        serde_json::from_value(json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "port": {"x-kubernetes-int-or-string": true},
                        "tags": {"type": "array", "items": {"type": "string"}, "nullable": true},
                    }}}}}}]},
            "status": {"conditions": [
                {"type": "NamesAccepted", "status": "True"},
                {"type": "Established", "status": "True"}],
                "acceptedNames": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"}},
        }))
        .unwrap()
    }

    #[test]
    fn served_crds_add_their_kinds_and_paths() {
        let (mut definitions, mut paths) = (Map::new(), Map::new());
        add(&Arc::default(), &mut definitions, &mut paths);
        assert!(definitions.is_empty() && paths.is_empty());
        add(&Arc::new(vec![widget_crd()]), &mut definitions, &mut paths);
        let widget = &definitions["com.example.v1.Widget"];
        assert_eq!(
            widget["x-kubernetes-group-version-kind"][0]["kind"],
            "Widget"
        );
        assert_eq!(
            widget["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let props = &widget["properties"]["spec"]["properties"];
        assert!(
            props["port"].get("anyOf").is_none() && props["port"].get("type").is_none(),
            "{props}"
        );
        assert!(props["tags"].get("type").is_none(), "{props}");
        assert!(definitions["com.example.v1.WidgetList"].is_object());
        let patch = &paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
        assert_eq!(patch["operationId"], "patchExampleComV1NamespacedWidget");
        assert!(paths.contains_key("/apis/example.com/"), "{paths:?}");
    }
}
