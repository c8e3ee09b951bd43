//! Uniqueness of `x-kubernetes-list-type: set` items and `map` keys
//! (upstream's `listtype.ValidateListSetsAndMaps`): each repeat is a
//! Duplicate value error at its index.

use apimachinery::{FieldError, Path};
use serde_json::{Map, Value};

use crate::openapi::json_equal;
use crate::props::Props;

/// Validates the lists below an object (`base` `None`: at the root).
pub fn validate(base: Option<&Path>, s: &Props, obj: &Map<String, Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    object(base, s, obj, &mut errs);
    errs
}

fn child(base: Option<&Path>, name: &str) -> Path {
    base.map_or_else(|| Path::new(name), |b| b.child(name))
}

fn key(base: Option<&Path>, name: &str) -> Path {
    // A key on a nil path renders as `[name]`, which upstream never hits at
    // the root (roots have properties, not additionalProperties).
    base.map_or_else(|| Path::new(&format!("[{name}]")), |b| b.key(name))
}

fn object(base: Option<&Path>, s: &Props, obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    if let Some(ap) = s.additional_schema() {
        for (k, v) in obj {
            value(&key(base, k), ap, v, errs);
        }
    }
    for (k, v) in obj {
        if let Some(sub) = s.properties.get(k) {
            value(&child(base, k), sub, v, errs);
        }
    }
}

fn value(path: &Path, s: &Props, v: &Value, errs: &mut Vec<FieldError>) {
    match v {
        Value::Array(items) => array(path, s, items, errs),
        Value::Object(map) => object(Some(path), s, map, errs),
        _ => {}
    }
}

fn array(path: &Path, s: &Props, items: &[Value], errs: &mut Vec<FieldError>) {
    match s.x_list_type.as_deref() {
        Some("set") => {
            for i in repeats(items) {
                errs.push(FieldError::duplicate(&path.index(i), items[i].clone()));
            }
        }
        Some("map") => list_map(path, s, items, errs),
        _ => {}
    }
    if let Some(item_schema) = s.items_schema() {
        for (i, v) in items.iter().enumerate() {
            value(&path.index(i), item_schema, v, errs);
        }
    }
}

/// Indices of the second occurrence of each repeated value.
fn repeats(items: &[Value]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let earlier = items[..i].iter().filter(|y| json_equal(x, y)).count();
        if earlier == 1 {
            out.push(i);
        }
    }
    out
}

fn list_map(path: &Path, s: &Props, items: &[Value], errs: &mut Vec<FieldError>) {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            errs.push(FieldError::invalid(
                &path.index(i),
                x.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Value::Object(m) = x {
                for k in &s.x_list_map_keys {
                    if let Some(v) = m.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in repeats(&keys) {
        errs.push(FieldError::duplicate(&path.index(i), keys[i].clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicates_in_sets_and_maps() {
        let s = Props::from_value(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                          "items": {"type": "object"}}
            }}}}),
        );
        let obj = json!({"spec": {"tags": ["a", "b", "a", "a"], "ports": [{"port": 80}, {"port": 80, "x": 1}, {"port": 81}]}});
        let errs: Vec<String> = validate(None, &s, obj.as_object().unwrap_or(&Map::new()))
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errs,
            vec![
                r#"spec.tags[2]: Duplicate value: "a""#,
                r#"spec.ports[1]: Duplicate value: {"port":80}"#,
            ]
        );
    }
}
