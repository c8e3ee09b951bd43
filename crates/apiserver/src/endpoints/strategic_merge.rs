//! Strategic merge patch (`application/strategic-merge-patch+json`) for
//! built-in types: maps merge recursively, `null` deletes, lists with a
//! patch merge key merge element by element, and the `$patch`,
//! `$retainKeys`, `$deleteFromPrimitiveList` and `$setElementOrder`
//! directives are honoured.
//!
//! The merge keys come from a table of the fields that upstream's types
//! mark with `patchStrategy=merge`; deriving them from the type definitions
//! is the patch-and-apply issue's work.

use serde_json::{Map, Value};

/// The merge key of a list field, by field name (and, for `ports`, by what
/// the elements look like: container ports vs service ports).
fn merge_key(field: &str, sample: Option<&Value>) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "hostAliases" => "ip",
        "conditions" => "type",
        "ownerReferences" => "uid",
        "topologySpreadConstraints" => "topologyKey",
        "ports" => {
            if sample.is_some_and(|s| s.get("containerPort").is_some()) {
                "containerPort"
            } else {
                "port"
            }
        }
        _ => return None,
    })
}

/// Lists of scalars that merge as sets.
fn merges_primitives(field: &str) -> bool {
    matches!(field, "finalizers")
}

/// Applies `patch` to `original`.
pub fn apply(original: &Value, patch: &Value) -> Value {
    match (original, patch) {
        (Value::Object(o), Value::Object(p)) => Value::Object(merge_map(o, p)),
        _ => strip_directives(patch),
    }
}

fn merge_map(original: &Map<String, Value>, patch: &Map<String, Value>) -> Map<String, Value> {
    if patch.get("$patch").and_then(Value::as_str) == Some("replace") {
        return match strip_directives(&Value::Object(patch.clone())) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
    }
    let mut result = original.clone();
    for (key, value) in patch {
        if key == "$patch" || key == "$retainKeys" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(remove)) = (result.get_mut(field), value)
            {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        match value {
            Value::Null => {
                result.remove(key);
            }
            Value::Object(p) => {
                let merged = match result.get(key) {
                    Some(Value::Object(o)) => Value::Object(merge_map(o, p)),
                    _ => strip_directives(value),
                };
                if p.get("$patch").and_then(Value::as_str) == Some("delete") {
                    result.remove(key);
                } else {
                    result.insert(key.clone(), merged);
                }
            }
            Value::Array(items) => {
                let merged = merge_list(key, result.get(key), items);
                result.insert(key.clone(), merged);
            }
            other => {
                result.insert(key.clone(), other.clone());
            }
        }
    }
    if let Some(Value::Array(keep)) = patch.get("$retainKeys") {
        result.retain(|k, _| keep.iter().any(|v| v.as_str() == Some(k)));
    }
    result
}

fn merge_list(field: &str, original: Option<&Value>, patch: &[Value]) -> Value {
    let original = original.and_then(Value::as_array);
    let replace = patch
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"));
    if replace {
        let kept = patch
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .map(strip_directives);
        return Value::Array(kept.collect());
    }
    let Some(original) = original else {
        let items = patch
            .iter()
            .filter(|i| i.get("$patch").and_then(Value::as_str) != Some("delete"))
            .map(strip_directives);
        return Value::Array(items.collect());
    };
    if merges_primitives(field) {
        let mut merged = original.clone();
        for item in patch {
            if !merged.contains(item) {
                merged.push(item.clone());
            }
        }
        return Value::Array(merged);
    }
    let Some(key) = merge_key(field, patch.first().or(original.first())) else {
        return Value::Array(patch.iter().map(strip_directives).collect());
    };
    let mut merged = original.clone();
    for item in patch {
        let id = item.get(key);
        let position = merged.iter().position(|o| id.is_some() && o.get(key) == id);
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                merged.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => merged[i] = apply(&merged[i], item),
            (None, false) => merged.push(strip_directives(item)),
        }
    }
    Value::Array(merged)
}

/// A patch value without its `$` directives, for where it replaces.
fn strip_directives(value: &Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
            {"name": "b", "image": "b:1"}]},
            "metadata": {"labels": {"x": "1", "y": "2"}, "finalizers": ["f1"]}})
    }

    #[test]
    fn containers_merge_by_name() {
        let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "a:2"}]}});
        let out = apply(&pod(), &patch);
        assert_eq!(out["spec"]["containers"][0]["image"], "a:2");
        assert_eq!(
            out["spec"]["containers"][0]["ports"][0]["containerPort"],
            80
        );
        assert_eq!(out["spec"]["containers"][1]["image"], "b:1");
        assert!(out["spec"].get("$setElementOrder/containers").is_none());
    }

    #[test]
    fn null_deletes_and_patch_delete_removes_elements() {
        let patch = json!({"metadata": {"labels": {"x": null}},
            "spec": {"containers": [{"name": "b", "$patch": "delete"}]}});
        let out = apply(&pod(), &patch);
        assert_eq!(out["metadata"]["labels"], json!({"y": "2"}));
        assert_eq!(out["spec"]["containers"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn replace_directive_and_primitive_lists() {
        let patch =
            json!({"metadata": {"labels": {"$patch": "replace", "z": "3"}, "finalizers": ["f2"]}});
        let out = apply(&pod(), &patch);
        assert_eq!(out["metadata"]["labels"], json!({"z": "3"}));
        assert_eq!(out["metadata"]["finalizers"], json!(["f1", "f2"]));
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}});
        assert_eq!(apply(&pod(), &patch)["metadata"]["finalizers"], json!([]));
    }

    #[test]
    fn retain_keys_drops_unlisted_fields() {
        let orig = json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}});
        let patch = json!({"strategy": {"$retainKeys": ["type"], "type": "Recreate"}});
        assert_eq!(
            apply(&orig, &patch),
            json!({"strategy": {"type": "Recreate"}})
        );
    }
}
