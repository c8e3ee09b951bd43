//! Pruning of fields a structural schema does not specify (upstream's
//! `pruning.Prune`), recording the dropped paths for `fieldValidation`
//! warnings and errors. Metadata contents are left to [`crate::objectmeta`].

use serde_json::{Map, Value};

use crate::props::Props;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

struct Pruner {
    /// The current path, upstream's `ParentPath` joined (`spec.items[0]`).
    path: String,
    unknown: Vec<String>,
}

impl Pruner {
    fn record(&mut self, key: &str) {
        if self.path.is_empty() {
            self.unknown.push(key.to_owned());
        } else {
            self.unknown.push(format!("{}.{key}", self.path));
        }
    }

    fn with_key<R>(&mut self, key: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
        let r = f(self);
        self.path.truncate(len);
        r
    }

    fn with_index<R>(&mut self, i: usize, f: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.path.len();
        self.path.push('[');
        self.path.push_str(&i.to_string());
        self.path.push(']');
        let r = f(self);
        self.path.truncate(len);
        r
    }

    fn prune(&mut self, x: &mut Value, s: Option<&Props>, embedded_root: bool) {
        if let Some(s) = s.filter(|s| s.preserves_unknown()) {
            self.skip_prune(x, s, embedded_root);
            return;
        }
        match x {
            Value::Object(map) => {
                let Some(s) = s else {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    for k in keys {
                        self.record(&k);
                    }
                    map.clear();
                    return;
                };
                self.prune_object(map, s, embedded_root);
            }
            Value::Array(items) => {
                let item_schema = s.and_then(Props::items_schema);
                for (i, v) in items.iter_mut().enumerate() {
                    self.with_index(i, |p| p.prune(v, item_schema, false));
                }
            }
            _ => {}
        }
    }

    fn prune_object(&mut self, map: &mut Map<String, Value>, s: &Props, embedded_root: bool) {
        let embedded = s.x_embedded_resource || embedded_root;
        let mut dropped = Vec::new();
        for (k, v) in map.iter_mut() {
            if embedded && META_FIELDS.contains(&k.as_str()) {
                continue;
            }
            if let Some(prop) = s.properties.get(k) {
                self.with_key(k, |p| p.prune(v, Some(prop), false));
            } else if let Some(ap) = &s.additional_properties {
                self.with_key(k, |p| p.prune(v, ap.schema(), false));
            } else {
                if !META_FIELDS.contains(&k.as_str()) || !self.path.is_empty() {
                    self.record(k);
                }
                dropped.push(k.clone());
            }
        }
        for k in dropped {
            map.remove(&k);
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: &Props, embedded_root: bool) {
        match x {
            Value::Object(map) => {
                let embedded = s.x_embedded_resource || embedded_root;
                for (k, v) in map.iter_mut() {
                    if embedded && META_FIELDS.contains(&k.as_str()) {
                        continue;
                    }
                    if let Some(prop) = s.properties.get(k) {
                        self.with_key(k, |p| p.prune(v, Some(prop), false));
                    } else if let Some(ap) = &s.additional_properties {
                        self.with_key(k, |p| p.prune(v, ap.schema(), false));
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = s.items_schema() {
                    for (i, v) in items.iter_mut().enumerate() {
                        self.with_index(i, |p| p.skip_prune(v, item_schema, false));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Removes from `obj` every field `schema` does not specify. With
/// `is_resource_root` the object is a resource: its `apiVersion`, `kind`
/// and `metadata` are kept (metadata is ObjectMeta's business). Returns the
/// dropped paths, sorted.
pub fn prune(obj: &mut Value, schema: &Props, is_resource_root: bool) -> Vec<String> {
    let mut p = Pruner {
        path: String::new(),
        unknown: Vec::new(),
    };
    p.prune(obj, Some(schema), is_resource_root);
    p.unknown.sort();
    p.unknown
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drops_unknown_fields_and_reports_paths() {
        let schema = Props::from_value(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}
        }}));
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "junk": 1},
            "spec": {"items": [{"a": "x", "b": 1}], "free": {"x": {"y": 1}}, "labels": {"k": "v"}, "foo": 1},
            "status": {}
        });
        let dropped = prune(&mut obj, &schema, true);
        assert_eq!(dropped, vec!["spec.foo", "spec.items[0].b", "status"]);
        assert_eq!(
            obj,
            json!({
                "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "junk": 1},
                "spec": {"items": [{"a": "x"}], "free": {"x": {"y": 1}}, "labels": {"k": "v"}}
            })
        );
    }

    #[test]
    fn embedded_resources_keep_type_meta() {
        let schema = Props::from_value(&json!({"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "properties": {"spec": {"type": "object"}}}
        }}));
        let mut obj = json!({"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "bogus": true}, "spec": {"x": 1}, "extra": 2}});
        let dropped = prune(&mut obj, &schema, false);
        assert_eq!(dropped, vec!["template.extra", "template.spec.x"]);
        assert_eq!(
            obj,
            json!({"template": {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": "p", "bogus": true}, "spec": {}}})
        );
    }

    #[test]
    fn nested_meta_field_names_are_reported() {
        let schema = Props::from_value(
            &json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
        );
        let mut obj = json!({"spec": {"kind": "x"}, "kind": "K"});
        assert_eq!(prune(&mut obj, &schema, true), vec!["spec.kind"]);
    }
}
