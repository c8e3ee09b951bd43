//! Validation of the spec fields of the main built-in types (upstream's
//! `pkg/apis/core/validation` and `pkg/apis/apps/validation`): each function
//! returns the field errors that make the API answer 422 Invalid.

pub mod pod;
pub mod service;
pub mod update;
pub mod update_workloads;
pub mod workloads;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::is_dns1123_label;
use serde_json::Value;

/// A DNS-1123 label check reporting one Invalid error per problem.
fn dns_label(path: &Path, value: &str, errs: &mut Vec<FieldError>) {
    for msg in is_dns1123_label(value) {
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
