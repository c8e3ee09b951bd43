//! The two kinds of mutation of a MutatingAdmissionPolicy (upstream's
//! `mutating/patch`): an apply configuration merged into the object with
//! server-side apply's merge (atomic lists, maps and structs refused, as
//! they would drop fields the policy did not mean to touch), and a JSON
//! patch built from `JSONPatch` values (a failed `test` leaves the object
//! as it was).

use serde_json::Value;
use structured_merge::schema::{ListKind, Schema, TypeDef};
use structured_merge::typed::{Ty, Typer};

use super::types::Types;

/// Why a mutation could not be applied; the texts are upstream's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatchError {
    #[error("must evaluate to {expected} but got {got}")]
    ReturnType { expected: &'static str, got: String },
    #[error("error applying patch: failed to convert patch object to typed object: {0}")]
    Typed(String),
    #[error(
        "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {0}"
    )]
    Atomic(String),
    #[error("error applying patch: failed to merge patch: {0}")]
    Merge(String),
    #[error("JSON Patch: {0}")]
    JsonPatch(String),
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null_type",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "double",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "list(dyn)",
        Value::Object(_) => "map(string, dyn)",
    }
}

/// Merges the apply configuration `patch` (an `Object{...}` value) into
/// `object`.
pub fn apply_configuration(
    types: &Types,
    object: &Value,
    patch: Value,
) -> Result<Value, PatchError> {
    let Value::Object(mut patch) = patch else {
        return Err(PatchError::ReturnType {
            expected: "Object",
            got: json_type(&patch).to_owned(),
        });
    };
    // The configuration is of the object's own kind.
    for field in ["apiVersion", "kind"] {
        if let Some(v) = object.get(field) {
            patch.insert(field.to_owned(), v.clone());
        }
    }
    let patch = Value::Object(patch);
    let typer = Typer::new(types.schema());
    let ty = types.ty();
    typer
        .validate(ty, &patch)
        .map_err(|e| PatchError::Typed(e.to_string()))?;
    let mut atomics = Vec::new();
    find_atomics(types.schema(), ty, &patch, &mut String::new(), &mut atomics);
    if !atomics.is_empty() {
        return Err(PatchError::Atomic(atomics.join(", ")));
    }
    typer
        .merge(ty, object, &patch)
        .map_err(|e| PatchError::Merge(e.to_string()))
}

/// The paths (upstream's spelling, `.spec.template[0]`) of the atomic
/// lists, maps and structs the configuration sets.
fn find_atomics(
    schema: &Schema,
    ty: Ty<'_>,
    value: &Value,
    path: &mut String,
    out: &mut Vec<String>,
) {
    let Ty::Ref(r) = ty else {
        return;
    };
    let len = path.len();
    match (schema.resolve(r), value) {
        (TypeDef::Struct(s), Value::Object(map)) => {
            if s.atomic {
                out.push(path.clone());
            }
            for (key, child) in map {
                if let Some(field) = s.field(key) {
                    path.push('.');
                    path.push_str(key);
                    find_atomics(schema, Ty::Ref(&field.ty), child, path, out);
                    path.truncate(len);
                }
            }
        }
        // Map values are not descended into: they are not fields.
        (TypeDef::Map(m), Value::Object(_)) if m.atomic => out.push(path.clone()),
        (TypeDef::List(l), Value::Array(items)) => {
            if l.kind == ListKind::Atomic {
                out.push(path.clone());
            }
            for (i, item) in items.iter().enumerate() {
                path.push_str(&format!("[{i}]"));
                find_atomics(schema, Ty::Ref(&l.elem), item, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Applies the `JSONPatch` values `ops` to `object`.
pub fn json_patch(object: &Value, ops: Value) -> Result<Value, PatchError> {
    let all_objects = matches!(&ops, Value::Array(items) if items.iter().all(Value::is_object));
    if !all_objects {
        return Err(PatchError::ReturnType {
            expected: "list(JSONPatch)",
            got: json_type(&ops).to_owned(),
        });
    }
    let patch: json_patch::Patch =
        serde_json::from_value(ops).map_err(|e| PatchError::JsonPatch(e.to_string()))?;
    let mut doc = object.clone();
    match json_patch::patch(&mut doc, &patch) {
        Ok(()) => Ok(doc),
        // A failed test means the patch does not apply: nothing changes.
        Err(e) if matches!(e.kind, json_patch::PatchErrorKind::TestFailed) => Ok(object.clone()),
        Err(e) => Err(PatchError::JsonPatch(e.to_string())),
    }
}
