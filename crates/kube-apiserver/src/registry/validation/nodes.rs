//! Create and update rules of Nodes (upstream's `ValidateNode` and
//! `ValidateNodeUpdate` in pkg/apis/core/validation/validation.go), with
//! upstream's paths (taints are reported under `metadata.taints`, as
//! upstream does) and messages.
//!
//! Not checked: the deprecated alpha annotations
//! `scheduler.alpha.kubernetes.io/taints` and `.../preferAvoidPods` (their
//! errors are Go JSON decoding errors), and `spec.configSource` and
//! `status.config`, which the Node strategy drops before validation (the
//! dynamic kubelet configuration they served is gone), as upstream's does.

use std::collections::HashSet;
use std::net::IpAddr;

use apimachinery::field_errors::{ErrorType, FieldError, Path};
use apimachinery::validation::ip::{cidr_sloppy, is_valid_cidr};
use apimachinery::validation::is_label_value;
use serde_json::Value;

use super::pod_scheduling::{label_name, TAINT_EFFECTS};
use super::pod_volumes::quantity;
use super::quota::resource_quantity_value;
use super::update::{go_nullable, go_string, go_struct, typed_error};
use super::{items, text};

const NODE_POD_CIDR: &str = "node updates may not change podCIDR except from \"\" to valid";
const NODE_PROVIDER_ID: &str = "node updates may not change providerID except from \"\" to valid";

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// A new Node: taints, status quantities and pod CIDRs.
pub fn validate_node(node: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    taints(
        spec(node),
        &Path::new("metadata").child("taints"),
        &mut errs,
    );
    node_resources(node, &mut errs);
    let cidrs = pod_cidrs(spec(node));
    if !cidrs.is_empty() {
        pod_cidr_list(&cidrs, &Path::new("spec").child("podCIDRs"), &mut errs);
    }
    errs
}

/// Nodes (upstream's `ValidateNodeUpdate`): status quantities and
/// addresses, the pod CIDRs and the provider ID set once where empty and
/// never changed after, taints, and the external ID never changing.
pub fn validate_node_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (new_spec, old_spec) = (spec(new), spec(old));
    let path = Path::new("spec");
    let mut errs = Vec::new();
    node_resources(new, &mut errs);
    unique_addresses(new, &mut errs);
    let (new_cidrs, old_cidrs) = (pod_cidrs(new_spec), pod_cidrs(old_spec));
    if !old_cidrs.is_empty() {
        let changed = if old_cidrs.len() == new_cidrs.len() {
            old_cidrs
                .iter()
                .zip(&new_cidrs)
                .filter(|(o, n)| o != n)
                .count()
        } else {
            1
        };
        for _ in 0..changed {
            errs.push(FieldError::forbidden(
                &path.child("podCIDRs"),
                NODE_POD_CIDR,
            ));
        }
    }
    let old_provider = text(old_spec, "providerID");
    if !old_provider.is_empty() && old_provider != text(new_spec, "providerID") {
        errs.push(FieldError::forbidden(
            &path.child("providerID"),
            NODE_PROVIDER_ID,
        ));
    }
    taints(new_spec, &Path::new("metadata").child("taints"), &mut errs);
    if text(new_spec, "externalID") != text(old_spec, "externalID") {
        errs.push(FieldError::forbidden(
            &path.child("externalID"),
            "may not be updated",
        ));
    }
    errs
}

/// A node's pod CIDRs as the internal type holds them: `podCIDRs`, or the
/// single `podCIDR` when only it is set.
fn pod_cidrs(spec: &Value) -> Vec<&str> {
    let list: Vec<&str> = items(spec, "podCIDRs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match text(spec, "podCIDR") {
        single if list.is_empty() && !single.is_empty() => vec![single],
        _ => list,
    }
}

