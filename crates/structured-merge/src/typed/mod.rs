//! JSON objects read through a [`Schema`] (upstream's
//! `structured-merge-diff/typed`): the set of fields an object sets, the
//! merge of an applied configuration into a live object (list-map elements
//! by key, set elements by value, atomic lists, maps and structs replaced
//! whole), the comparison of two objects, and the removal of fields.
//!
//! Values are deduced where the schema says nothing ([`TypeDef::Untyped`]
//! and fields a struct does not declare): objects are granular maps, lists
//! are atomic.

mod compare;
mod merge;

use serde_json::Value;

use crate::fieldpath::{PathElement, Set, SetBuilder};
use crate::schema::{FieldDef, ListKind, Schema, StructDef, TypeDef, TypeRef};

pub use compare::Comparison;

/// A type to read a value with: a schema reference, or deduced.
#[derive(Debug, Clone, Copy)]
pub enum Ty<'a> {
    Ref(&'a TypeRef),
    Untyped,
}

/// Why a value does not fit its schema (upstream's ValidationError): the
/// path in upstream's spelling (`.spec.foo`) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", if path.is_empty() { message.clone() } else { format!("{path}: {message}") })]
pub struct TypeError {
    pub path: String,
    pub message: String,
}

/// Several [`TypeError`]s, spelled as upstream joins them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", join_errors(.0))]
pub struct TypeErrors(pub Vec<TypeError>);

fn join_errors(errors: &[TypeError]) -> String {
    match errors {
        [one] => one.to_string(),
        many => {
            let mut out = String::from("errors:");
            for e in many {
                out.push_str("\n  ");
                out.push_str(&e.to_string());
            }
            out
        }
    }
}

/// How a value is walked.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Node<'a> {
    /// Replaced and owned as a whole: scalars and atomic containers.
    Leaf,
    /// A granular struct or map: fields are owned one by one.
    Fields(Fields<'a>),
    /// A set (`keys` None) or list-map: elements are owned one by one.
    Items {
        elem: Ty<'a>,
        keys: Option<&'a [String]>,
    },
}

/// The field types of a granular struct or map.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fields<'a> {
    Struct(&'a StructDef),
    Map(Ty<'a>),
    Untyped,
}

impl<'a> Fields<'a> {
    /// The type of a field; `None` for a field a closed struct does not
    /// declare.
    fn field_ty(self, name: &str) -> Option<Ty<'a>> {
        match self {
            Fields::Struct(s) => match s.field(name) {
                Some(f) => Some(Ty::Ref(&f.ty)),
                None => s.other_fields.as_ref().map(Ty::Ref),
            },
            Fields::Map(elem) => Some(elem),
            Fields::Untyped => Some(Ty::Untyped),
        }
    }

    /// Whether `name` is a declared field of a struct.
    fn declares(self, name: &str) -> bool {
        matches!(self, Fields::Struct(s) if s.field(name).is_some())
    }
}

/// The schema operations on values.
#[derive(Debug, Clone, Copy)]
pub struct Typer<'a> {
    schema: &'a Schema,
}

impl<'a> Typer<'a> {
    pub fn new(schema: &'a Schema) -> Self {
        Typer { schema }
    }

