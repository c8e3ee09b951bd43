//! Create (and update) rules of the `storage.k8s.io` kinds (upstream's
//! `ValidateStorageClass`, `ValidateVolumeAttributesClass`,
//! `ValidateCSIDriver`, `ValidateCSINode`, `ValidateVolumeAttachment` (with
//! its v1 extra checks) and `ValidateCSIStorageCapacity` in
//! pkg/apis/storage/validation), with upstream's paths and messages.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::object_meta::IS_NEGATIVE_ERROR_MSG;
use apimachinery::validation::selectors::{validate_label_selector, LabelSelectorOptions};
use apimachinery::validation::{is_dns1123_subdomain, is_qualified_name};
use serde_json::{Map, Value};

use super::persistent_volumes::validate_inline_pv_spec;
use super::pod_volumes::{csi_driver, quantity};
use super::{int, invalid_all, items, set, text};

/// Upstream's `maxProvisionerParameterLen` and `maxProvisionerParameterSize`.
const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETERS_SIZE: usize = 256 * 1024;
const RECLAIM_POLICIES: &[&str] = &["Delete", "Retain"];
const BINDING_MODES: &[&str] = &["Immediate", "WaitForFirstConsumer"];
const FS_GROUP_POLICIES: &[&str] = &["File", "None", "ReadWriteOnceWithFSType"];
const LIFECYCLE_MODES: &[&str] = &["Persistent", "Ephemeral"];
/// Upstream's `csiNodeIDMaxLength`.
const NODE_ID_MAX: usize = 192;

/// StorageClasses (checked on create; updates only keep fields fixed).
pub fn validate_storage_class(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    provisioner(
        text(obj, "provisioner"),
        &Path::new("provisioner"),
        &mut errs,
    );
    parameters(
        obj.get("parameters"),
        true,
        &Path::new("parameters"),
        &mut errs,
    );
    if let Some(policy) = obj.get("reclaimPolicy").and_then(Value::as_str) {
        if !policy.is_empty() && !RECLAIM_POLICIES.contains(&policy) {
            let path = Path::new("reclaimPolicy");
            errs.push(FieldError::not_supported(&path, policy, RECLAIM_POLICIES));
        }
    }
    let path = Path::new("volumeBindingMode");
    match obj.get("volumeBindingMode").and_then(Value::as_str) {
        None => errs.push(FieldError::required(&path, "")),
        Some(mode) if !BINDING_MODES.contains(&mode) => {
            errs.push(FieldError::not_supported(&path, mode, BINDING_MODES));
        }
        Some(_) => {}
    }
    errs
}

/// VolumeAttributesClasses: a driver and at least one parameter.
pub fn validate_volume_attributes_class(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    provisioner(text(obj, "driverName"), &Path::new("driverName"), &mut errs);
    parameters(
        obj.get("parameters"),
        false,
        &Path::new("parameters"),
        &mut errs,
    );
    errs
}

/// Upstream's `validateProvisioner`: a qualified name, compared lowercased.
fn provisioner(value: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let lower = value.to_lowercase();
    invalid_all(path, &lower, is_qualified_name(&lower), errs);
}

/// Upstream's `validateParameters`: at most 512 entries of 256 KiB in all,
/// no empty key, and (for VolumeAttributesClasses) at least one entry.
fn parameters(params: Option<&Value>, allow_empty: bool, path: &Path, errs: &mut Vec<FieldError>) {
    let empty = Map::new();
    let params = params.and_then(Value::as_object).unwrap_or(&empty);
    if params.len() > MAX_PARAMETERS {
        errs.push(FieldError::too_long(path, Some(MAX_PARAMETERS)));
        return;
    }
    let mut size = 0;
    for (key, value) in params {
        if key.is_empty() {
            errs.push(FieldError::invalid(path, "", "field can not be empty."));
        }
        size += key.len() + value.as_str().map_or(0, str::len);
    }
    if size > MAX_PARAMETERS_SIZE {
        errs.push(FieldError::too_long(path, Some(MAX_PARAMETERS_SIZE)));
    }
    if !allow_empty && params.is_empty() {
        errs.push(FieldError::required(
            path,
            "must contain at least one key/value pair",
        ));
    }
}

/// CSIDrivers (create and update): the defaulted booleans are set, the
/// enumerations hold known values and token audiences are distinct.
pub fn validate_csi_driver(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    for (key, shown) in [
        ("attachRequired", "attachedRequired"),
        ("podInfoOnMount", "podInfoOnMount"),
        ("storageCapacity", "storageCapacity"),
    ] {
        if set(spec, key).is_none() {
            errs.push(FieldError::required(&path.child(shown), ""));
        }
    }
    if let Some(policy) = spec.get("fsGroupPolicy").and_then(Value::as_str) {
        if !FS_GROUP_POLICIES.contains(&policy) {
            let p = path.child("fsGroupPolicy");
            errs.push(FieldError::not_supported(&p, policy, FS_GROUP_POLICIES));
        }
    }
    token_requests(
        items(spec, "tokenRequests"),
        &path.child("tokenRequests"),
        &mut errs,
    );
    for mode in items(spec, "volumeLifecycleModes") {
        let mode = mode.as_str().unwrap_or_default();
        if !LIFECYCLE_MODES.contains(&mode) {
            let p = path.child("volumeLifecycleModes");
            errs.push(FieldError::not_supported(&p, mode, LIFECYCLE_MODES));
        }
    }
    if let Some(period) = int(spec, "nodeAllocatableUpdatePeriodSeconds") {
        if period < 10 {
            let p = path.child("nodeAllocatableUpdatePeriodSeconds");
            let msg = "must be greater than or equal to 10 seconds";
            errs.push(FieldError::invalid(&p, period, msg));
        }
    }
    errs
}

