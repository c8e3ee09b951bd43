//! The OpenAPI v3 form of the Swagger 2.0 parts, as upstream's v3
//! documents differ from its v2 one: schemas under
//! `#/components/schemas/`, references with siblings wrapped in `allOf`,
//! int-or-string and quantities as `oneOf`, body parameters as
//! `requestBody` and responses with one content entry per media type;
//! and the way back for schemas written in v3 ([`strip_v3`]).

use serde_json::{json, Map, Value};

use super::PREFIX;

pub const V3_PREFIX: &str = "#/components/schemas/";

/// Points `#/definitions/` references at `#/components/schemas/` and
/// wraps references that have siblings (a description, a default) in
/// `allOf`, everywhere below `v`.
fn rewrite(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(name) = r.strip_prefix(PREFIX) {
                    *r = format!("{V3_PREFIX}{name}");
                }
                if map.len() > 1 {
                    if let Some(r) = map.remove("$ref") {
                        map.insert("allOf".into(), json!([{ "$ref": r }]));
                    }
                }
            }
            map.values_mut().for_each(rewrite);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite),
        _ => {}
    }
}

/// A definition of the v2 document as upstream's v3 documents spell it.
pub fn schema(name: &str, def: &Value) -> Value {
    let mut def = def.clone();
    let one_of = match name {
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => Some(["integer", "string"]),
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => Some(["string", "number"]),
        _ => None,
    };
    if let (Some(types), Some(map)) = (one_of, def.as_object_mut()) {
        map.remove("type");
        let alternatives: Vec<Value> = types.iter().map(|t| json!({ "type": t })).collect();
        map.insert("oneOf".into(), Value::Array(alternatives));
    }
    rewrite(&mut def);
    def
}