    /// How `ty` walks `value` (absent or null: as its schema says).
    pub(crate) fn node(&self, ty: Ty<'a>, value: Option<&Value>) -> Node<'a> {
        let def = match ty {
            Ty::Ref(r) => self.schema.resolve(r),
            Ty::Untyped => &TypeDef::Untyped,
        };
        let value = value.filter(|v| !v.is_null());
        match def {
            TypeDef::Scalar => Node::Leaf,
            TypeDef::Struct(s) if !s.atomic && value.is_none_or(Value::is_object) => {
                Node::Fields(Fields::Struct(s))
            }
            TypeDef::Map(m) if !m.atomic && value.is_none_or(Value::is_object) => {
                Node::Fields(Fields::Map(Ty::Ref(&m.elem)))
            }
            TypeDef::List(l) if value.is_none_or(Value::is_array) => match &l.kind {
                ListKind::Atomic => Node::Leaf,
                ListKind::Set => Node::Items {
                    elem: Ty::Ref(&l.elem),
                    keys: None,
                },
                ListKind::Map { keys } => Node::Items {
                    elem: Ty::Ref(&l.elem),
                    keys: Some(keys),
                },
            },
            TypeDef::Untyped if value.is_some_and(Value::is_object) => {
                Node::Fields(Fields::Untyped)
            }
            _ => Node::Leaf,
        }
    }

    /// The declared fields of a struct type.
    pub fn struct_fields(&self, ty: Ty<'a>) -> Option<&'a [FieldDef]> {
        match self.node(ty, None) {
            Node::Fields(Fields::Struct(s)) => Some(&s.fields),
            _ => None,
        }
    }

    /// The node for two values: the same walk for both, or a leaf when they
    /// differ in kind.
    pub(crate) fn node2(&self, ty: Ty<'a>, lhs: Option<&Value>, rhs: Option<&Value>) -> Node<'a> {
        let r = self.node(ty, rhs.or(lhs));
        match (lhs, rhs) {
            (Some(l), Some(_)) if !same_kind(&self.node(ty, Some(l)), &r) => Node::Leaf,
            _ => r,
        }
    }

    /// The path element naming a list element.
    pub(crate) fn item_key(
        &self,
        elem: Ty<'a>,
        keys: Option<&[String]>,
        item: &Value,
    ) -> Result<PathElement, String> {
        let Some(keys) = keys else {
            return match item {
                Value::Object(_) => {
                    Err("associative list without keys has an element that's a map type".into())
                }
                Value::Array(_) => {
                    Err("not supported: associative list with lists as elements".into())
                }
                Value::Null => Err(
                    "associative list without keys has an element that's an explicit null".into(),
                ),
                v => Ok(PathElement::Value(v.clone())),
            };
        };
        let map = match item {
            Value::Object(map) => map,
            Value::Null => {
                return Err("associative list with keys may not have a null element".into())
            }
            _ => return Err("associative list with keys may not have non-map elements".into()),
        };
        let mut fields = Vec::with_capacity(keys.len());
        for key in keys {
            match map.get(key) {
                Some(v) => fields.push((key.clone(), v.clone())),
                None => {
                    if let Some(d) = key_default(elem, key) {
                        fields.push((key.clone(), d));
                    }
                }
            }
        }
        if !keys.is_empty() && fields.is_empty() {
            let quoted: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
            return Err(format!(
                "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                quoted.join(" ")
            ));
        }
        Ok(PathElement::key(fields))
    }

    /// The fields `value` sets (upstream's ToFieldSet): leaves, list
    /// elements, fields of a map that a struct does not declare, and
    /// declared fields set to null or `{}`.
    pub fn field_set(&self, ty: Ty<'a>, value: &Value) -> Set {
        let mut set = SetBuilder::default();
        self.collect(ty, value, &mut set);
        set.build(0)
    }

    fn collect(&self, ty: Ty<'a>, value: &Value, set: &mut SetBuilder) {
        match self.node(ty, Some(value)) {
            Node::Leaf => set.mark(0),
            Node::Fields(fields) => {
                let Value::Object(map) = value else { return };
                for (key, child) in map {
                    set.push(PathElement::field(key.as_str()));
                    let child_ty = fields.field_ty(key).unwrap_or(Ty::Untyped);
                    self.collect(child_ty, child, set);
                    let empty = child.is_null() || child.as_object().is_some_and(|m| m.is_empty());
                    if empty || !fields.declares(key) {
                        set.mark(0);
                    }
                    set.pop();
                }
            }
            Node::Items { elem, keys } => {
                let Value::Array(items) = value else { return };
                let pes: Vec<Option<PathElement>> = items
                    .iter()
                    .map(|item| self.item_key(elem, keys, item).ok())
                    .collect();
                let duplicated = duplicated(&pes);
                for ((item, pe), duplicated) in items.iter().zip(&pes).zip(duplicated) {
                    let Some(pe) = pe else { continue };
                    set.push(pe.clone());
                    // Duplicated elements are owned as a whole.
                    if !duplicated {
                        self.collect(elem, item, set);
                    }
                    set.mark(0);
                    set.pop();
                }
            }
        }
    }

    /// Checks an applied configuration against the schema: fields a struct
    /// does not declare, list elements without keys, duplicated elements.
    pub fn validate(&self, ty: Ty<'a>, value: &Value) -> Result<(), TypeErrors> {
        let mut errors = Vec::new();
        self.check(ty, value, &mut String::new(), &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(TypeErrors(errors))
        }
    }

    fn check(&self, ty: Ty<'a>, value: &Value, path: &mut String, errors: &mut Vec<TypeError>) {
        let error = |path: &str, message: String| TypeError {
            path: path.to_owned(),
            message,
        };
        match (self.node(ty, Some(value)), value) {
            (Node::Fields(fields), Value::Object(map)) => {
                for (key, child) in map {
                    let len = path.len();
                    path.push('.');
                    path.push_str(key);
                    match fields.field_ty(key) {
                        Some(child_ty) => self.check(child_ty, child, path, errors),
                        None => {
                            errors.push(error(path, "field not declared in schema".into()));
                            path.truncate(len);
                            // Upstream stops at the first undeclared field of a map.
                            break;
                        }
                    }
                    path.truncate(len);
                }
            }
            (Node::Items { elem, keys }, Value::Array(items)) => {
                let mut seen: Vec<PathElement> = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let pe = match self.item_key(elem, keys, item) {
                        Ok(pe) => pe,
                        Err(e) => {
                            errors.push(error(path, format!("element {i}: {e}")));
                            return;
                        }
                    };
                    if seen.contains(&pe) {
                        errors.push(error(path, format!("duplicate entries for key {pe}")));
                    }
                    let len = path.len();
                    path.push_str(&pe.to_string());
                    self.check(elem, item, path, errors);
                    path.truncate(len);
                    seen.push(pe);
                }
            }
            _ => {}
        }
    }

    /// Adds every struct field that has members below it as a member
    /// itself (upstream's EnsureNamedFieldsAreMembers), so that pruning a
    /// struct removes it whole.
    pub fn ensure_named_fields_are_members(&self, ty: Ty<'a>, set: &Set) -> Set {
        let node = self.node(ty, None);
        let mut members = set.members().to_vec();
        let mut children = Vec::new();
        for (pe, child) in set.children() {
            let child_ty = match (node, pe) {
                (Node::Fields(fields), PathElement::Field(name)) => {
                    if fields.declares(name) && !members.contains(pe) {
                        members.push(pe.clone());
                    }
                    fields.field_ty(name).unwrap_or(Ty::Untyped)
                }
                (Node::Items { elem, .. }, PathElement::Key(_)) => elem,
                _ => Ty::Untyped,
            };
            children.push((
                pe.clone(),
                self.ensure_named_fields_are_members(child_ty, child),
            ));
        }
        members.sort();
        Set::from_parts(members, children)
    }
}

fn same_kind(a: &Node<'_>, b: &Node<'_>) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// The default of a key field an element may omit. Upstream's schemas
/// default the `protocol` key of container and service ports to TCP.
fn key_default(elem: Ty<'_>, key: &str) -> Option<Value> {
    let Ty::Ref(TypeRef::Named(name)) = elem else {
        return None;
    };
    let port = name.ends_with(".core.v1.ContainerPort") || name.ends_with(".core.v1.ServicePort");
    (port && key == "protocol").then(|| Value::String("TCP".into()))
}

/// Which of `pes` occur more than once, found by sorting (comparing every
/// pair is quadratic in the length of a list a client sends).
fn duplicated(pes: &[Option<PathElement>]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..pes.len()).filter(|&i| pes[i].is_some()).collect();
    order.sort_unstable_by(|&a, &b| pes[a].cmp(&pes[b]));
    let mut out = vec![false; pes.len()];
    for pair in order.windows(2) {
        if pes[pair[0]] == pes[pair[1]] {
            out[pair[0]] = true;
            out[pair[1]] = true;
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
