//! Strategic merge patch (`application/strategic-merge-patch+json`) driven
//! by a [`Schema`], with the semantics of apimachinery's
//! `strategicpatch.StrategicMergeMapPatch` as the API server applies it:
//!
//! - maps merge recursively and `null` deletes a key;
//! - lists of a `patchStrategy=merge` field merge element by element —
//!   objects by their `patchMergeKey`, scalars as an ordered set — and
//!   every other list (and `patchStrategy=replace` map) is replaced;
//! - `$patch: replace | delete` on a map, `$patch: replace | delete` as a
//!   list element, `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
//!   `$setElementOrder/<field>` directives.
//!
//! Fields the schema does not know (and untyped values) merge as maps
//! without patch metadata, where upstream rejects a few such cases.

mod gofmt;
mod list;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use crate::schema::{PatchMeta, Schema, TypeDef};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

static UNTYPED: TypeDef = TypeDef::Untyped;
static NO_PATCH_META: PatchMeta = PatchMeta {
    merge: false,
    retain_keys: false,
    replace: false,
    merge_key: None,
};

/// Why a strategic merge patch cannot be applied; the messages are
/// upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmpError {
    #[error("unknown patch type: {value} in map: {map}")]
    BadPatchType { value: String, map: String },
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey { map: String, key: String },
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        expected: &'static str,
        actual: &'static str,
    },
    #[error("lists of lists are not supported")]
    NoListOfLists,
    #[error("invalid patch format of primitive list")]
    BadPrimitiveListFormat,
    #[error("invalid patch format of retainKeys")]
    BadRetainKeysFormat,
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrderFormat,
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyDeclared(&'static str),
    #[error("list element types are not identical: {0}")]
    MixedElementTypes(String),
    #[error("no elements in any of the given slices")]
    NoElements,
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    OrderMismatch { patch: String, order: String },
    #[error("value for key {0} is not a map")]
    NotAMap(usize),
}

impl SmpError {
    /// How the API server answers the error: upstream turns the malformed
    /// directive errors into 400 BadRequest, lists of lists into 422, and
    /// lets the rest through as plain errors (500).
    pub fn status_class(&self) -> ErrorClass {
        match self {
            SmpError::BadPrimitiveListFormat
            | SmpError::BadRetainKeysFormat
            | SmpError::BadSetElementOrderFormat => ErrorClass::BadRequest,
            SmpError::NoListOfLists => ErrorClass::Unprocessable,
            _ => ErrorClass::Internal,
        }
    }
}

/// The HTTP answer class of an [`SmpError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    BadRequest,
    Unprocessable,
    Internal,
}

/// Applies `patch` to `original`, an object of the type named `root` in
/// `schema`.
pub fn apply(
    original: Map<String, Value>,
    patch: &Map<String, Value>,
    schema: &Schema,
    root: &str,
) -> Result<Map<String, Value>, SmpError> {
    let ty = schema.get(root).unwrap_or(&UNTYPED);
    Merger { schema }.merge_map(original, patch, ty)
}

struct Merger<'s> {
    schema: &'s Schema,
}

impl<'s> Merger<'s> {
    /// The type and patch metadata of `key` inside a value of type `ty`.
    fn field(&self, ty: &'s TypeDef, key: &str) -> (&'s TypeDef, &'s PatchMeta) {
        match ty {
            TypeDef::Struct(s) => match s.field(key) {
                Some(f) => (self.schema.resolve(&f.ty), &f.patch),
                None => match &s.other_fields {
                    Some(t) => (self.schema.resolve(t), &NO_PATCH_META),
                    None => (&UNTYPED, &NO_PATCH_META),
                },
            },
            TypeDef::Map(m) => (self.schema.resolve(&m.elem), &NO_PATCH_META),
            _ => (&UNTYPED, &NO_PATCH_META),
        }
    }

