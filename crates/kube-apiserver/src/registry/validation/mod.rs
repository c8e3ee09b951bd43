//! Validation of the spec fields of the main built-in types (upstream's
//! `pkg/apis/core/validation`, `pkg/apis/apps/validation` and
//! `pkg/apis/batch/validation`): each function returns the field errors that
//! make the API answer 422 Invalid.
//!
//! Objects arrive as JSON after defaulting. Fields that upstream's defaulting
//! always fills (a port's protocol, a container's pull policy, a probe's
//! thresholds) are accepted when absent, so objects of resources this server
//! does not default are not refused for what a default would have supplied.

pub mod autoscaling;
pub mod certificate_approval;
pub mod certificates;
pub mod cluster_objects;
pub mod cluster_trust_bundles;
pub mod core_objects;
pub mod flowcontrol;
mod go_pem;
pub mod pod;
mod pod_claims;
mod pod_containers;
mod pod_devices;
mod pod_level;
pub(crate) use pod_level::aggregate_container_requests;
pub mod limit_range;
pub mod networking;
pub mod nodes;
pub mod persistent_volume_claims;
mod persistent_volume_sources;
pub mod persistent_volumes;
mod pod_os;
mod pod_probes;
mod pod_resources;
mod pod_scheduling;
mod pod_security;
mod pod_volumes;
pub mod quota;
pub mod rbac;
pub mod resource;
pub mod service;
pub mod storage_classes;
pub mod update;
pub mod update_classes;
pub mod update_events;
pub mod update_storage;
pub mod update_volumes;
pub mod update_workloads;
pub mod workloads;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::is_valid_percent;
use apimachinery::validation::object_meta::IS_NEGATIVE_ERROR_MSG;
use apimachinery::validation::{is_dns1123_label, is_path_segment_name};
use serde_json::Value;

/// A DNS-1123 label check reporting one Invalid error per problem.
fn dns_label(path: &Path, value: &str, errs: &mut Vec<FieldError>) {
    for msg in is_dns1123_label(value) {
        errs.push(FieldError::invalid(path, value, msg));
    }
}

/// Reports each message of a string check as Invalid at `path`.
fn invalid_all(path: &Path, value: &str, msgs: Vec<String>, errs: &mut Vec<FieldError>) {
    for msg in msgs {
        errs.push(FieldError::invalid(path, value, msg));
    }
}

/// The entries of an optional array field.
fn items<'a>(obj: &'a Value, key: &str) -> &'a [Value] {
    obj.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A string field; absent and empty read the same, as in Go.
fn text<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A field that is present and not `null` (a set pointer in Go).
fn set<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// An integer field.
fn int(obj: &Value, key: &str) -> Option<i64> {
    obj.get(key).and_then(Value::as_i64)
}

/// A boolean field that is `true`.
fn is_true(obj: &Value, key: &str) -> bool {
    obj.get(key).and_then(Value::as_bool) == Some(true)
}

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// Upstream's `ValidateNonnegativeField`.
fn nonnegative(value: i64, path: &Path, errs: &mut Vec<FieldError>) {
    if value < 0 {
        errs.push(FieldError::invalid(path, value, IS_NEGATIVE_ERROR_MSG));
    }
}

/// A port's protocol, when given, is TCP, UDP or SCTP.
fn protocol(port: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    enumerated(port, "protocol", path, PROTOCOLS, errs);
}

/// An enumerated string field: absent is accepted (defaulting fills it),
/// empty is Required and anything else must be one of `supported`.
fn enumerated(obj: &Value, key: &str, path: &Path, supported: &[&str], errs: &mut Vec<FieldError>) {
    let Some(value) = obj.get(key).and_then(Value::as_str) else {
        return;
    };
    let path = path.child(key);
    if value.is_empty() {
        errs.push(FieldError::required(&path, ""));
    } else if !supported.contains(&value) {
        errs.push(FieldError::not_supported(&path, value, supported));
    }
}

/// Upstream's `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`
/// of an int-or-string field (the value shown as JSON, as Go marshals an
/// `IntOrString`).
fn int_or_percent(value: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    match value {
        Value::String(s) => {
            let msgs = is_valid_percent(s);
            let valid = msgs.is_empty();
            invalid_all(path, s, msgs, errs);
            let percent = s.trim_end_matches('%').parse::<u64>();
            if valid && percent.is_ok_and(|p| p > 100) {
                errs.push(FieldError::invalid(
                    path,
                    s.as_str(),
                    "must not be greater than 100%",
                ));
            }
        }
        other => nonnegative(other.as_i64().unwrap_or_default(), path, errs),
    }
}

/// A required path segment name (upstream's `content.IsPathSegmentName`
/// after a Required check).
fn path_segment(obj: &Value, key: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let value = text(obj, key);
    let path = path.child(key);
    if value.is_empty() {
        errs.push(FieldError::required(&path, ""));
    } else {
        invalid_all(&path, value, is_path_segment_name(value), errs);
    }
}
