//! Resource quantities written back in canonical form, as upstream writes
//! them after decoding into its Go types (`cpu: 1000m` is stored and read
//! back as `"1"`, `memory: 1024Mi` as `1Gi`, `0.5` as `500m`), and a value
//! that is no quantity refused as upstream's decoder refuses it.
//!
//! k8s-openapi keeps quantities as the strings it was given, so where a
//! kind holds quantities is learnt once per kind from its JSON schema
//! (every field whose schema is `io.k8s.apimachinery.pkg.api.resource.Quantity`)
//! into a small tree of field names walked on every decode.

use std::collections::BTreeMap;

use apimachinery::quantity::{canonicalize_json, QuantityError};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{Map, Value};

const QUANTITY_REF: &str = "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity";
const PREFIX: &str = "#/definitions/";

/// Where a kind's fields hold quantities: a quantity here, or some below
/// a field, every map value or every list item.
#[derive(Debug, Default, PartialEq)]
pub struct QuantityFields {
    quantity: bool,
    fields: BTreeMap<String, QuantityFields>,
    map_values: Option<Box<QuantityFields>>,
    items: Option<Box<QuantityFields>>,
}

impl QuantityFields {
    /// The quantity fields of type `K`, `None` when it holds none.
    pub fn of<K: JsonSchema>() -> Option<QuantityFields> {
        let mut generator = SchemaSettings::openapi3()
            .with(|s| {
                s.definitions_path = "/definitions".into();
                s.meta_schema = None;
                s.transforms = Vec::new();
            })
            .into_generator();
        let root = generator.subschema_for::<K>();
        let definitions = generator.take_definitions(false);
        build(root.as_value(), &definitions, &mut Vec::new())
    }

    /// Rewrites every quantity of `obj` in canonical form.
    pub fn canonicalize(&self, obj: &mut Value) -> Result<(), QuantityError> {
        if self.quantity {
            if !obj.is_null() {
                *obj = Value::String(canonicalize_json(obj)?);
            }
            return Ok(());
        }
        match obj {
            Value::Object(map) => {
                for (name, below) in &self.fields {
                    if let Some(value) = map.get_mut(name) {
                        below.canonicalize(value)?;
                    }
                }
                if let Some(below) = &self.map_values {
                    for value in map.values_mut() {
                        below.canonicalize(value)?;
                    }
                }
            }
            Value::Array(list) => {
                if let Some(below) = &self.items {
                    for item in list {
                        below.canonicalize(item)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The quantity fields under `schema`; `visiting` holds the definitions
/// being expanded, so recursive types end.
fn build(
    schema: &Value,
    definitions: &Map<String, Value>,
    visiting: &mut Vec<String>,
) -> Option<QuantityFields> {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        if reference == QUANTITY_REF {
            return Some(QuantityFields {
                quantity: true,
                ..Default::default()
            });
        }
        let name = reference.strip_prefix(PREFIX)?;
        if visiting.iter().any(|v| v == name) {
            return None;
        }
        visiting.push(name.to_owned());
        let found = definitions
            .get(name)
            .and_then(|def| build(def, definitions, visiting));
        visiting.pop();
        return found;
    }
    let mut fields = BTreeMap::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, sub) in properties {
            if let Some(below) = build(sub, definitions, visiting) {
                fields.insert(name.clone(), below);
            }
        }
    }
    let below = |key: &str, visiting: &mut Vec<String>| {
        schema
            .get(key)
            .filter(|s| s.is_object())
            .and_then(|s| build(s, definitions, visiting))
            .map(Box::new)
    };
    let map_values = below("additionalProperties", visiting);
    let items = below("items", visiting);
    // Wrappers such as `allOf: [{$ref}]` or `anyOf` for nullable fields.
    let mut combined = None;
    for key in ["allOf", "anyOf", "oneOf"] {
        for sub in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            combined = combined.or_else(|| build(sub, definitions, visiting));
        }
    }
    if let Some(found) = combined {
        return Some(found);
    }
    let empty = fields.is_empty() && map_values.is_none() && items.is_none();
    (!empty).then_some(QuantityFields {
        quantity: false,
        fields,
        map_values,
        items,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod, ResourceQuota};
    use serde_json::json;

    use super::*;

    #[test]
    fn pods_canonicalize_container_resources_and_overhead() {
        let fields = QuantityFields::of::<Pod>().expect("pods hold quantities");
        let mut pod = json!({"spec": {
            "containers": [{"name": "a", "resources": {
                "limits": {"cpu": "1000m", "memory": "1024Mi"},
                "requests": {"cpu": 0.5, "memory": "1.5Gi", "ephemeral-storage": "2000M"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "100m"}}}],
            "overhead": {"cpu": "0.25"},
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1000000"}}]},
            "metadata": {"labels": {"cpu": "1000m"}}});
        fields.canonicalize(&mut pod).expect("valid quantities");
        let container = &pod["spec"]["containers"][0]["resources"];
        assert_eq!(container["limits"], json!({"cpu": "1", "memory": "1Gi"}));
        assert_eq!(
            container["requests"],
            json!({"cpu": "500m", "memory": "1536Mi", "ephemeral-storage": "2G"})
        );
        assert_eq!(pod["spec"]["overhead"]["cpu"], "250m");
        assert_eq!(pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "1M");
        // Not a quantity field: left as written.
        assert_eq!(pod["metadata"]["labels"]["cpu"], "1000m");
    }

    #[test]
    fn values_that_are_no_quantity_are_refused() {
        let fields = QuantityFields::of::<ResourceQuota>().expect("quotas hold quantities");
        let mut quota = json!({"spec": {"hard": {"cpu": "abc"}}});
        let err = fields.canonicalize(&mut quota).expect_err("not a quantity");
        assert!(
            err.to_string().starts_with("quantities must match"),
            "{err}"
        );
    }

    #[test]
    fn kinds_without_quantities_have_none() {
        assert_eq!(QuantityFields::of::<ConfigMap>(), None);
    }
}