/// Upstream's `validateTokenRequests`.
fn token_requests(requests: &[Value], path: &Path, errs: &mut Vec<FieldError>) {
    let mut audiences = HashSet::new();
    for (i, request) in requests.iter().enumerate() {
        let path = path.index(i);
        let audience = text(request, "audience");
        if !audiences.insert(audience) {
            errs.push(FieldError::duplicate(&path.child("audience"), audience));
            continue;
        }
        let Some(seconds) = int(request, "expirationSeconds") else {
            continue;
        };
        let p = path.child("expirationSeconds");
        if seconds < 600 {
            let msg = "may not specify a duration less than 10 minutes";
            errs.push(FieldError::invalid(&p, seconds, msg));
        }
        if seconds > 1 << 32 {
            let msg = "may not specify a duration larger than 2^32 seconds";
            errs.push(FieldError::invalid(&p, seconds, msg));
        }
    }
}

/// CSINodes (create and update): each driver named once, with a node ID
/// and qualified topology keys.
pub fn validate_csi_node(obj: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("drivers");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, driver) in items(spec, "drivers").iter().enumerate() {
        let path = path.index(i);
        let name = text(driver, "name");
        csi_driver(name, &path.child("name"), &mut errs);
        let node_id = text(driver, "nodeID");
        let id_path = path.child("nodeID");
        if node_id.is_empty() {
            errs.push(FieldError::required(&id_path, ""));
        }
        if node_id.len() > NODE_ID_MAX {
            let msg = format!("must be {NODE_ID_MAX} characters or less");
            errs.push(FieldError::invalid(&id_path, node_id, msg));
        }
        if let Some(count) = driver.pointer("/allocatable/count").and_then(Value::as_i64) {
            if count < 0 {
                let p = path.child("allocatable").child("count");
                errs.push(FieldError::invalid(&p, count, IS_NEGATIVE_ERROR_MSG));
            }
        }
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&path.child("name"), name));
        }
        topology_keys(driver, &path, &mut errs);
    }
    errs
}

/// A CSINode driver's topology keys, reported at the driver's path as
/// upstream does.
fn topology_keys(driver: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let mut keys = HashSet::new();
    for key in items(driver, "topologyKeys") {
        let key = key.as_str().unwrap_or_default();
        if key.is_empty() {
            errs.push(FieldError::required(path, ""));
        }
        if !keys.insert(key) {
            errs.push(FieldError::duplicate(path, key));
        }
        invalid_all(path, key, is_qualified_name(key), errs);
    }
}

/// VolumeAttachments (create and update), with the v1 checks of the
/// attacher and persistent volume names.
pub fn validate_volume_attachment(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let attacher = text(spec, "attacher");
    if attacher.is_empty() {
        errs.push(FieldError::required(&path.child("attacher"), ""));
    }
    let source = spec.get("source").unwrap_or(&Value::Null);
    let source_path = path.child("source");
    let pv = set(source, "persistentVolumeName").and_then(Value::as_str);
    const EXACTLY_ONE: &str =
        "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (set(source, "inlineVolumeSpec").is_some(), pv) {
        (false, None) => errs.push(FieldError::required(&source_path, EXACTLY_ONE)),
        (true, Some(_)) => errs.push(FieldError::forbidden(&source_path, EXACTLY_ONE)),
        (false, Some("")) => errs.push(FieldError::required(
            &source_path.child("persistentVolumeName"),
            "must specify non empty persistentVolumeName",
        )),
        (true, None) => errs.extend(validate_inline_pv_spec(
            &source["inlineVolumeSpec"],
            &source_path.child("inlineVolumeSpec"),
        )),
        _ => {}
    }
    let node = text(spec, "nodeName");
    invalid_all(
        &path.child("nodeName"),
        node,
        is_dns1123_subdomain(node),
        &mut errs,
    );
    csi_driver(attacher, &path.child("attacher"), &mut errs);
    if let Some(pv) = pv {
        let p = source_path.child("persistentVolumeName");
        invalid_all(&p, pv, is_dns1123_subdomain(pv), &mut errs);
    }
    errs
}

/// CSIStorageCapacities (checked on create): a valid node topology
/// selector, storage class name and non-negative capacity.
pub fn validate_csi_storage_capacity(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_label_selector(
        obj.get("nodeTopology"),
        LabelSelectorOptions::default(),
        &Path::new("nodeTopology"),
    );
    let class = text(obj, "storageClassName");
    let path = Path::new("storageClassName");
    invalid_all(&path, class, is_dns1123_subdomain(class), &mut errs);
    if let Some(q) = obj.get("capacity").and_then(quantity) {
        if q.is_negative() {
            let p = Path::new("capacity");
            errs.push(FieldError::invalid(
                &p,
                q.canonical(),
                IS_NEGATIVE_ERROR_MSG,
            ));
        }
    }
    errs
}

#[cfg(test)]
#[path = "storage_classes_tests.rs"]
mod tests;