    fn elem(&self, ty: &'s TypeDef) -> &'s TypeDef {
        match ty {
            TypeDef::List(l) => self.schema.resolve(&l.elem),
            _ => &UNTYPED,
        }
    }

    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
        ty: &'s TypeDef,
    ) -> Result<Map<String, Value>, SmpError> {
        if let Some(directive) = patch.get(DIRECTIVE) {
            return match directive.as_str() {
                Some("replace") => Ok(clean_map(patch)),
                Some("delete") => Ok(Map::new()),
                _ => Err(bad_patch_type(directive, patch)),
            };
        }
        retain_keys(&mut original, patch)?;
        let ordered = self.set_element_order(&mut original, patch, ty)?;
        for (key, value) in patch {
            if key == RETAIN_KEYS
                || key.starts_with(SET_ELEMENT_ORDER)
                || ordered.contains(&key.as_str())
            {
                continue;
            }
            let (field, delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
                (extract_key(key, DELETE_FROM_PRIMITIVE_LIST)?, true)
            } else {
                (key.as_str(), false)
            };
            self.merge_field(&mut original, field, value, ty, delete_list)?;
        }
        Ok(original)
    }

    fn merge_field(
        &self,
        original: &mut Map<String, Value>,
        field: &str,
        value: &Value,
        ty: &'s TypeDef,
        delete_list: bool,
    ) -> Result<(), SmpError> {
        if value.is_null() {
            original.shift_remove(field);
            return Ok(());
        }
        let Some(current) = original.get_mut(field) else {
            if !delete_list {
                if let Some(v) = clean(value) {
                    original.insert(field.to_owned(), v);
                }
            }
            return Ok(());
        };
        let (fty, meta) = self.field(ty, field);
        match (current, value) {
            (Value::Object(o), Value::Object(p)) if !delete_list => {
                if meta.replace {
                    *o = p.clone();
                } else {
                    *o = self.merge_map(std::mem::take(o), p, fty)?;
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                if meta.merge || delete_list {
                    let key = meta.merge_key.as_deref();
                    *o = self.merge_list(std::mem::take(o), p, self.elem(fty), key, delete_list)?;
                } else {
                    o.clone_from(p);
                }
            }
            (_, _) if delete_list => {}
            (current, _) => match clean(value) {
                Some(v) => *current = v,
                None => {
                    original.shift_remove(field);
                }
            },
        }
        Ok(())
    }
}

/// `$retainKeys`: every key the patch sets must be listed; keys of the
/// original that are not listed are cleared.
fn retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<(), SmpError> {
    let Some(keys) = patch.get(RETAIN_KEYS) else {
        return Ok(());
    };
    let keys = keys.as_array().ok_or(SmpError::BadRetainKeysFormat)?;
    let listed = |k: &str| keys.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch {
        let directive = k == RETAIN_KEYS
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER);
        if !v.is_null() && !directive && !listed(k) {
            return Err(SmpError::BadRetainKeysFormat);
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// The field named after `<prefix>/`.
fn extract_key<'a>(key: &'a str, prefix: &str) -> Result<&'a str, SmpError> {
    match key.split_once('/') {
        Some((p, field)) if p == prefix => Ok(field),
        _ if prefix == SET_ELEMENT_ORDER => Err(SmpError::BadSetElementOrderFormat),
        _ => Err(SmpError::BadPrimitiveListFormat),
    }
}

fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> SmpError {
    SmpError::BadPatchType {
        value: gofmt::string(directive),
        map: gofmt::value(&Value::Object(map.clone())),
    }
}

fn no_merge_key(map: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::NoMergeKey {
        map: gofmt::value(&Value::Object(map.clone())),
        key: key.to_owned(),
    }
}

fn is_directive(key: &str) -> bool {
    key == DIRECTIVE
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// A patch value as it lands in the object: without directives and
/// `null`s; `None` for a `$patch` map, which stands for nothing.
fn clean(value: &Value) -> Option<Value> {
    match value {
        Value::Object(m) if m.contains_key(DIRECTIVE) => None,
        Value::Object(m) => Some(Value::Object(clean_map(m))),
        Value::Array(items) => Some(Value::Array(items.iter().filter_map(clean).collect())),
        other => Some(other.clone()),
    }
}

fn clean_map(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter()
        .filter(|(k, v)| !is_directive(k) && !v.is_null())
        .filter_map(|(k, v)| clean(v).map(|v| (k.clone(), v)))
        .collect()
}
