//! The CRD strategy's steps around validation: v1 defaulting, the
//! preparation of creates and updates, status-update validation and the
//! warnings upstream returns (unrecognized formats, `set` lists of
//! non-scalars).

use apimachinery::validation::object_meta;
use apimachinery::{FieldError, Path};
use serde_json::{json, Map, Value};

use crate::crd_parts::validate_names;
use crate::formats;
use crate::props::Props;

fn object(v: &mut Value) -> Option<&mut Map<String, Value>> {
    if !v.is_object() {
        *v = json!({});
    }
    v.as_object_mut()
}

fn storage_version(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
        .get("name")?
        .as_str()
        .map(str::to_owned)
}

fn record_storage_version(crd: &mut Value) {
    let Some(storage) = storage_version(crd) else {
        return;
    };
    let Some(status) = crd
        .as_object_mut()
        .and_then(|m| object(m.entry("status").or_insert(json!({}))))
    else {
        return;
    };
    let stored = status.entry("storedVersions").or_insert(json!([]));
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(list) = stored.as_array_mut() {
        if !list.iter().any(|v| v.as_str() == Some(storage.as_str())) {
            list.push(Value::String(storage));
        }
    }
}

/// The v1 defaults: singular and listKind from kind, conversion strategy
/// None, webhook service port 443, storedVersions from the storage version.
pub fn apply_crd_defaults(crd: &mut Value) {
    if let Some(names) = crd
        .pointer_mut("/spec/names")
        .and_then(Value::as_object_mut)
    {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let empty = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").is_empty();
        if empty(names.get("singular")) {
            names.insert("singular".to_owned(), kind.to_lowercase().into());
        }
        if empty(names.get("listKind")) && !kind.is_empty() {
            names.insert("listKind".to_owned(), format!("{kind}List").into());
        }
    }
    if let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) {
        if spec.get("conversion").is_none_or(Value::is_null) {
            spec.insert("conversion".to_owned(), json!({"strategy": "None"}));
        }
    }
    if let Some(service) = crd
        .pointer_mut("/spec/conversion/webhook/clientConfig/service")
        .and_then(Value::as_object_mut)
    {
        service.entry("port").or_insert(json!(443));
    }
    let has_stored = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !has_stored {
        record_storage_version(crd);
    }
}

/// Upstream's PrepareForCreate: status cleared, generation 1, the storage
/// version recorded in `status.storedVersions`.
pub fn prepare_for_create(crd: &mut Value) {
    let Some(map) = crd.as_object_mut() else {
        return;
    };
    map.insert("status".to_owned(), json!({}));
    if let Some(meta) = object(map.entry("metadata").or_insert(json!({}))) {
        meta.insert("generation".to_owned(), json!(1));
    }
    record_storage_version(crd);
}

/// Upstream's PrepareForUpdate: status kept from the old object, generation
/// bumped when the spec changed, the storage version recorded.
pub fn prepare_for_update(new: &mut Value, old: &Value) {
    let Some(map) = new.as_object_mut() else {
        return;
    };
    map.insert(
        "status".to_owned(),
        old.get("status").cloned().unwrap_or(json!({})),
    );
    let old_generation = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let generation = if map.get("spec") != old.get("spec") {
        old_generation + 1
    } else {
        old_generation
    };
    if let Some(meta) = object(map.entry("metadata").or_insert(json!({}))) {
        meta.insert("generation".to_owned(), json!(generation));
    }
    record_storage_version(new);
}

/// Validation of a status update: metadata update rules and the accepted
/// names.
pub fn validate_crd_status_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta_update(new, old);
    let accepted = new.pointer("/status/acceptedNames");
    errs.extend(validate_names(
        accepted,
        &Path::new("status").child("acceptedNames"),
        false,
    ));
    errs
}

fn schemas(crd: &Value) -> Vec<Props> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
                .map(Props::from_value)
                .collect()
        })
        .unwrap_or_default()
}

fn unrecognized_formats(crd: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for schema in schemas(crd) {
        schema.any(&mut |s| {
            if !s.format.is_empty() {
                let known = match s.ty.as_str() {
                    "" | "string" => formats::is_supported(&s.format),
                    "integer" => matches!(s.format.as_str(), "int32" | "int64"),
                    "number" => matches!(s.format.as_str(), "float" | "double"),
                    _ => false,
                };
                if !known {
                    out.push(s.format.clone());
                }
            }
            false
        });
    }
    out
}

fn set_list_warnings(crd: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for schema in schemas(crd) {
        schema.any(&mut |s| {
            if s.x_list_type.as_deref() == Some("set") {
                if let Some(ty) = s.items_schema().map(|i| i.ty.as_str()).filter(|t| *t == "object" || *t == "array") {
                    out.push(format!(
                        "x-kubernetes-list-type: set for items of type \"{ty}\" is not supported by server-side apply or CEL validation rules"
                    ));
                }
            }
            false
        });
    }
    out.sort();
    out.dedup();
    out
}

/// Warnings for a created CRD.
pub fn warnings_on_create(crd: &Value) -> Vec<String> {
    let mut out: Vec<String> = unrecognized_formats(crd)
        .iter()
        .map(|f| format!("unrecognized format \"{f}\""))
        .collect();
    out.extend(set_list_warnings(crd));
    out
}

/// Warnings for an updated CRD: only what the update introduces.
pub fn warnings_on_update(new: &Value, old: &Value) -> Vec<String> {
    let old_formats = unrecognized_formats(old);
    let mut out: Vec<String> = unrecognized_formats(new)
        .into_iter()
        .filter(|f| !old_formats.contains(f))
        .map(|f| format!("unrecognized format \"{f}\""))
        .collect();
    let old_sets = set_list_warnings(old);
    out.extend(
        set_list_warnings(new)
            .into_iter()
            .filter(|w| !old_sets.contains(w)),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({"metadata": {"name": "as.a.io", "generation": 3},
               "spec": {"group": "a.io", "names": {"kind": "Thing", "plural": "things"},
                        "versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true,
                            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                "a": {"type": "string", "format": "colour"},
                                "b": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}}}}]},
               "status": {"storedVersions": ["v1"], "acceptedNames": {"kind": "Thing"}}})
    }

    #[test]
    fn defaults_fill_names_conversion_and_stored_versions() {
        let mut c = crd();
        c["status"] = json!({});
        apply_crd_defaults(&mut c);
        assert_eq!(c["spec"]["names"]["singular"], json!("thing"));
        assert_eq!(c["spec"]["names"]["listKind"], json!("ThingList"));
        assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(c["status"]["storedVersions"], json!(["v2"]));
    }

    #[test]
    fn prepare_create_and_update() {
        let mut c = crd();
        prepare_for_create(&mut c);
        assert_eq!(c["status"], json!({"storedVersions": ["v2"]}));
        assert_eq!(c["metadata"]["generation"], json!(1));

        let old = crd();
        let mut new = crd();
        new["status"] = json!({});
        new["spec"]["names"]["shortNames"] = json!(["th"]);
        prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], json!(4));
        assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]));
    }

    #[test]
    fn warnings() {
        assert_eq!(
            warnings_on_create(&crd()),
            vec![
                "unrecognized format \"colour\"".to_owned(),
                "x-kubernetes-list-type: set for items of type \"object\" is not supported by server-side apply or CEL validation rules".to_owned(),
            ]
        );
        assert!(warnings_on_update(&crd(), &crd()).is_empty());
    }
}
