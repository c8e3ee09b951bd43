//! ObjectMeta validation over JSON objects, as upstream's
//! `k8s.io/apimachinery/pkg/api/validation` (`ValidateObjectMetaAccessor`
//! and `ValidateObjectMetaAccessorUpdate`), plus `generateName` expansion.
//!
//! Upstream's REST handler runs the create checks twice: once with the
//! resource's own name rule inside its strategy, then once more with the
//! lenient path-segment rule for every resource
//! ([`validate_object_meta`] with [`super::name_is_path_segment`]); on
//! update it runs the create checks and then the update checks.

use serde_json::{Map, Value};

use super::options::validate_managed_fields;
use super::{is_label_value, is_qualified_name, name_is_dns_label, NameValidator};
use crate::field_errors::{ErrorList, FieldError, Path};
use crate::meta;

/// Largest total size (keys plus values) of an object's annotations.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;
/// Message for a changed immutable field.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";
/// Message for a negative count.
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";
/// The finalizer that orphans dependents on delete.
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
/// The finalizer that deletes dependents in the foreground.
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";

/// Longest generated name (upstream leaves room for the random suffix
/// under the 63-character label limit).
const MAX_GENERATED_BASE_LENGTH: usize = 58;
const RANDOM_SUFFIX_LENGTH: usize = 5;
/// Upstream's alphabet for random name suffixes (no vowels, no confusable
/// characters).
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A name made from `generate_name` as upstream's `SimpleNameGenerator`:
/// the base cut to 58 bytes plus five random characters. `random` supplies
/// random numbers (e.g. `rand::random`).
pub fn generate_name(base: &str, mut random: impl FnMut() -> u32) -> String {
    let mut cut = base.len().min(MAX_GENERATED_BASE_LENGTH);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut name = String::with_capacity(cut + RANDOM_SUFFIX_LENGTH);
    name.push_str(&base[..cut]);
    for _ in 0..RANDOM_SUFFIX_LENGTH {
        let i = random() as usize % SUFFIX_ALPHABET.len();
        name.push(char::from(SUFFIX_ALPHABET[i]));
    }
    name
}

fn str_field<'a>(meta: Option<&'a Map<String, Value>>, key: &str) -> &'a str {
    meta.and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Validates an object's metadata for create (upstream's
/// `ValidateObjectMetaAccessor`): name or generateName present and valid
/// per `name_fn`, namespace present and a DNS label exactly when
/// `namespaced`, and the common checks of labels, annotations, owner
/// references, finalizers and managed fields.
pub fn validate_object_meta(obj: &Value, namespaced: bool, name_fn: NameValidator) -> ErrorList {
    let path = Path::new("metadata");
    let meta = meta::metadata(obj);
    let mut errs = ErrorList::new();
    let generate_name = str_field(meta, "generateName");
    if !generate_name.is_empty() {
        for msg in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                generate_name,
                msg,
            ));
        }
    }
    let name = str_field(meta, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for msg in name_fn(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, msg));
        }
    }
    let namespace = str_field(meta, "namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required(&path.child("namespace"), ""));
        } else {
            for msg in name_is_dns_label(namespace, false) {
                errs.push(FieldError::invalid(
                    &path.child("namespace"),
                    namespace,
                    msg,
                ));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("namespace"),
            "not allowed on this type",
        ));
    }
    validate_generation(obj, &path, &mut errs);
    validate_labels(
        meta.and_then(|m| m.get("labels")),
        &path.child("labels"),
        &mut errs,
    );
    validate_annotations(
        meta.and_then(|m| m.get("annotations")),
        &path.child("annotations"),
        &mut errs,
    );
    validate_owner_references(obj, &path.child("ownerReferences"), &mut errs);
    validate_finalizers(obj, &path.child("finalizers"), &mut errs);
    errs.extend(validate_managed_fields(obj));
    errs
}

