//! Reshapes a JSON tree as upstream's round trip through the Go struct
//! does (`json.Unmarshal` into the `k8s.io/api` type, then `json.Marshal`):
//!
//! - fields in the struct's declaration order, fields the struct does not
//!   declare dropped;
//! - an absent or `null` field takes its Go zero value: written as `""`,
//!   `0`, `false`, `null` (pointers, slices, maps, `Time`, raw JSON), `{…}`
//!   (structs, recursively), `"0"` (Quantity), `"0s"` (Duration);
//! - `omitempty` leaves out `""`, `0`, `false`, nil pointers and
//!   interfaces, and empty slices and maps, never a struct; `omitzero`
//!   leaves out zero values (`Time` through its `IsZero`);
//! - map keys sorted (Go writes maps sorted), quantities canonical.
//!
//! Values of raw-JSON and `interface{}` fields are kept as they are.

use serde_json::{Map, Value};

use crate::table::{shapes, Field, Shape, Shapes};

/// Reshapes a built-in object (found by its `apiVersion` and `kind`) as
/// upstream writes it. Returns whether the kind is a built-in one; other
/// objects (custom resources) are left untouched.
pub fn normalize(obj: &mut Value) -> bool {
    let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
    match (text("apiVersion"), text("kind")) {
        (Some(api_version), Some(kind)) => normalize_kind(&api_version, &kind, obj),
        _ => false,
    }
}

/// Reshapes `value` as the Go type registered for `api_version` and
/// `kind`, whatever type fields it carries (a `WatchEvent` carries none).
/// Returns whether the kind is a built-in one.
pub fn normalize_kind(api_version: &str, kind: &str, value: &mut Value) -> bool {
    let shapes = shapes();
    match shapes.kind(api_version, kind) {
        Some(at) => {
            reshape_struct(shapes, value, at);
            true
        }
        None => false,
    }
}

/// Reshapes `value` as the struct type `type_name` (an OpenAPI definition
/// name, `io.k8s.apimachinery.pkg.apis.meta.v1.Status`). Returns whether
/// the type is known.
pub fn normalize_as(type_name: &str, value: &mut Value) -> bool {
    let shapes = shapes();
    match shapes.by_name(type_name) {
        Some(at) => {
            reshape_struct(shapes, value, at);
            true
        }
        None => false,
    }
}

/// Rebuilds an object in the struct's field order. A value that is not an
/// object is left as it is (Go would refuse it; validation reports it).
fn reshape_struct(shapes: &Shapes, value: &mut Value, at: usize) {
    let Value::Object(input) = value else {
        if value.is_null() {
            *value = zero(shapes, &Shape::Struct(at));
        }
        return;
    };
    let mut input = std::mem::take(input);
    let fields = &shapes.structs[at].fields;
    let mut kept = Vec::with_capacity(fields.len());
    for field in fields {
        let given = input.remove(&field.name).filter(|v| !v.is_null());
        if let Some(v) = field_value(shapes, field, given) {
            kept.push((field.name.clone(), v));
        }
    }
    // Built at its final size: a stored tree lives as long as its object
    // version, and a map sized for every declared field (ObjectMeta has 16)
    // held several times the entries present (issue 19's memory budget).
    *value = Value::Object(kept.into_iter().collect());
}

/// What Go writes for a field, `None` when it leaves the field out.
fn field_value(shapes: &Shapes, field: &Field, given: Option<Value>) -> Option<Value> {
    let Some(mut v) = given else {
        let omitted = field.omit_zero || (field.omit_empty && zero_is_empty(&field.shape));
        return (!omitted).then(|| zero(shapes, &field.shape));
    };
    reshape(shapes, &mut v, &field.shape);
    let omitted = (field.omit_empty && is_empty(&v, &field.shape))
        || (field.omit_zero && is_zero(shapes, &v, &field.shape));
    (!omitted).then_some(v)
}

