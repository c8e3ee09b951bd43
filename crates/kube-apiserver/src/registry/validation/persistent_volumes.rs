//! Create and update rules of PersistentVolumes (upstream's
//! `ValidatePersistentVolume` and `ValidatePersistentVolumeSpec` in
//! pkg/apis/core/validation/validation.go, then pkg/volume/validation's
//! mount-option check), with upstream's paths and messages; the sources'
//! own rules are in `persistent_volume_sources`, the update-only rules in
//! `update_volumes`.
//!
//! Options as upstream has them: VolumeAttributesClass on (GA), node
//! affinity label values checked unless the stored volume already had an
//! invalid one.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::{is_label_value, name_is_dns_subdomain};
use serde_json::{Map, Value};

use super::persistent_volume_claims::{access_modes, class_name, VOLUME_MODES};
use super::persistent_volume_sources::validate_sources;
use super::pod_scheduling::node_selector;
use super::pod_volumes::quantity;
use super::{invalid_all, items, set, text};

const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];
const MOUNT_OPTIONS_ANNOTATION: &str = "volume.beta.kubernetes.io/mount-options";
/// The sources the deprecated mount-options annotation may be used with.
const MOUNTABLE: &[&str] = &[
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "nfs",
    "rbd",
    "quobyte",
    "iscsi",
    "cinder",
    "cephfs",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
];

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// A new PersistentVolume.
pub fn validate_pv(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_pv_spec(obj, false);
    mount_options(obj, &mut errs);
    errs
}

/// An updated PersistentVolume: the new object's rules (node affinity
/// label values as lax as the stored volume's), then the update rules.
pub fn validate_pv_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let lax = spec(old)
        .pointer("/nodeAffinity/required")
        .is_some_and(has_invalid_label_value);
    let mut errs = validate_pv_spec(new, lax);
    errs.extend(super::update_volumes::validate_pv_update(new, old));
    mount_options(new, &mut errs);
    errs
}

/// Upstream's `ValidatePersistentVolumeSpec` of a PersistentVolume object.
fn validate_pv_spec(obj: &Value, lax_affinity: bool) -> Vec<FieldError> {
    let (spec, path) = (spec(obj), Path::new("spec"));
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut errs = Vec::new();
    let modes = items(spec, "accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(&path.child("accessModes"), ""));
    }
    access_modes(modes, &path.child("accessModes"), &mut errs);
    capacity(spec, &path.child("capacity"), &mut errs);
    let policy = text(spec, "persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !RECLAIM_POLICIES.contains(&policy) {
        let at = path.child("persistentVolumeReclaimPolicy");
        errs.push(FieldError::not_supported(&at, policy, RECLAIM_POLICIES));
    }
    let affinity = set(spec, "nodeAffinity");
    if let Some(affinity) = affinity {
        let at = path.child("nodeAffinity");
        match set(affinity, "required") {
            Some(required) => {
                node_selector(required, lax_affinity, &at.child("required"), &mut errs)
            }
            None => errs.push(FieldError::required(
                &at.child("required"),
                "must specify required node constraints",
            )),
        }
    }
    if validate_sources(spec, name, &path, &mut errs) && affinity.is_none() {
        let msg = "Local volume requires node affinity";
        errs.push(FieldError::required(&path.child("nodeAffinity"), msg));
    }
    let host = spec.pointer("/hostPath/path").and_then(Value::as_str);
    if host.is_some_and(cleans_to_root) && policy == "Recycle" {
        let at = path.child("persistentVolumeReclaimPolicy");
        let msg = "may not be 'recycle' for a hostPath mount of '/'";
        errs.push(FieldError::forbidden(&at, msg));
    }
    classes_and_mode(spec, &path, &mut errs);
    errs
}

/// `capacity` holds `storage` alone, and a positive amount of it.
fn capacity(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let list = spec.get("capacity").and_then(Value::as_object);
    let len = list.map_or(0, Map::len);
    if len == 0 {
        errs.push(FieldError::required(path, ""));
    }
    if !list.is_some_and(|l| l.contains_key("storage")) || len > 1 {
        // Go shows the resource list as JSON: canonical quantities.
        let shown = list.map_or(Value::Null, |l| {
            let canonical = |v: &Value| quantity(v).map_or(v.clone(), |q| q.canonical().into());
            Value::Object(l.iter().map(|(k, v)| (k.clone(), canonical(v))).collect())
        });
        errs.push(FieldError::not_supported(path, shown, &["storage"]));
    }
    for (name, value) in list.into_iter().flatten() {
        let Some(q) = quantity(value) else {
            continue;
        };
        let at = path.key(name);
        let whole = q
            .value()
            .unwrap_or(if q.is_negative() { i64::MIN } else { i64::MAX });
        if whole < 0 {
            errs.push(FieldError::invalid(
                &at,
                whole,
                "must be a valid resource quantity",
            ));
        }
        if q.is_negative() || q.is_zero() {
            errs.push(FieldError::invalid(
                &at,
                q.canonical(),
                "must be greater than zero",
            ));
        }
    }
}

/// Storage class, volume mode and volume attributes class.
fn classes_and_mode(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    class_name(spec, "storageClassName", path, errs);
    if let Some(mode) = set(spec, "volumeMode").and_then(Value::as_str) {
        if !VOLUME_MODES.contains(&mode) {
            let at = path.child("volumeMode");
            errs.push(FieldError::not_supported(&at, mode, VOLUME_MODES));
        }
    }
    let Some(attributes) = set(spec, "volumeAttributesClassName") else {
        return;
    };
    let attributes = attributes.as_str().unwrap_or_default();
    let at = path.child("volumeAttributesClassName");
    if attributes.is_empty() {
        errs.push(FieldError::required(&at, "an empty string is disallowed"));
    } else {
        invalid_all(
            &at,
            attributes,
            name_is_dns_subdomain(attributes, false),
            errs,
        );
    }
    if set(spec, "csi").is_none() {
        let msg = "has to be specified when using volumeAttributesClassName";
        errs.push(FieldError::required(&path.child("csi"), msg));
    }
}

/// Whether Go's `path.Clean` makes `p` the root directory.
fn cleans_to_root(p: &str) -> bool {
    let Some(rest) = p.strip_prefix('/') else {
        return false;
    };
    let depth = rest.split('/').fold(0usize, |depth, part| match part {
        "" | "." => depth,
        ".." => depth.saturating_sub(1),
        _ => depth + 1,
    });
    depth == 0
}

/// Upstream's `HasInvalidLabelValueInNodeSelectorTerms`.
fn has_invalid_label_value(selector: &Value) -> bool {
    items(selector, "nodeSelectorTerms").iter().any(|term| {
        items(term, "matchExpressions").iter().any(|req| {
            items(req, "values")
                .iter()
                .any(|v| !is_label_value(v.as_str().unwrap_or_default()).is_empty())
        })
    })
}

/// pkg/volume/validation's `checkMountOption`: the deprecated
/// mount-options annotation only on sources that take mount options.
fn mount_options(obj: &Value, errs: &mut Vec<FieldError>) {
    let annotated = obj
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MOUNT_OPTIONS_ANNOTATION));
    let mountable = MOUNTABLE.iter().any(|key| set(spec(obj), key).is_some());
    if annotated && !mountable {
        let at = Path::new("metadata")
            .child("annotations")
            .child(MOUNT_OPTIONS_ANNOTATION);
        let msg = "may not specify mount options for this volume type";
        errs.push(FieldError::forbidden(&at, msg));
    }
}

#[cfg(test)]
#[path = "persistent_volumes_tests.rs"]
mod tests;
