//! The OpenAPI v3 schema of a CustomResourceDefinition version
//! (`JSONSchemaProps` of `apiextensions.k8s.io/v1`), decoded from JSON into
//! an owned tree that validation, pruning and defaulting walk.
//!
//! Decoding is lenient: a member of the wrong JSON type is treated as
//! absent, because the typed decoding of the CRD itself has already
//! refused such documents before they reach this crate.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// `items`: one schema for every element, or (unsupported) a tuple.
#[derive(Debug, Clone, PartialEq)]
pub enum Items {
    Schema(Box<Props>),
    Array(Vec<Props>),
}

/// `additionalProperties`: a boolean or a schema (which allows).
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaOrBool {
    Bool(bool),
    Schema(Box<Props>),
}

impl SchemaOrBool {
    pub fn allows(&self) -> bool {
        match self {
            SchemaOrBool::Bool(b) => *b,
            SchemaOrBool::Schema(_) => true,
        }
    }

    pub fn schema(&self) -> Option<&Props> {
        match self {
            SchemaOrBool::Bool(_) => None,
            SchemaOrBool::Schema(s) => Some(s),
        }
    }
}

/// One node of an OpenAPI v3 schema as CRDs spell it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Props {
    pub id: String,
    pub schema_uri: String,
    pub reference: Option<String>,
    pub description: String,
    pub title: String,
    pub ty: String,
    pub format: String,
    pub nullable: bool,
    pub default: Option<Value>,
    pub example: Option<Value>,
    pub external_docs: Option<Value>,
    pub enumeration: Option<Vec<Value>>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: String,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    pub items: Option<Items>,
    pub all_of: Vec<Props>,
    pub one_of: Vec<Props>,
    pub any_of: Vec<Props>,
    pub not: Option<Box<Props>>,
    pub properties: BTreeMap<String, Props>,
    pub additional_properties: Option<SchemaOrBool>,
    pub pattern_properties: BTreeMap<String, Props>,
    pub additional_items: Option<SchemaOrBool>,
    pub definitions: BTreeMap<String, Props>,
    /// `dependencies`: a schema or a list of property names per key.
    pub dependencies: BTreeMap<String, Option<Props>>,
    pub x_preserve_unknown_fields: Option<bool>,
    pub x_embedded_resource: bool,
    pub x_int_or_string: bool,
    pub x_list_map_keys: Vec<String>,
    pub x_list_type: Option<String>,
    pub x_map_type: Option<String>,
    /// `x-kubernetes-validations` rules, kept as written.
    pub x_validations: Vec<Value>,
}

impl Props {
    /// Decodes a schema object; anything but an object is the empty schema.
    pub fn from_value(value: &Value) -> Props {
        match value {
            Value::Object(map) => Props::from_map(map),
            _ => Props::default(),
        }
    }

    fn from_map(m: &Map<String, Value>) -> Props {
        Props {
            id: string(m, "id"),
            schema_uri: string(m, "$schema"),
            reference: m.get("$ref").and_then(Value::as_str).map(str::to_owned),
            description: string(m, "description"),
            title: string(m, "title"),
            ty: string(m, "type"),
            format: string(m, "format"),
            nullable: boolean(m, "nullable"),
            default: present(m, "default"),
            example: present(m, "example"),
            external_docs: present(m, "externalDocs"),
            enumeration: m.get("enum").and_then(Value::as_array).cloned(),
            maximum: m.get("maximum").and_then(Value::as_f64),
            exclusive_maximum: boolean(m, "exclusiveMaximum"),
            minimum: m.get("minimum").and_then(Value::as_f64),
            exclusive_minimum: boolean(m, "exclusiveMinimum"),
            max_length: m.get("maxLength").and_then(Value::as_i64),
            min_length: m.get("minLength").and_then(Value::as_i64),
            pattern: string(m, "pattern"),
            max_items: m.get("maxItems").and_then(Value::as_i64),
            min_items: m.get("minItems").and_then(Value::as_i64),
            unique_items: boolean(m, "uniqueItems"),
            multiple_of: m.get("multipleOf").and_then(Value::as_f64),
            max_properties: m.get("maxProperties").and_then(Value::as_i64),
            min_properties: m.get("minProperties").and_then(Value::as_i64),
            required: strings(m, "required"),
            items: m.get("items").and_then(items),
            all_of: list(m, "allOf"),
            one_of: list(m, "oneOf"),
            any_of: list(m, "anyOf"),
            not: m
                .get("not")
                .filter(|v| v.is_object())
                .map(|v| Box::new(Props::from_value(v))),
            properties: named(m, "properties"),
            additional_properties: m.get("additionalProperties").and_then(schema_or_bool),
            pattern_properties: named(m, "patternProperties"),
            additional_items: m.get("additionalItems").and_then(schema_or_bool),
            definitions: named(m, "definitions"),
            dependencies: dependencies(m),
            x_preserve_unknown_fields: m
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool),
            x_embedded_resource: boolean(m, "x-kubernetes-embedded-resource"),
            x_int_or_string: boolean(m, "x-kubernetes-int-or-string"),
            x_list_map_keys: strings(m, "x-kubernetes-list-map-keys"),
            x_list_type: m
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_owned),
            x_map_type: m
                .get("x-kubernetes-map-type")
                .and_then(Value::as_str)
                .map(str::to_owned),
            x_validations: m
                .get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub fn preserves_unknown(&self) -> bool {
        self.x_preserve_unknown_fields == Some(true)
    }

