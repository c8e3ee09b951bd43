//! Create and update rules of PersistentVolumeClaims (upstream's
//! `ValidatePersistentVolumeClaim` and `ValidatePersistentVolumeClaimSpec`
//! in pkg/apis/core/validation/validation.go), with upstream's paths and
//! messages; the update-only rules are `update::validate_pvc_update`.
//!
//! Options as upstream has them: VolumeAttributesClass on (GA); label
//! selector values checked unless the stored claim's selector already
//! failed, data source API groups unless the stored claim named one.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::selectors::{validate_label_selector, LabelSelectorOptions};
use apimachinery::validation::{is_dns1123_label, name_is_dns_subdomain};
use serde_json::{json, Value};

use super::pod_volumes::quantity;
use super::{invalid_all, items, text};

/// Upstream's `supportedAccessModes`, sorted as `sets.List` prints them.
const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
pub(super) const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

/// Upstream's `PersistentVolumeClaimSpecValidationOptions` that an update
/// takes from the stored claim, so what was accepted before stays so.
#[derive(Default, Clone, Copy)]
struct Options {
    /// The stored selector has an invalid label value.
    lax_selector: bool,
    /// The stored claim names an API group in a data source (upstream's
    /// `allowInvalidAPIGroupInDataSourceOrRef`).
    lax_api_group: bool,
}

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// A new PersistentVolumeClaim.
pub fn validate_pvc(obj: &Value) -> Vec<FieldError> {
    validate_pvc_spec(spec(obj), &Path::new("spec"), Options::default())
}

/// An updated PersistentVolumeClaim: the new claim's rules, as lax as the
/// stored claim needs (upstream's `ValidationOptionsForPersistentVolumeClaim`),
/// then the update rules.
pub fn validate_pvc_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let old_spec = spec(old);
    let selector = old_spec.get("selector").filter(|s| !s.is_null());
    let strict = LabelSelectorOptions::default();
    let opts = Options {
        lax_selector: !validate_label_selector(selector, strict, &Path::new("spec")).is_empty(),
        lax_api_group: ["dataSource", "dataSourceRef"].iter().any(|key| {
            old_spec
                .get(*key)
                .and_then(|s| s.get("apiGroup"))
                .is_some_and(|g| !g.is_null())
        }),
    };
    let mut errs = validate_pvc_spec(spec(new), &Path::new("spec"), opts);
    errs.extend(super::update::validate_pvc_update(new, old));
    errs
}

/// Upstream's `ValidatePersistentVolumeClaimSpec`.
fn validate_pvc_spec(spec: &Value, path: &Path, opts: Options) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let modes = items(spec, "accessModes");
    if modes.is_empty() {
        let msg = "at least 1 access mode is required";
        errs.push(FieldError::required(&path.child("accessModes"), msg));
    }
    let selector = spec.get("selector").filter(|s| !s.is_null());
    let selector_opts = LabelSelectorOptions {
        allow_invalid_label_value: opts.lax_selector,
        ..LabelSelectorOptions::default()
    };
    errs.extend(validate_label_selector(
        selector,
        selector_opts,
        &path.child("selector"),
    ));
    access_modes(modes, &path.child("accessModes"), &mut errs);
    storage_request(spec, &path.child("resources"), &mut errs);
    class_name(spec, "storageClassName", path, &mut errs);
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str) {
        if !VOLUME_MODES.contains(&mode) {
            let at = path.child("volumeMode");
            errs.push(FieldError::not_supported(&at, mode, VOLUME_MODES));
        }
    }
    data_sources(spec, path, opts.lax_api_group, &mut errs);
    class_name(spec, "volumeAttributesClassName", path, &mut errs);
    errs
}

pub(super) fn access_modes(modes: &[Value], path: &Path, errs: &mut Vec<FieldError>) {
    let (mut once_pod, mut others) = (false, false);
    for mode in modes {
        let mode = mode.as_str().unwrap_or_default();
        if !ACCESS_MODES.contains(&mode) {
            errs.push(FieldError::not_supported(path, mode, ACCESS_MODES));
        } else if mode == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            others = true;
        }
    }
    if once_pod && others {
        let msg = "may not use ReadWriteOncePod with other access modes";
        errs.push(FieldError::forbidden(path, msg));
    }
}

/// `resources.requests[storage]`: present and greater than zero.
fn storage_request(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let at = path.key("storage");
    let Some(value) = spec.pointer("/resources/requests/storage") else {
        errs.push(FieldError::required(&at, ""));
        return;
    };
    if let Some(q) = quantity(value) {
        if q.is_negative() || q.is_zero() {
            errs.push(FieldError::invalid(
                &at,
                q.to_string(),
                "must be greater than zero",
            ));
        }
    }
}

/// Upstream's `ValidateClassName` of a non-empty class name.
pub(super) fn class_name(spec: &Value, key: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let name = text(spec, key);
    if !name.is_empty() {
        invalid_all(
            &path.child(key),
            name,
            name_is_dns_subdomain(name, false),
            errs,
        );
    }
}

fn data_sources(spec: &Value, path: &Path, lax_api_group: bool, errs: &mut Vec<FieldError>) {
    let source = spec.get("dataSource").filter(|s| s.is_object());
    let source_ref = spec.get("dataSourceRef").filter(|s| s.is_object());
    if let Some(source) = source {
        data_source(source, &path.child("dataSource"), lax_api_group, errs);
    }
    let Some(source_ref) = source_ref else {
        return;
    };
    let at = path.child("dataSourceRef");
    data_source(source_ref, &at, lax_api_group, errs);
    let namespace = text(source_ref, "namespace");
    if !namespace.is_empty() {
        for msg in is_dns1123_label(namespace) {
            errs.push(FieldError::invalid(&at.child("namespace"), namespace, msg));
        }
    }
    // Go renders the *field.Path it passes as the value as JSON: `{}`.
    match source {
        Some(_) if !namespace.is_empty() => errs.push(FieldError::invalid(
            path,
            json!({}),
            "may not be specified when dataSourceRef.namespace is specified",
        )),
        Some(source) if !same_source(source, source_ref) => {
            errs.push(FieldError::invalid(
                path,
                json!({}),
                "must match dataSourceRef",
            ));
        }
        _ => {}
    }
}

/// Upstream's `validateDataSource`/`validateDataSourceRef` (without the
/// namespace): name and kind set, a core kind only PersistentVolumeClaim,
/// a group a DNS subdomain.
fn data_source(source: &Value, path: &Path, lax_api_group: bool, errs: &mut Vec<FieldError>) {
    let (name, kind) = (text(source, "name"), text(source, "kind"));
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    if kind.is_empty() {
        errs.push(FieldError::required(&path.child("kind"), ""));
    }
    let group = text(source, "apiGroup");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        let msg = "must be 'PersistentVolumeClaim' when referencing the default apiGroup";
        errs.push(FieldError::invalid(path, kind, msg));
    }
    if !group.is_empty() && !lax_api_group {
        let msgs = apimachinery::validation::is_dns1123_subdomain(group);
        invalid_all(&path.child("apiGroup"), group, msgs, errs);
    }
}

/// Upstream's `isDataSourceEqualDataSourceRef`: the same group (both unset
/// counts as equal), kind and name.
fn same_source(source: &Value, source_ref: &Value) -> bool {
    source.get("apiGroup").filter(|g| !g.is_null())
        == source_ref.get("apiGroup").filter(|g| !g.is_null())
        && text(source, "kind") == text(source_ref, "kind")
        && text(source, "name") == text(source_ref, "name")
}

#[cfg(test)]
#[path = "persistent_volume_claims_tests.rs"]
mod tests;
