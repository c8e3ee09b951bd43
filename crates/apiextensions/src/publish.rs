//! The OpenAPI v3 definitions upstream publishes for a served CRD version
//! (`/openapi/v3/apis/<group>/<version>`, used by `kubectl explain` and
//! client-side tools): the version's schema with the standard
//! `apiVersion`, `kind` and `metadata` properties, the same for embedded
//! resources, `x-kubernetes-int-or-string` unfolded to its `anyOf`, and
//! the list kind's definition.

use serde_json::{json, Map, Value};

use crate::props::Props;
use crate::smd::model_name;
use crate::structural;

const OBJECT_META_REF: &str =
    "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META_REF: &str = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const EMBEDDED_API_VERSION_DOC: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DOC: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const OBJECT_META_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_META_DOC: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// One published definition: its model name and schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    pub schema: Value,
}

/// The definitions of a served version: the kind, then its list kind.
/// `None` when the CRD has no such version.
pub fn published_definitions(crd: &Value, version: &str) -> Option<[Definition; 2]> {
    let spec = crd.get("spec")?;
    let v = spec
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
    let text = |k: &str| spec.pointer(k).and_then(Value::as_str).unwrap_or("");
    let (group, kind, list_kind, plural) = (
        text("/group"),
        text("/names/kind"),
        text("/names/listKind"),
        text("/names/plural"),
    );
    let gvk = |k: &str| json!([{"group": group, "kind": k, "version": version}]);
    let mut schema = match v.pointer("/schema/openAPIV3Schema").filter(|s| usable(s)) {
        Some(raw) => {
            let mut s = raw.clone();
            unfold(&mut s);
            add_embedded_type_meta(&mut s);
            set_property(
                &mut s,
                "metadata",
                json!({"$ref": OBJECT_META_REF, "description": OBJECT_META_DOC}),
            );
            set_property(
                &mut s,
                "apiVersion",
                json!({"description": API_VERSION_DOC, "type": "string"}),
            );
            set_property(
                &mut s,
                "kind",
                json!({"description": KIND_DOC, "type": "string"}),
            );
            s
        }
        None => json!({"type": "object"}),
    };
    if let Some(map) = schema.as_object_mut() {
        map.insert("x-kubernetes-group-version-kind".to_owned(), gvk(kind));
    }
    let kind_name = model_name(group, version, kind);
    let list = json!({
        "description": format!("{list_kind} is a list of {kind}"),
        "required": ["items"],
        "type": "object",
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "items": {
                "description": format!("List of {plural}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"),
                "type": "array",
                "items": {"$ref": format!("#/components/schemas/{kind_name}")}
            },
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": {"$ref": LIST_META_REF, "description": LIST_META_DOC}
        },
        "x-kubernetes-group-version-kind": gvk(list_kind)
    });
    Some([
        Definition {
            name: kind_name,
            schema,
        },
        Definition {
            name: model_name(group, version, list_kind),
            schema: list,
        },
    ])
}

/// Upstream publishes only structural schemas with valid types.
fn usable(raw: &Value) -> bool {
    let props = Props::from_value(raw);
    let bad_type = props.any(&mut |p| {
        !p.ty.is_empty()
            && !["array", "boolean", "integer", "number", "object", "string"]
                .contains(&p.ty.as_str())
    });
    !bad_type && structural::validate_structural(&apimachinery::Path::new(""), &props).is_empty()
}

fn set_property(schema: &mut Value, name: &str, value: Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let props = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(props) = props.as_object_mut() {
        props.insert(name.to_owned(), value);
    }
}

/// Calls `f` on every schema below `s` that is part of the structural
/// tree (properties, items, additionalProperties).
fn for_children(s: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(&mut *f);
    }
    if let Some(items) = s.get_mut("items").filter(|i| i.is_object()) {
        f(items);
    }
    if let Some(ap) = s.get_mut("additionalProperties").filter(|a| a.is_object()) {
        f(ap);
    }
}

