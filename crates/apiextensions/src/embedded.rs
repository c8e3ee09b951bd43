//! Validation of embedded resources (`x-kubernetes-embedded-resource`):
//! `apiVersion` and `kind` present and well formed, `metadata` valid
//! ObjectMeta (upstream's `objectmeta.Validate`).

use apimachinery::validation::{is_dns1035_label, name_is_path_segment, object_meta};
use apimachinery::{FieldError, Path};
use serde_json::{Map, Value};

use crate::props::Props;

/// Validates every embedded resource below `obj` (`base` `None`: root).
pub fn validate(base: Option<&Path>, s: &Props, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    walk(base, s, obj, &mut errs);
    errs
}

fn at(base: Option<&Path>, name: &str) -> Path {
    base.map_or_else(|| Path::new(name), |b| b.child(name))
}

fn walk(base: Option<&Path>, s: &Props, x: &Value, errs: &mut Vec<FieldError>) {
    match x {
        Value::Object(map) => {
            if s.x_embedded_resource {
                resource(base, map, errs);
            }
            for (k, v) in map {
                if let Some(prop) = s.properties.get(k) {
                    walk(Some(&at(base, k)), prop, v, errs);
                } else if let Some(ap) = s.additional_schema() {
                    let path = base.map_or_else(|| Path::new(&format!("[{k}]")), |b| b.key(k));
                    walk(Some(&path), ap, v, errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items_schema() {
                for (i, v) in items.iter().enumerate() {
                    let path = base.map_or_else(|| Path::new(&format!("[{i}]")), |b| b.index(i));
                    walk(Some(&path), item_schema, v, errs);
                }
            }
        }
        _ => {}
    }
}

fn resource(base: Option<&Path>, map: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    for name in ["apiVersion", "kind"] {
        if !map.contains_key(name) {
            errs.push(FieldError::required(&at(base, name), ""));
        }
    }
    for (k, v) in map {
        match k.as_str() {
            "apiVersion" => api_version(&at(base, k), v, errs),
            "kind" => kind(&at(base, k), v, errs),
            "metadata" => metadata(base, v, errs),
            _ => {}
        }
    }
}

fn api_version(path: &Path, v: &Value, errs: &mut Vec<FieldError>) {
    match v.as_str() {
        None => errs.push(FieldError::invalid(path, v.clone(), "must be a string")),
        Some("") => errs.push(FieldError::invalid(path, "", "must not be empty")),
        Some(s) if s.matches('/').count() > 1 => errs.push(FieldError::invalid(
            path,
            s,
            format!("unexpected GroupVersion string: {s}"),
        )),
        Some(_) => {}
    }
}

fn kind(path: &Path, v: &Value, errs: &mut Vec<FieldError>) {
    match v.as_str() {
        None => errs.push(FieldError::invalid(path, v.clone(), "must be a string")),
        Some("") => errs.push(FieldError::invalid(path, "", "must not be empty")),
        Some(s) => {
            let problems = is_dns1035_label(&s.to_lowercase());
            if !problems.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    s,
                    format!(
                        "may have mixed case, but should otherwise match: {}",
                        problems.join(",")
                    ),
                ));
            }
        }
    }
}

fn metadata(base: Option<&Path>, v: &Value, errs: &mut Vec<FieldError>) {
    let path = at(base, "metadata");
    let Value::Object(meta) = v else {
        errs.push(FieldError::invalid(&path, v.clone(), "must be an object"));
        return;
    };
    let mut meta = meta.clone();
    if meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        // Upstream fills in a placeholder so that a missing name passes.
        meta.insert("name".to_owned(), Value::from("fakename"));
    }
    let namespaced = meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let wrapped = Value::Object(Map::from_iter([(
        "metadata".to_owned(),
        Value::Object(meta),
    )]));
    let prefix = path.to_string();
    for mut e in object_meta::validate_object_meta(&wrapped, namespaced, name_is_path_segment) {
        if let Some(rest) = e.field.strip_prefix("metadata") {
            e.field = format!("{prefix}{rest}");
        }
        errs.push(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn embedded_type_meta_and_metadata() {
        let s = Props::from_value(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "x-kubernetes-preserve-unknown-fields": true}}}}}),
        );
        let obj =
            json!({"spec": {"template": {"kind": "bad kind", "metadata": {"labels": {"a": "-"}}}}});
        let errs: Vec<String> = validate(None, &s, &obj)
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert!(
            errs.contains(&"spec.template.apiVersion: Required value".to_owned()),
            "{errs:?}"
        );
        assert!(
            errs.iter().any(|e| e.starts_with(
                "spec.template.kind: Invalid value: \"bad kind\": may have mixed case"
            )),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.starts_with("spec.template.metadata.labels: Invalid value: \"-\"")),
            "{errs:?}"
        );
        let ok = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}});
        assert!(validate(None, &s, &ok).is_empty());
    }
}