/// A v2 parameter (not a body) as a v3 one: its type in a schema.
fn parameter(p: &Value) -> Value {
    let mut out = Map::new();
    let mut schema = Map::new();
    if let Some(map) = p.as_object() {
        for (key, value) in map {
            match key.as_str() {
                "type" | "uniqueItems" | "format" | "items" => {
                    schema.insert(key.clone(), value.clone());
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
    }
    out.insert("schema".into(), Value::Object(schema));
    Value::Object(out)
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A v2 operation as a v3 one.
fn operation(op: &Value) -> Value {
    let mut out = Map::new();
    for key in [
        "description",
        "operationId",
        "tags",
        "x-kubernetes-action",
        "x-kubernetes-group-version-kind",
    ] {
        if let Some(v) = op.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    let mut params = Vec::new();
    for p in op["parameters"].as_array().into_iter().flatten() {
        if p["in"] == "body" {
            let content: Map<String, Value> = strings(&op["consumes"])
                .into_iter()
                .map(|mt| (mt.to_owned(), json!({"schema": p["schema"]})))
                .collect();
            let mut body = json!({ "content": content });
            if p["required"] == true {
                body["required"] = true.into();
            }
            out.insert("requestBody".into(), body);
        } else {
            params.push(parameter(p));
        }
    }
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }
    let mut responses = Map::new();
    for (code, r) in op["responses"].as_object().into_iter().flatten() {
        let mut resp = json!({"description": r["description"]});
        if let Some(schema) = r.get("schema") {
            let content: Map<String, Value> = strings(&op["produces"])
                .into_iter()
                .map(|mt| (mt.to_owned(), json!({ "schema": schema })))
                .collect();
            resp["content"] = Value::Object(content);
        }
        responses.insert(code.clone(), resp);
    }
    out.insert("responses".into(), Value::Object(responses));
    let mut out = Value::Object(out);
    rewrite(&mut out);
    out
}

/// A v2 path item as a v3 one.
pub fn path_item(item: &Value) -> Value {
    let mut out = Map::new();
    for (key, value) in item.as_object().into_iter().flatten() {
        if key == "parameters" {
            let params: Vec<Value> = value
                .as_array()
                .into_iter()
                .flatten()
                .map(parameter)
                .collect();
            if !params.is_empty() {
                out.insert(key.clone(), Value::Array(params));
            }
        } else {
            out.insert(key.clone(), operation(value));
        }
    }
    Value::Object(out)
}

/// The names of the schemas `v` refers to, directly or not, added to
/// `found` (looked up in `schemas`).
pub fn referenced(v: &Value, schemas: &Map<String, Value>, found: &mut Map<String, Value>) {
    match v {
        Value::Object(map) => {
            for (key, child) in map {
                match (key.as_str(), child) {
                    ("$ref", Value::String(r)) => {
                        let name = r.trim_start_matches(V3_PREFIX);
                        if found.contains_key(name) {
                            continue;
                        }
                        if let Some(schema) = schemas.get(name) {
                            found.insert(name.to_owned(), schema.clone());
                            referenced(schema, schemas, found);
                        }
                    }
                    _ => referenced(child, schemas, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| referenced(i, schemas, found)),
        _ => {}
    }
}

/// One v3 document of `paths` with the schemas they reach.
pub fn document(paths: Map<String, Value>, schemas: &Map<String, Value>) -> Value {
    let mut used = Map::new();
    for item in paths.values() {
        referenced(item, schemas, &mut used);
    }
    used.sort_keys();
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0"},
        "paths": paths,
        "components": {
            "schemas": used,
            "securitySchemes": {"BearerToken": {
                "description": "Bearer Token authentication", "in": "header",
                "name": "authorization", "type": "apiKey"}},
        },
        "security": [{"BearerToken": []}],
    })
}

/// Keywords of OpenAPI v3 that v2 has no place for.
const V3_ONLY: [&str; 5] = ["oneOf", "anyOf", "allOf", "not", "nullable"];

/// Drops the v3-only keywords everywhere below `schema`; a nullable
/// schema loses its type (v2 cannot say "or null"), as upstream's
/// conversion of CRD schemas does.
pub fn strip_v3(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let nullable = map.get("nullable").and_then(Value::as_bool) == Some(true);
    for key in V3_ONLY {
        map.remove(key);
    }
    let int_or_string = map
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    let untyped_array = map.get("type").and_then(Value::as_str) == Some("array")
        && !map.get("items").is_some_and(Value::is_object);
    if nullable || int_or_string || untyped_array {
        map.remove("type");
        map.remove("items");
    }
    if let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(strip_v3);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            strip_v3(child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_with_siblings_are_wrapped_and_repointed() {
        let def = json!({"properties": {
            "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                "description": "Standard object metadata."},
            "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"},
        }});
        let v3 = schema("io.k8s.api.core.v1.Pod", &def);
        assert_eq!(
            v3["properties"]["metadata"],
            json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
                "description": "Standard object metadata."})
        );
        assert_eq!(
            v3["properties"]["spec"],
            json!({"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"})
        );
        let ios = schema(
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
            &json!({"type": "string", "format": "int-or-string"}),
        );
        assert_eq!(
            ios,
            json!({"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]})
        );
    }

    #[test]
    fn bodies_become_request_bodies_and_responses_get_content() {
        let item = json!({
            "parameters": [{"in": "query", "name": "pretty", "type": "string", "uniqueItems": true}],
            "patch": {
                "consumes": ["application/merge-patch+json", "application/apply-patch+yaml"],
                "produces": ["application/json", "application/yaml"],
                "operationId": "patchCoreV1NamespacedPod",
                "parameters": [
                    {"in": "body", "name": "body", "required": true,
                        "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
                    {"in": "query", "name": "fieldValidation", "type": "string", "uniqueItems": true},
                ],
                "responses": {
                    "200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.Pod"}},
                    "401": {"description": "Unauthorized"},
                },
                "x-kubernetes-action": "patch",
            },
        });
        let v3 = path_item(&item);
        assert_eq!(
            v3["parameters"][0],
            json!({"in": "query", "name": "pretty", "schema": {"type": "string", "uniqueItems": true}})
        );
        let patch = &v3["patch"];
        assert_eq!(patch["requestBody"]["required"], true);
        assert_eq!(
            patch["requestBody"]["content"]["application/apply-patch+yaml"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
        );
        assert_eq!(patch["parameters"][0]["name"], "fieldValidation");
        assert_eq!(
            patch["responses"]["200"]["content"]["application/yaml"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.Pod"
        );
        assert_eq!(
            patch["responses"]["401"],
            json!({"description": "Unauthorized"})
        );
        assert!(patch.get("consumes").is_none());
    }
}
