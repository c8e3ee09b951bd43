//! The update rules of the CSI kinds of `storage.k8s.io` (upstream's
//! `ValidateVolumeAttachmentUpdate`, `ValidateCSIDriverUpdate`,
//! `ValidateCSINodeUpdate` and `ValidateCSIStorageCapacityUpdate` in
//! pkg/apis/storage/validation), with their paths and messages.

use apimachinery::field_errors::{FieldError, Path};
use serde_json::Value;

use super::update::{
    declared_immutable, go_nullable, go_string, go_struct, immutable_field,
    immutable_label_selector, invalid_typed, semantic_eq, IMMUTABLE,
};
use super::{items, text};

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// VolumeAttachments: the spec is fixed (a beta declarative rule in 1.37,
/// so shown without its value).
pub fn validate_volume_attachment_update(new: &Value, old: &Value) -> Vec<FieldError> {
    declared_immutable(new.get("spec"), old.get("spec"), &Path::new("spec"))
        .into_iter()
        .collect()
}

/// CSIDrivers: whether attaching is required and the lifecycle modes are
/// fixed (upstream names the first path `spec.attachedRequired`).
pub fn validate_csi_driver_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let path = Path::new("spec");
    ["attachRequired", "volumeLifecycleModes"]
        .into_iter()
        .filter_map(|key| {
            let shown = if key == "attachRequired" {
                "attachedRequired"
            } else {
                key
            };
            immutable_field(spec(new).get(key), spec(old).get(key), &path.child(shown))
        })
        .collect()
}

/// CSINodes: a driver listed before keeps its node ID and topology keys
/// (its allocatable count may change); drivers may come and go.
pub fn validate_csi_node_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("drivers");
    let fixed = |driver: &Value| {
        go_struct(&[
            ("Name", go_string(driver, "name")),
            ("NodeID", go_string(driver, "nodeID")),
            ("TopologyKeys", go_nullable(driver, "topologyKeys")),
            ("Allocatable", Value::Null),
        ])
    };
    let mut errs = Vec::new();
    for old_driver in items(spec(old), "drivers") {
        let name = text(old_driver, "name");
        for new_driver in items(spec(new), "drivers") {
            let (n, o) = (fixed(new_driver), fixed(old_driver));
            if text(new_driver, "name") == name && !semantic_eq(Some(&n), Some(&o)) {
                errs.push(invalid_typed(&path, &n, IMMUTABLE));
            }
        }
    }
    errs
}

/// CSIStorageCapacities: the node topology and the storage class, the
/// inputs of the driver's GetCapacity call, are fixed.
pub fn validate_csi_storage_capacity_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (n, o) = (new.get("nodeTopology"), old.get("nodeTopology"));
    if !semantic_eq(n, o) {
        errs.push(immutable_label_selector(&Path::new("nodeTopology"), n));
    }
    let class = text(new, "storageClassName");
    if class != text(old, "storageClassName") {
        errs.push(FieldError::invalid(
            &Path::new("storageClassName"),
            class,
            IMMUTABLE,
        ));
    }
    errs
}

#[cfg(test)]
#[path = "update_storage_tests.rs"]
mod tests;