/// Valid CIDRs, at most one of each IP family, no repeats.
fn pod_cidr_list(cidrs: &[&str], path: &Path, errs: &mut Vec<FieldError>) {
    for (i, cidr) in cidrs.iter().enumerate() {
        errs.extend(is_valid_cidr(&path.index(i), cidr));
    }
    if cidrs.len() < 2 {
        return;
    }
    let (mut v4, mut v6) = (false, false);
    for cidr in cidrs {
        match cidr_sloppy(cidr) {
            Some((IpAddr::V6(ip), _)) if ip.to_ipv4_mapped().is_none() => v6 = true,
            Some(_) => v4 = true,
            None => {
                let quoted = Value::from(*cidr).to_string();
                errs.push(FieldError::internal(
                    path,
                    format!(
                        "invalid PodCIDRs. failed to check with dual stack with error:failed to parse cidr value:{quoted} with error:invalid CIDR address: {cidr}"
                    ),
                ));
                (v4, v6) = (false, false);
                break;
            }
        }
    }
    if !(v4 && v6) || cidrs.len() > 2 {
        let shown = Value::from(cidrs.to_vec());
        let msg = "may specify no more than one CIDR for each IP family";
        errs.push(FieldError::invalid(path, shown, msg));
    }
    let mut seen = HashSet::with_capacity(cidrs.len());
    for (i, cidr) in cidrs.iter().enumerate() {
        if !seen.insert(*cidr) {
            errs.push(FieldError::duplicate(&path.index(i), *cidr));
        }
    }
}

/// Upstream's `validateNodeTaints`: label-like keys and values, a known
/// effect, one taint per key and effect.
fn taints(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let list = items(spec, "taints");
    let mut seen = HashSet::with_capacity(list.len());
    for (i, taint) in list.iter().enumerate() {
        let at = path.index(i);
        let key = text(taint, "key");
        label_name(key, &at.child("key"), errs);
        let value = text(taint, "value");
        let msgs = is_label_value(value);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                &at.child("value"),
                value,
                msgs.join(";"),
            ));
        }
        let effect = text(taint, "effect");
        if effect.is_empty() {
            errs.push(FieldError::required(&at.child("effect"), ""));
        } else if !TAINT_EFFECTS.contains(&effect) {
            errs.push(FieldError::not_supported(
                &at.child("effect"),
                effect,
                TAINT_EFFECTS,
            ));
        }
        if !seen.insert((effect, key)) {
            let shown = go_struct(&[
                ("Key", go_string(taint, "key")),
                ("Value", go_string(taint, "value")),
                ("Effect", go_string(taint, "effect")),
                ("TimeAdded", go_nullable(taint, "timeAdded")),
            ]);
            let detail = "taints must be unique by key and effect pair";
            errs.push(typed_error(ErrorType::Duplicate, &at, &shown, detail));
        }
    }
}

/// Upstream's `ValidateNodeResources`: the capacity and allocatable
/// quantities in the status.
fn node_resources(node: &Value, errs: &mut Vec<FieldError>) {
    let status = node.get("status").unwrap_or(&Value::Null);
    for key in ["capacity", "allocatable"] {
        let list = status.get(key).and_then(Value::as_object);
        for (name, value) in list.into_iter().flatten() {
            if let Some(q) = quantity(value) {
                let at = Path::new("status").child(key).child(name);
                resource_quantity_value(name, &q, &at, errs);
            }
        }
    }
}

/// No address listed twice in the status.
fn unique_addresses(node: &Value, errs: &mut Vec<FieldError>) {
    let status = node.get("status").unwrap_or(&Value::Null);
    let addresses = items(status, "addresses");
    let mut seen = HashSet::with_capacity(addresses.len());
    for (i, address) in addresses.iter().enumerate() {
        let pair = (text(address, "type"), text(address, "address"));
        if !seen.insert(pair) {
            let shown = go_struct(&[
                ("Type", go_string(address, "type")),
                ("Address", go_string(address, "address")),
            ]);
            let at = Path::new("status").child("addresses").index(i);
            errs.push(typed_error(ErrorType::Duplicate, &at, &shown, ""));
        }
    }
}

#[cfg(test)]
#[path = "nodes_tests.rs"]
mod tests;
