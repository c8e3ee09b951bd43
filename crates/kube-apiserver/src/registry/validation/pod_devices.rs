//! Raw block devices of a container (upstream's `ValidateVolumeDevices`):
//! each names a claim-backed volume of the pod, at a unique path without
//! backsteps, and neither name nor path is also used by a volume mount.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use serde_json::Value;

use super::pod_volumes::Volumes;
use super::{items, set, text};

/// `(name, path)` of each entry of a container's list `key`
/// (`volumeMounts` with `mountPath`, `volumeDevices` with `devicePath`).
pub(super) fn name_paths<'a>(c: &'a Value, key: &str, path_key: &str) -> Vec<(&'a str, &'a str)> {
    items(c, key)
        .iter()
        .map(|entry| (text(entry, "name"), text(entry, path_key)))
        .collect()
}

/// Validates `volumeDevices` of the container `c`.
pub(super) fn validate_devices(
    c: &Value,
    volumes: &Volumes<'_>,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let mounts = name_paths(c, "volumeMounts", "mountPath");
    let mut names = HashSet::new();
    let mut paths = HashSet::new();
    for (i, device) in items(c, "volumeDevices").iter().enumerate() {
        let idx = path.index(i);
        let (name_path, device_path) = (idx.child("name"), idx.child("devicePath"));
        let name = text(device, "name");
        let dev = text(device, "devicePath");
        if name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        }
        if names.contains(name) {
            errs.push(FieldError::invalid(&name_path, name, "must be unique"));
        }
        match volumes.get(name) {
            Some(volume) if !is_claim_backed(volume) => errs.push(FieldError::invalid(
                &name_path,
                name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            )),
            Some(_) => {}
            None => errs.push(FieldError::not_found(&name_path, name)),
        }
        if dev.is_empty() {
            errs.push(FieldError::required(&device_path, ""));
        }
        if paths.contains(dev) {
            errs.push(FieldError::invalid(&device_path, dev, "must be unique"));
        }
        if !dev.is_empty() && dev.split('/').any(|part| part == "..") {
            errs.push(FieldError::invalid(
                &device_path,
                dev,
                "can not contain backsteps ('..')",
            ));
        } else {
            paths.insert(dev);
        }
        if mounts.iter().any(|(n, _)| *n == name) {
            errs.push(FieldError::invalid(
                &name_path,
                name,
                "must not already exist in volumeMounts",
            ));
        }
        if mounts.iter().any(|(_, p)| *p == dev) {
            errs.push(FieldError::invalid(
                &device_path,
                dev,
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !name.is_empty() {
            names.insert(name);
        }
    }
}

/// A volume from a PersistentVolumeClaim or a generic ephemeral volume.
fn is_claim_backed(volume: &Value) -> bool {
    set(volume, "persistentVolumeClaim").is_some() || set(volume, "ephemeral").is_some()
}