/// Validates an update's metadata against the stored object's (upstream's
/// `ValidateObjectMetaAccessorUpdate`): no new finalizers while deleting,
/// resourceVersion given, generation not negative or decremented, the
/// identity and lifecycle fields unchanged, and labels, annotations,
/// owner references and managed fields valid.
pub fn validate_object_meta_update(new: &Value, old: &Value) -> ErrorList {
    let path = Path::new("metadata");
    let mut errs = ErrorList::new();
    if meta::deletion_timestamp(old).is_some() {
        let old_finalizers = meta::finalizers(old);
        let mut extra: Vec<&str> = meta::finalizers(new)
            .into_iter()
            .filter(|f| !old_finalizers.contains(f))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        if !extra.is_empty() {
            errs.push(FieldError::forbidden(
                &path.child("finalizers"),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice(&extra)
                ),
            ));
        }
    }
    if meta::resource_version(new).unwrap_or("").is_empty() {
        errs.push(FieldError::invalid(
            &path.child("resourceVersion"),
            "",
            "must be specified for an update",
        ));
    }
    validate_generation(new, &path, &mut errs);
    let new_generation = meta::generation(new).unwrap_or(0);
    if new_generation < meta::generation(old).unwrap_or(0) {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            new_generation,
            "must not be decremented",
        ));
    }
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        let get = |obj: &Value| meta::metadata(obj).and_then(|m| m.get(field)).cloned();
        let (new_value, old_value) = (get(new), get(old));
        if !same_meta_value(field, new_value.as_ref(), old_value.as_ref()) {
            let shown = new_value.unwrap_or_else(|| empty_meta_value(field));
            errs.push(FieldError::invalid(
                &path.child(field),
                shown,
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    let meta = meta::metadata(new);
    validate_labels(
        meta.and_then(|m| m.get("labels")),
        &path.child("labels"),
        &mut errs,
    );
    validate_annotations(
        meta.and_then(|m| m.get("annotations")),
        &path.child("annotations"),
        &mut errs,
    );
    validate_owner_references(new, &path.child("ownerReferences"), &mut errs);
    errs.extend(validate_managed_fields(new));
    errs
}

/// How upstream shows an absent field: the Go zero value.
fn empty_meta_value(field: &str) -> Value {
    match field {
        "name" | "namespace" | "uid" => Value::from(""),
        _ => Value::Null,
    }
}

/// Compares a metadata field the way typed decoding would: absent equals
/// the empty string for string fields.
fn same_meta_value(field: &str, a: Option<&Value>, b: Option<&Value>) -> bool {
    let empty = empty_meta_value(field);
    let norm = |v: Option<&Value>| match v {
        None | Some(Value::Null) => empty.clone(),
        Some(v) => v.clone(),
    };
    norm(a) == norm(b)
}

/// Renders a list like Go's `%#v` of a `[]string`.
fn go_string_slice(items: &[&str]) -> String {
    let mut out = String::from("[]string{");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        crate::util::gofmt::push_go_quoted(&mut out, item);
    }
    out.push('}');
    out
}

fn validate_generation(obj: &Value, path: &Path, errs: &mut ErrorList) {
    if let Some(generation) = meta::generation(obj).filter(|g| *g < 0) {
        errs.push(FieldError::invalid(
            &path.child("generation"),
            generation,
            IS_NEGATIVE_ERROR_MSG,
        ));
    }
}

/// Reports non-string values of a string map; returns the string entries.
fn string_entries<'a>(
    value: Option<&'a Value>,
    path: &Path,
    errs: &mut ErrorList,
) -> Vec<(&'a str, &'a str)> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    let Some(map) = value.as_object() else {
        errs.push(FieldError::type_invalid(
            path,
            value.clone(),
            "must be of type object",
        ));
        return Vec::new();
    };
    let mut entries = Vec::with_capacity(map.len());
    for (k, v) in map {
        match v.as_str() {
            Some(s) => entries.push((k.as_str(), s)),
            None => errs.push(FieldError::type_invalid(
                &path.key(k),
                v.clone(),
                "must be of type string",
            )),
        }
    }
    entries
}

/// Label keys must be qualified names and values valid label values.
pub fn validate_labels(labels: Option<&Value>, path: &Path, errs: &mut ErrorList) {
    for (k, v) in string_entries(labels, path, errs) {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(path, k, msg));
        }
        for msg in is_label_value(v) {
            errs.push(FieldError::invalid(path, v, msg));
        }
    }
}

/// Annotation keys must be qualified names (case-insensitively) and all
/// annotations together at most 256 KiB.
pub fn validate_annotations(annotations: Option<&Value>, path: &Path, errs: &mut ErrorList) {
    let mut total = 0usize;
    for (k, v) in string_entries(annotations, path, errs) {
        for msg in is_qualified_name(&k.to_ascii_lowercase()) {
            errs.push(FieldError::invalid(path, k, msg));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(
            path,
            Some(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES),
        ));
    }
}

fn validate_owner_references(obj: &Value, path: &Path, errs: &mut ErrorList) {
    let Some(refs) = meta::owner_references(obj) else {
        return;
    };
    let mut first_controller: Option<String> = None;
    for (i, reference) in refs.iter().enumerate() {
        validate_owner_reference(reference, &path.index(i), errs);
        if reference.get("controller").and_then(Value::as_bool) == Some(true) {
            let field = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or("");
            let current = format!("{}/{}", field("kind"), field("name"));
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    Value::Array(refs.clone()),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
}

fn validate_owner_reference(reference: &Value, path: &Path, errs: &mut ErrorList) {
    let field = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or("");
    let api_version = field("apiVersion");
    let group_version = meta::GroupVersion::parse(api_version);
    if api_version.is_empty() {
        errs.push(FieldError::required(
            &path.child("apiVersion"),
            "must not be empty",
        ));
    } else if group_version
        .as_ref()
        .map_or(true, |gv| gv.version.is_empty())
    {
        errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            api_version,
            "must be <group>/<version> or <version>",
        ));
    }
    for key in ["kind", "name", "uid"] {
        if field(key).is_empty() {
            errs.push(FieldError::required(&path.child(key), "must not be empty"));
        }
    }
    let gvk = group_version.unwrap_or_default().with_kind(field("kind"));
    if gvk == meta::GroupVersionKind::new("", "v1", "Event") {
        errs.push(FieldError::invalid(
            path,
            reference.clone(),
            format!("{gvk} is disallowed from being an owner"),
        ));
    }
}

/// Upstream's `ValidateFinalizerName`: a finalizer is a qualified name.
pub fn validate_finalizer_name(name: &str, path: &Path) -> ErrorList {
    is_qualified_name(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, name, msg))
        .collect()
}

fn validate_finalizers(obj: &Value, path: &Path, errs: &mut ErrorList) {
    let finalizers = meta::finalizers(obj);
    for f in &finalizers {
        errs.extend(validate_finalizer_name(f, path));
    }
    if finalizers.contains(&FINALIZER_ORPHAN_DEPENDENTS)
        && finalizers.contains(&FINALIZER_DELETE_DEPENDENTS)
    {
        errs.push(FieldError::invalid(
            path,
            Value::from(finalizers.clone()),
            format!(
                "finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"
            ),
        ));
    }
}

#[cfg(test)]
mod tests;
