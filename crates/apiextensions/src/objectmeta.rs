//! Coercion of object metadata as upstream's custom resource handler does
//! it when decoding (`objectmeta.Coerce` with dropped invalid fields and
//! `GetObjectMetaWithOptions`): `metadata` of the resource and of embedded
//! resources keeps only ObjectMeta's fields with well-formed values, and
//! embedded `apiVersion`/`kind` must be strings. Unknown fields are
//! reported like pruned ones (`metadata.foo`).

use serde_json::{Map, Value};

use crate::props::Props;

/// How an ObjectMeta field is typed.
#[derive(Clone, Copy)]
enum Shape {
    Str,
    Int,
    Time,
    StrMap,
    StrList,
    Objects(&'static [&'static str]),
}

const OWNER_REFERENCE: &[&str] = &[
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];
const MANAGED_FIELDS: &[&str] = &[
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

const OBJECT_META: &[(&str, Shape)] = &[
    ("name", Shape::Str),
    ("generateName", Shape::Str),
    ("namespace", Shape::Str),
    ("selfLink", Shape::Str),
    ("uid", Shape::Str),
    ("resourceVersion", Shape::Str),
    ("generation", Shape::Int),
    ("creationTimestamp", Shape::Time),
    ("deletionTimestamp", Shape::Time),
    ("deletionGracePeriodSeconds", Shape::Int),
    ("labels", Shape::StrMap),
    ("annotations", Shape::StrMap),
    ("ownerReferences", Shape::Objects(OWNER_REFERENCE)),
    ("finalizers", Shape::StrList),
    ("managedFields", Shape::Objects(MANAGED_FIELDS)),
];

fn well_formed(v: &Value, shape: Shape) -> bool {
    match (shape, v) {
        (_, Value::Null) => true,
        (Shape::Str, Value::String(_)) => true,
        (Shape::Int, Value::Number(n)) => n.is_i64(),
        (Shape::Time, Value::String(s)) => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
        (Shape::StrMap, Value::Object(m)) => m.values().all(|v| v.is_string() || v.is_null()),
        (Shape::StrList, Value::Array(a)) => a.iter().all(|v| v.is_string()),
        (Shape::Objects(_), Value::Array(a)) => a.iter().all(|v| v.is_object() || v.is_null()),
        _ => false,
    }
}

/// Cleans one `metadata` object; `prefix` is its rendered path.
fn coerce_meta(meta: &mut Map<String, Value>, prefix: &str, unknown: &mut Vec<String>) {
    meta.retain(
        |k, v| match OBJECT_META.iter().find(|(name, _)| name == k) {
            None => {
                unknown.push(format!("{prefix}.{k}"));
                false
            }
            Some((_, shape)) => {
                if let (Shape::Objects(fields), Value::Array(items)) = (shape, &mut *v) {
                    for (i, item) in items.iter_mut().enumerate() {
                        if let Value::Object(obj) = item {
                            obj.retain(|f, _| {
                                let known = fields.contains(&f.as_str());
                                if !known {
                                    unknown.push(format!("{prefix}.{k}[{i}].{f}"));
                                }
                                known
                            });
                        }
                    }
                }
                well_formed(v, *shape)
            }
        },
    );
    // A zero creation timestamp is not written back.
    if meta.get("creationTimestamp").is_some_and(Value::is_null) {
        meta.remove("creationTimestamp");
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk(x: &mut Value, s: &Props, path: &str, unknown: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            if s.x_embedded_resource {
                map.retain(|k, v| !matches!(k.as_str(), "apiVersion" | "kind") || v.is_string());
                if let Some(Value::Object(meta)) = map.get_mut("metadata") {
                    coerce_meta(meta, &join(path, "metadata"), unknown);
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    walk(v, prop, &join(path, k), unknown);
                } else if let Some(ap) = s.additional_schema() {
                    walk(v, ap, &join(path, k), unknown);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items_schema() {
                for (i, v) in items.iter_mut().enumerate() {
                    walk(v, item_schema, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Coerces the resource's own `metadata`; returns the unknown fields
/// dropped (`metadata.foo`).
pub fn coerce_root(obj: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        coerce_meta(meta, "metadata", &mut unknown);
    }
    unknown
}

/// Coerces every embedded resource's type and object meta; returns the
/// unknown metadata fields dropped, sorted.
pub fn coerce_embedded(obj: &mut Value, schema: &Props) -> Vec<String> {
    let mut unknown = Vec::new();
    walk(obj, schema, "", &mut unknown);
    unknown.sort();
    unknown
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drops_unknown_and_malformed_metadata() {
        let schema = Props::from_value(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "x-kubernetes-preserve-unknown-fields": true}}}}}),
        );
        let mut obj = json!({
            "metadata": {"name": "a", "bogus": 1, "labels": "not-a-map",
                         "ownerReferences": [{"name": "o", "uid": "u", "kind": "K", "apiVersion": "v1", "extra": 1}]},
            "spec": {"template": {"apiVersion": 5, "kind": "Pod",
                                  "metadata": {"name": "p", "what": true, "creationTimestamp": null}}}
        });
        let mut unknown = coerce_root(&mut obj);
        unknown.extend(coerce_embedded(&mut obj, &schema));
        assert_eq!(
            unknown,
            vec![
                "metadata.bogus",
                "metadata.ownerReferences[0].extra",
                "spec.template.metadata.what"
            ]
        );
        assert_eq!(
            obj,
            json!({
                "metadata": {"name": "a", "ownerReferences": [{"name": "o", "uid": "u", "kind": "K", "apiVersion": "v1"}]},
                "spec": {"template": {"kind": "Pod", "metadata": {"name": "p"}}}
            })
        );
    }
}