/// Reshapes a present, non-null value of a shape in place.
fn reshape(shapes: &Shapes, v: &mut Value, shape: &Shape) {
    match (shape, v) {
        (Shape::Pointer(inner), v) => reshape(shapes, v, inner),
        (Shape::Struct(at), v) => reshape_struct(shapes, v, *at),
        (Shape::Slice(inner), Value::Array(items)) => {
            for item in items.iter_mut() {
                element(shapes, item, inner);
            }
            items.shrink_to_fit();
        }
        (Shape::Map(inner), Value::Object(entries)) => {
            let mut sorted: Vec<_> = std::mem::take(entries).into_iter().collect();
            for (_, item) in &mut sorted {
                element(shapes, item, inner);
            }
            sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            *entries = sorted.into_iter().collect();
        }
        (Shape::Raw | Shape::Interface, v) => compact(v),
        (Shape::Quantity, v @ Value::String(_)) => {
            if let Ok(canonical) = apimachinery::quantity::canonicalize_json(v) {
                *v = Value::String(canonical);
            }
        }
        _ => {}
    }
}

/// Rebuilds the maps and arrays of a value kept as it is (raw JSON such
/// as `managedFields[].fieldsV1`, `interface{}`) at their final size: a
/// decoder grows them by doubling, leaving most of their room unused.
fn compact(v: &mut Value) {
    match v {
        Value::Array(items) => {
            items.iter_mut().for_each(compact);
            items.shrink_to_fit();
        }
        Value::Object(entries) => {
            *entries = std::mem::take(entries)
                .into_iter()
                .map(|(k, mut v)| {
                    compact(&mut v);
                    (k, v)
                })
                .collect();
        }
        _ => {}
    }
}

/// A slice element or map value: `null` decodes to the zero value.
fn element(shapes: &Shapes, item: &mut Value, shape: &Shape) {
    if item.is_null() {
        *item = zero(shapes, shape);
    } else {
        reshape(shapes, item, shape);
    }
}

/// Go's zero value of a shape, as `encoding/json` writes it.
pub(crate) fn zero(shapes: &Shapes, shape: &Shape) -> Value {
    match shape {
        Shape::String => Value::from(""),
        Shape::Int | Shape::Float | Shape::IntOrString => Value::from(0),
        Shape::Bool => Value::Bool(false),
        Shape::Quantity => Value::from("0"),
        Shape::Duration => Value::from("0s"),
        Shape::Struct(at) => {
            let mut v = Value::Object(Map::new());
            reshape_struct(shapes, &mut v, *at);
            v
        }
        Shape::Bytes
        | Shape::Time
        | Shape::Raw
        | Shape::Interface
        | Shape::Pointer(_)
        | Shape::Slice(_)
        | Shape::Map(_) => Value::Null,
    }
}

/// Whether `omitempty` leaves out a field holding its zero value: not
/// for structs (and the types that marshal themselves from a struct).
pub(crate) fn zero_is_empty(shape: &Shape) -> bool {
    !matches!(
        shape,
        Shape::Struct(_)
            | Shape::Time
            | Shape::Duration
            | Shape::Quantity
            | Shape::IntOrString
            | Shape::Raw
    )
}

/// Go's `isEmptyValue` of a decoded, present value.
pub(crate) fn is_empty(v: &Value, shape: &Shape) -> bool {
    match shape {
        Shape::String | Shape::Bytes => v.as_str() == Some(""),
        Shape::Int | Shape::Float => v.as_f64() == Some(0.0),
        Shape::Bool => v == &Value::Bool(false),
        Shape::Slice(_) => v.as_array().is_some_and(Vec::is_empty),
        Shape::Map(_) => v.as_object().is_some_and(Map::is_empty),
        _ => false,
    }
}

/// Go's `IsZero` of a decoded, present value: nil-able values that are
/// present are not zero; scalars and structs are when they equal their
/// zero value.
pub(crate) fn is_zero(shapes: &Shapes, v: &Value, shape: &Shape) -> bool {
    match shape {
        Shape::String | Shape::Int | Shape::Float | Shape::Bool => is_empty(v, shape),
        Shape::Quantity => apimachinery::quantity::canonicalize_json(v).is_ok_and(|q| q == "0"),
        Shape::Duration | Shape::IntOrString | Shape::Struct(_) => *v == zero(shapes, shape),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
