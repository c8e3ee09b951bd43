//! Checks of custom resources beyond their schema, as upstream's custom
//! resource validator makes them: type meta matching the served kind, the
//! scale subresource's replica paths, and warnings about finalizer names.

use apimachinery::validation::is_qualified_name;
use apimachinery::{FieldError, Path};
use serde_json::Value;

use apimachinery::util::gofmt::{go_float, go_quote};

/// `kind` and `apiVersion` must name the served kind (`group/version`).
pub fn validate_type_meta(obj: &Value, group: &str, version: &str, kind: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let text = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    if text("kind") != kind {
        errs.push(FieldError::invalid(
            &Path::new("kind"),
            text("kind"),
            format!("must be {kind}"),
        ));
    }
    let api_version = format!("{group}/{version}");
    if text("apiVersion") != api_version {
        errs.push(FieldError::invalid(
            &Path::new("apiVersion"),
            text("apiVersion"),
            format!("must be {api_version}"),
        ));
    }
    errs
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `%v` of a decoded JSON value (enough for accessor errors).
fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n
            .as_i64()
            .map_or_else(|| go_float(n.as_f64().unwrap_or(0.0)), |i| i.to_string()),
        other => other.to_string(),
    }
}

/// The value at a `.a.b` path as upstream's `unstructured.NestedFieldNoCopy`
/// finds it: `Ok(None)` when absent, an accessor error when a parent is
/// not an object.
fn nested<'a>(obj: &'a Value, json_path: &str) -> Result<Option<&'a Value>, String> {
    let fields: Vec<&str> = json_path.trim_start_matches('.').split('.').collect();
    let mut current = obj;
    for (i, field) in fields.iter().enumerate() {
        let Value::Object(map) = current else {
            let at = format!(".{}", fields[..i].join("."));
            return Err(format!(
                "{at} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                go_value(current),
                go_type(current)
            ));
        };
        match map.get(*field) {
            Some(v) => current = v,
            None => return Ok(None),
        }
    }
    Ok(Some(current))
}

fn nested_int(obj: &Value, json_path: &str) -> Result<i64, String> {
    match nested(obj, json_path)? {
        None => Ok(0),
        Some(v) => v.as_i64().filter(|_| v.is_i64()).ok_or_else(|| {
            format!(
                ".{} accessor error: {} is of the type {}, expected int64",
                json_path.trim_start_matches('.'),
                go_value(v),
                go_type(v)
            )
        }),
    }
}

fn replicas(obj: &Value, json_path: &str) -> Option<FieldError> {
    let path = Path::new(json_path);
    match nested_int(obj, json_path) {
        Err(e) => Some(FieldError::invalid(&path, 0, e)),
        Ok(n) if n < 0 => Some(FieldError::invalid(
            &path,
            n,
            "should be a non-negative integer",
        )),
        Ok(n) if n > i64::from(i32::MAX) => Some(FieldError::invalid(
            &path,
            n,
            format!("should be less than or equal to {}", i32::MAX),
        )),
        Ok(_) => None,
    }
}

/// The scale subresource's spec replicas: a non-negative int32.
pub fn validate_scale_spec(obj: &Value, spec_replicas_path: &str) -> Vec<FieldError> {
    replicas(obj, spec_replicas_path).into_iter().collect()
}

/// The scale subresource's status replicas (a non-negative int32) and label
/// selector (a string).
pub fn validate_scale_status(
    obj: &Value,
    status_replicas_path: &str,
    label_selector_path: Option<&str>,
) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = replicas(obj, status_replicas_path).into_iter().collect();
    if let Some(selector_path) = label_selector_path.filter(|p| !p.is_empty()) {
        let found = nested(obj, selector_path).and_then(|v| match v {
            Some(Value::String(_)) | None => Ok(()),
            Some(other) => Err(format!(
                ".{} accessor error: {} is of the type {}, expected string",
                selector_path.trim_start_matches('.'),
                go_value(other),
                go_type(other)
            )),
        });
        if let Err(e) = found {
            errs.push(FieldError::invalid(&Path::new(selector_path), "", e));
        }
    }
    errs
}

const STANDARD_FINALIZERS: [&str; 3] = ["orphan", "foregroundDeletion", "kubernetes"];

/// Warnings for finalizers added by a create (`old` `None`) or update that
/// are not domain-qualified.
pub fn finalizer_warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let finalizers = |v: &Value| -> Vec<String> {
        v.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = old.map(finalizers).unwrap_or_default();
    let mut added: Vec<String> = finalizers(obj)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    added.sort();
    added.dedup();
    let mut out = Vec::new();
    for f in added {
        let quoted = go_quote(&f);
        for msg in is_qualified_name(&f) {
            out.push(format!("metadata.finalizers: {quoted}: {msg}"));
        }
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
            let advice = if f.contains('.') {
                "prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            } else {
                "prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            };
            out.push(format!("metadata.finalizers: {quoted}: {advice}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn type_meta_must_match() {
        let obj = json!({"apiVersion": "a.io/v2", "kind": "Other"});
        assert_eq!(
            msgs(validate_type_meta(&obj, "a.io", "v1", "Thing")),
            vec![
                r#"kind: Invalid value: "Other": must be Thing"#,
                r#"apiVersion: Invalid value: "a.io/v2": must be a.io/v1"#,
            ]
        );
    }

    #[test]
    fn scale_paths() {
        let obj = json!({"spec": {"replicas": -1}, "status": {"replicas": "x", "selector": 5}});
        assert_eq!(
            msgs(validate_scale_spec(&obj, ".spec.replicas")),
            vec![".spec.replicas: Invalid value: -1: should be a non-negative integer"]
        );
        assert_eq!(
            msgs(validate_scale_status(&obj, ".status.replicas", Some(".status.selector"))),
            vec![
                ".status.replicas: Invalid value: 0: .status.replicas accessor error: x is of the type string, expected int64",
                r#".status.selector: Invalid value: "": .status.selector accessor error: 5 is of the type int64, expected string"#,
            ]
        );
        assert!(validate_scale_spec(&json!({}), ".spec.replicas").is_empty());
    }

    #[test]
    fn finalizer_name_warnings() {
        let obj = json!({"metadata": {"finalizers": ["kubernetes", "mine", "a.io/x", "b.io"]}});
        assert_eq!(
            finalizer_warnings(&obj, None),
            vec![
                r#"metadata.finalizers: "b.io": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"#,
                r#"metadata.finalizers: "mine": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"#,
            ]
        );
        assert!(finalizer_warnings(&obj, Some(&obj)).is_empty());
    }
}