fn is_true(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

/// `x-kubernetes-int-or-string` without the explicit `anyOf` gains it.
fn unfold(s: &mut Value) {
    for_children(s, &mut unfold);
    if !is_true(s, "x-kubernetes-int-or-string") {
        return;
    }
    let alternatives = json!([{"type": "integer"}, {"type": "string"}]);
    let Some(map) = s.as_object_mut() else {
        return;
    };
    let has_pattern = |v: Option<&Value>| v == Some(&alternatives);
    let first_all_of_any_of = map
        .get("allOf")
        .and_then(|a| a.get(0))
        .and_then(|a| a.get("anyOf"));
    if has_pattern(map.get("anyOf")) || has_pattern(first_all_of_any_of) {
        return;
    }
    if !map.contains_key("anyOf") {
        map.insert("anyOf".to_owned(), alternatives);
    } else {
        let mut all_of = vec![json!({"anyOf": alternatives})];
        if let Some(Value::Array(rest)) = map.remove("allOf") {
            all_of.extend(rest);
        }
        map.insert("allOf".to_owned(), Value::Array(all_of));
    }
}

/// Embedded resources show the standard type and object meta.
fn add_embedded_type_meta(s: &mut Value) {
    for_children(s, &mut add_embedded_type_meta);
    if !is_true(s, "x-kubernetes-embedded-resource") {
        return;
    }
    set_property(
        s,
        "apiVersion",
        json!({"description": EMBEDDED_API_VERSION_DOC, "type": "string"}),
    );
    set_property(
        s,
        "kind",
        json!({"description": EMBEDDED_KIND_DOC, "type": "string"}),
    );
    set_property(
        s,
        "metadata",
        json!({"$ref": OBJECT_META_REF, "description": OBJECT_META_DOC}),
    );
    if let Some(map) = s.as_object_mut() {
        let required = map.entry("required").or_insert_with(|| json!([]));
        if let Some(list) = required.as_array_mut() {
            for name in ["kind", "apiVersion"] {
                if !list.iter().any(|r| r == name) {
                    list.push(name.into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publishes_kind_and_list_definitions() {
        let crd = json!({"spec": {"group": "stable.example.com", "scope": "Namespaced",
        "names": {"plural": "crontabs", "kind": "CronTab", "listKind": "CronTabList"},
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": {
                "port": {"x-kubernetes-int-or-string": true},
                "tmpl": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "x-kubernetes-preserve-unknown-fields": true}
            }}}}}}]}});
        let [kind, list] = match published_definitions(&crd, "v1") {
            Some(defs) => defs,
            None => panic!("version not found"),
        };
        assert_eq!(kind.name, "com.example.stable.v1.CronTab");
        assert_eq!(list.name, "com.example.stable.v1.CronTabList");
        let s = &kind.schema;
        assert_eq!(s["properties"]["metadata"]["$ref"], json!(OBJECT_META_REF));
        assert_eq!(s["properties"]["kind"]["type"], json!("string"));
        assert_eq!(
            s["x-kubernetes-group-version-kind"],
            json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
        );
        let spec = &s["properties"]["spec"]["properties"];
        assert_eq!(
            spec["port"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        assert_eq!(spec["tmpl"]["required"], json!(["kind", "apiVersion"]));
        assert_eq!(
            spec["tmpl"]["properties"]["metadata"]["$ref"],
            json!(OBJECT_META_REF)
        );
        assert_eq!(
            list.schema["properties"]["items"]["items"]["$ref"],
            json!("#/components/schemas/com.example.stable.v1.CronTab")
        );
        assert!(published_definitions(&crd, "v2").is_none());
    }

    #[test]
    fn non_structural_schema_publishes_a_plain_object() {
        let crd = json!({"spec": {"group": "a.io", "names": {"kind": "A", "listKind": "AList", "plural": "as"},
            "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"properties": {"x": {}}}}}]}});
        let defs = published_definitions(&crd, "v1").map(|[k, _]| k.schema);
        assert_eq!(
            defs,
            Some(
                json!({"type": "object", "x-kubernetes-group-version-kind": [{"group": "a.io", "kind": "A", "version": "v1"}]})
            )
        );
    }
}
