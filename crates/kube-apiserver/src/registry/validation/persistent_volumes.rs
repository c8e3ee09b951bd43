//! Create and update rules of PersistentVolumes (upstream's
//! `ValidatePersistentVolume` and `ValidatePersistentVolumeSpec` in
//! pkg/apis/core/validation/validation.go, then pkg/volume/validation's
//! mount-option check) and of the inline volume specs of VolumeAttachments,
//! with upstream's paths and messages; the sources' own rules are in
//! `persistent_volume_sources`, the update-only rules in `update_volumes`.
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

const INLINE: &str = "may not be specified in the context of inline volumes";

/// The options of upstream's `ValidatePersistentVolumeSpec`.
#[derive(Default, Clone, Copy)]
struct SpecOptions {
    /// An inline spec (a VolumeAttachment's `inlineVolumeSpec`).
    inline: bool,
    /// Node affinity label values as lax as a stored volume's.
    lax_affinity: bool,
    /// VolumeAttributesClass checked (PersistentVolume objects).
    attributes_class: bool,
}

fn name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A new PersistentVolume.
pub fn validate_pv(obj: &Value) -> Vec<FieldError> {
    let opts = SpecOptions {
        attributes_class: true,
        ..SpecOptions::default()
    };
    let mut errs = validate_pv_spec(spec(obj), name(obj), &Path::new("spec"), opts);
    mount_options(obj, &mut errs);
    errs
}

/// An updated PersistentVolume: the new object's rules (node affinity
/// label values as lax as the stored volume's), then the update rules.
pub fn validate_pv_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let opts = SpecOptions {
        lax_affinity: spec(old)
            .pointer("/nodeAffinity/required")
            .is_some_and(has_invalid_label_value),
        attributes_class: true,
        ..SpecOptions::default()
    };
    let mut errs = validate_pv_spec(spec(new), name(new), &Path::new("spec"), opts);
    errs.extend(super::update_volumes::validate_pv_update(new, old));
    mount_options(new, &mut errs);
    errs
}

/// A write to a PersistentVolume's status (upstream's
/// `ValidatePersistentVolumeStatusUpdate`): only the metadata rules, which
/// every update gets; the spec, kept as stored, is not checked again.
pub fn validate_pv_status_update(_new: &Value, _old: &Value) -> Vec<FieldError> {
    Vec::new()
}

/// A VolumeAttachment's `inlineVolumeSpec` (upstream passes no volume
/// name and default options).
pub(super) fn validate_inline_pv_spec(spec: &Value, path: &Path) -> Vec<FieldError> {
    let opts = SpecOptions {
        inline: true,
        ..SpecOptions::default()
    };
    validate_pv_spec(spec, "", path, opts)
}

/// Upstream's `ValidatePersistentVolumeSpec`.
fn validate_pv_spec(spec: &Value, name: &str, path: &Path, opts: SpecOptions) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if opts.inline {
        // A set claim reference, or any capacity entry.
        let capacity = spec.get("capacity").and_then(Value::as_object);
        for (key, given) in [
            ("claimRef", set(spec, "claimRef").is_some()),
            ("capacity", capacity.is_some_and(|c| !c.is_empty())),
        ] {
            if given {
                errs.push(FieldError::forbidden(&path.child(key), INLINE));
            }
        }
        if set(spec, "csi").is_none() {
            let msg = "has to be specified in the context of inline volumes";
            errs.push(FieldError::required(&path.child("csi"), msg));
        }
    }
    let modes = items(spec, "accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(&path.child("accessModes"), ""));
    }
    access_modes(modes, &path.child("accessModes"), &mut errs);
    if !opts.inline {
        capacity(spec, &path.child("capacity"), &mut errs);
    }
    reclaim_policy(spec, path, opts.inline, &mut errs);
    let affinity = node_affinity(spec, path, opts, &mut errs);
    if validate_sources(spec, name, path, &mut errs) && !affinity {
        let msg = "Local volume requires node affinity";
        errs.push(FieldError::required(&path.child("nodeAffinity"), msg));
    }
    let host = spec.pointer("/hostPath/path").and_then(Value::as_str);
    if host.is_some_and(cleans_to_root) && text(spec, "persistentVolumeReclaimPolicy") == "Recycle"
    {
        let at = path.child("persistentVolumeReclaimPolicy");
        let msg = "may not be 'recycle' for a hostPath mount of '/'";
        errs.push(FieldError::forbidden(&at, msg));
    }
    classes_and_mode(spec, path, opts, &mut errs);
    errs
}

fn reclaim_policy(spec: &Value, path: &Path, inline: bool, errs: &mut Vec<FieldError>) {
    let policy = text(spec, "persistentVolumeReclaimPolicy");
    let at = path.child("persistentVolumeReclaimPolicy");
    if policy.is_empty() {
        return;
    }
    if inline && policy != "Retain" {
        let msg = "may only be Retain in the context of inline volumes";
        errs.push(FieldError::forbidden(&at, msg));
    } else if !inline && !RECLAIM_POLICIES.contains(&policy) {
        errs.push(FieldError::not_supported(&at, policy, RECLAIM_POLICIES));
    }
}

/// Upstream's `validateVolumeNodeAffinity`; returns whether the volume
/// has node affinity that counts (an inline spec's never does).
fn node_affinity(spec: &Value, path: &Path, opts: SpecOptions, errs: &mut Vec<FieldError>) -> bool {
    let Some(affinity) = set(spec, "nodeAffinity") else {
        return false;
    };
    let at = path.child("nodeAffinity");
    if opts.inline {
        errs.push(FieldError::forbidden(&at, INLINE));
        return false;
    }
    match set(affinity, "required") {
        Some(required) => node_selector(required, opts.lax_affinity, &at.child("required"), errs),
        None => errs.push(FieldError::required(
            &at.child("required"),
            "must specify required node constraints",
        )),
    }
    true
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
fn classes_and_mode(spec: &Value, path: &Path, opts: SpecOptions, errs: &mut Vec<FieldError>) {
    if opts.inline && !text(spec, "storageClassName").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("storageClassName"),
            INLINE,
        ));
    } else if !opts.inline {
        class_name(spec, "storageClassName", path, errs);
    }
    if let Some(mode) = set(spec, "volumeMode").and_then(Value::as_str) {
        let at = path.child("volumeMode");
        if opts.inline && mode != "Filesystem" {
            let msg =
                "may not specify volumeMode other than Filesystem in the context of inline volumes";
            errs.push(FieldError::forbidden(&at, msg));
        } else if !opts.inline && !VOLUME_MODES.contains(&mode) {
            errs.push(FieldError::not_supported(&at, mode, VOLUME_MODES));
        }
    }
    let Some(attributes) = set(spec, "volumeAttributesClassName").filter(|_| opts.attributes_class)
    else {
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
