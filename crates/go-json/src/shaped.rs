//! Whether a tree already has the shape [`crate::normalize()`] gives it,
//! answered by reading it (no copy, no allocation): the storage codec asks
//! it to know that decoding what it stores, which normalizes, gives back
//! the very tree it was handed.

use serde_json::{Map, Value};

use crate::normalize::{is_empty, is_zero, zero, zero_is_empty};
use crate::table::{shapes, Field, Shape, Shapes};

/// Whether [`crate::normalize()`] would leave `obj` as it is, member order
/// included (objects that are not built-in kinds, which it leaves alone,
/// count as normalized).
pub fn is_normalized(obj: &Value) -> bool {
    let text = |k: &str| obj.get(k).and_then(Value::as_str);
    let (Some(api_version), Some(kind)) = (text("apiVersion"), text("kind")) else {
        return true;
    };
    let shapes = shapes();
    match shapes.kind(api_version, kind) {
        Some(at) => struct_shaped(shapes, obj, at),
        None => true,
    }
}

/// `reshape_struct` keeps exactly the declared fields, in declaration
/// order, and adds the zeros of those `omitempty` does not leave out.
fn struct_shaped(shapes: &Shapes, value: &Value, at: usize) -> bool {
    let Value::Object(members) = value else {
        return !value.is_null();
    };
    let mut fields = shapes.structs[at].fields.iter();
    for (name, v) in members {
        // Fields skipped on the way would have been added as zeros.
        let Some(field) = fields.find(|f| f.name == *name || !left_out_when_absent(f)) else {
            return false;
        };
        if field.name != *name || !field_shaped(shapes, field, v) {
            return false;
        }
    }
    fields.all(left_out_when_absent)
}

/// Whether `field_value` leaves out an absent field.
fn left_out_when_absent(field: &Field) -> bool {
    field.omit_zero || (field.omit_empty && zero_is_empty(&field.shape))
}

/// A member present as `v`: kept as it is by `field_value`.
fn field_shaped(shapes: &Shapes, field: &Field, v: &Value) -> bool {
    if v.is_null() {
        // Taken as absent: kept only as a zero that is itself null.
        return !left_out_when_absent(field) && zero(shapes, &field.shape).is_null();
    }
    let omitted = (field.omit_empty && is_empty(v, &field.shape))
        || (field.omit_zero && is_zero(shapes, v, &field.shape));
    !omitted && shaped(shapes, v, &field.shape)
}

/// `reshape` leaves a present, non-null value as it is.
fn shaped(shapes: &Shapes, v: &Value, shape: &Shape) -> bool {
    match (shape, v) {
        (Shape::Pointer(inner), v) => shaped(shapes, v, inner),
        (Shape::Struct(at), v) => struct_shaped(shapes, v, *at),
        (Shape::Slice(inner), Value::Array(items)) => {
            items.iter().all(|item| element_shaped(shapes, item, inner))
        }
        (Shape::Map(inner), Value::Object(entries)) => map_shaped(shapes, entries, inner),
        // `reshape` leaves a quantity it cannot parse as it is.
        (Shape::Quantity, Value::String(s)) => {
            apimachinery::quantity::canonicalize_json(v).map_or(true, |c| c == *s)
        }
        _ => true,
    }
}

/// Map keys sorted (Go writes maps sorted) and every value shaped.
fn map_shaped(shapes: &Shapes, entries: &Map<String, Value>, inner: &Shape) -> bool {
    let mut previous: Option<&str> = None;
    entries.iter().all(|(key, item)| {
        let sorted = previous.is_none_or(|p| p < key.as_str());
        previous = Some(key);
        sorted && element_shaped(shapes, item, inner)
    })
}

/// A slice element or map value: `element` turns `null` into the zero.
fn element_shaped(shapes: &Shapes, item: &Value, shape: &Shape) -> bool {
    if item.is_null() {
        zero(shapes, shape).is_null()
    } else {
        shaped(shapes, item, shape)
    }
}

#[cfg(test)]
mod tests;