    /// The single-schema `items`, if any.
    pub fn items_schema(&self) -> Option<&Props> {
        match &self.items {
            Some(Items::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The schema of `additionalProperties`, if it is one.
    pub fn additional_schema(&self) -> Option<&Props> {
        self.additional_properties
            .as_ref()
            .and_then(SchemaOrBool::schema)
    }

    /// Whether this node or any node below it satisfies `pred`.
    pub fn any(&self, pred: &mut dyn FnMut(&Props) -> bool) -> bool {
        if pred(self) {
            return true;
        }
        let mut children: Vec<&Props> = Vec::new();
        match &self.items {
            Some(Items::Schema(s)) => children.push(s),
            Some(Items::Array(v)) => children.extend(v.iter()),
            None => {}
        }
        children.extend(self.all_of.iter());
        children.extend(self.any_of.iter());
        children.extend(self.one_of.iter());
        children.extend(self.not.as_deref());
        children.extend(self.properties.values());
        children.extend(self.additional_schema());
        children.extend(self.pattern_properties.values());
        children.extend(
            self.additional_items
                .as_ref()
                .and_then(SchemaOrBool::schema),
        );
        children.extend(self.definitions.values());
        children.extend(self.dependencies.values().flatten());
        children.into_iter().any(|c| c.any(pred))
    }
}

fn string(m: &Map<String, Value>, key: &str) -> String {
    m.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn boolean(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// A member that is present and not JSON null (Go's `*JSON` stays nil for null).
fn present(m: &Map<String, Value>, key: &str) -> Option<Value> {
    m.get(key).filter(|v| !v.is_null()).cloned()
}

fn strings(m: &Map<String, Value>, key: &str) -> Vec<String> {
    m.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn list(m: &Map<String, Value>, key: &str) -> Vec<Props> {
    m.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Props::from_value).collect())
        .unwrap_or_default()
}

fn named(m: &Map<String, Value>, key: &str) -> BTreeMap<String, Props> {
    m.get(key)
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), Props::from_value(v)))
                .collect()
        })
        .unwrap_or_default()
}

fn items(v: &Value) -> Option<Items> {
    match v {
        Value::Object(_) => Some(Items::Schema(Box::new(Props::from_value(v)))),
        Value::Array(a) => Some(Items::Array(a.iter().map(Props::from_value).collect())),
        _ => None,
    }
}

fn schema_or_bool(v: &Value) -> Option<SchemaOrBool> {
    match v {
        Value::Bool(b) => Some(SchemaOrBool::Bool(*b)),
        Value::Object(_) => Some(SchemaOrBool::Schema(Box::new(Props::from_value(v)))),
        _ => None,
    }
}

fn dependencies(m: &Map<String, Value>) -> BTreeMap<String, Option<Props>> {
    m.get("dependencies")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.is_object().then(|| Props::from_value(v))))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_nested_schema_and_extensions() {
        let p = Props::from_value(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "list": {"type": "array", "x-kubernetes-list-type": "map",
                         "x-kubernetes-list-map-keys": ["name"],
                         "items": {"type": "object"}}
            },
            "additionalProperties": false,
            "default": null
        }));
        assert_eq!(p.ty, "object");
        assert!(p.properties["spec"].preserves_unknown());
        assert_eq!(p.properties["list"].x_list_map_keys, vec!["name"]);
        assert_eq!(
            p.properties["list"].items_schema().map(|s| s.ty.as_str()),
            Some("object")
        );
        assert_eq!(p.additional_properties, Some(SchemaOrBool::Bool(false)));
        assert_eq!(p.default, None);
        assert!(p.any(&mut |s| s.x_list_type.is_some()));
        assert!(!p.any(&mut |s| s.x_embedded_resource));
    }
}
