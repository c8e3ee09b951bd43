//! The schema model: named types made of scalars, structs, lists and maps,
//! with the list and map semantics server-side apply needs
//! (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`, atomic structs) and the patch metadata strategic
//! merge patch needs (`patchStrategy`, `patchMergeKey`).
//!
//! A schema is plain owned data so that it can be built at run time from a
//! CustomResourceDefinition as well as from the generated built-in tables.

use std::collections::HashMap;

/// A set of named types. Names of built-in types are OpenAPI definition
/// names (`io.k8s.api.core.v1.PodSpec`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    types: HashMap<String, TypeDef>,
}

impl Schema {
    pub fn new() -> Self {
        Schema::default()
    }

    pub fn insert(&mut self, name: impl Into<String>, def: TypeDef) {
        self.types.insert(name.into(), def);
    }

    pub fn get(&self, name: &str) -> Option<&TypeDef> {
        self.types.get(name)
    }

    /// The definition a reference stands for (an unknown name is untyped).
    pub fn resolve<'a>(&'a self, ty: &'a TypeRef) -> &'a TypeDef {
        match ty {
            TypeRef::Named(name) => self.types.get(name).unwrap_or(&TypeDef::Untyped),
            TypeRef::Inline(def) => def,
        }
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }
}

/// A reference to a type: by name, or spelled out in place.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeRef {
    Named(String),
    Inline(Box<TypeDef>),
}

impl TypeRef {
    pub fn named(name: impl Into<String>) -> Self {
        TypeRef::Named(name.into())
    }

    pub fn scalar() -> Self {
        TypeRef::Inline(Box::new(TypeDef::Scalar))
    }

    pub fn untyped() -> Self {
        TypeRef::Inline(Box::new(TypeDef::Untyped))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum TypeDef {
    /// A string, number or boolean (also Quantity, Time, IntOrString…):
    /// replaced as a whole.
    Scalar,
    Struct(StructDef),
    List(ListDef),
    Map(MapDef),
    /// Any JSON (RawExtension, `x-kubernetes-preserve-unknown-fields`
    /// without properties): its structure is deduced from the value, maps
    /// granular and lists atomic, as upstream's "deduced" type.
    Untyped,
}

/// An object with known fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StructDef {
    pub fields: Vec<FieldDef>,
    /// `+structType=atomic`: owned and replaced as a whole.
    pub atomic: bool,
    /// The type of fields not listed (`x-kubernetes-preserve-unknown-fields`
    /// or `additionalProperties` next to properties); `None` drops them.
    pub other_fields: Option<TypeRef>,
}

impl StructDef {
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.name == name)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    /// The JSON name.
    pub name: String,
    pub ty: TypeRef,
    /// Strategic merge patch metadata of the field (lists and maps).
    pub patch: PatchMeta,
}

impl FieldDef {
    pub fn new(name: impl Into<String>, ty: TypeRef) -> Self {
        FieldDef {
            name: name.into(),
            ty,
            patch: PatchMeta::default(),
        }
    }
}

/// The Go `patchStrategy` / `patchMergeKey` tags of a field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PatchMeta {
    /// Lists: merge element by element (by `merge_key` for lists of
    /// objects, as a set for lists of scalars) instead of replacing.
    pub merge: bool,
    /// `retainKeys`: fields of the patched struct that the patch leaves
    /// out are cleared when `$retainKeys` says so (volume sources, …).
    pub retain_keys: bool,
    /// `replace` given explicitly (same as no strategy for lists).
    pub replace: bool,
    pub merge_key: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListDef {
    pub elem: TypeRef,
    pub kind: ListKind,
}

/// `x-kubernetes-list-type` (default atomic).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ListKind {
    #[default]
    Atomic,
    /// Scalars, each owned separately.
    Set,
    /// Objects identified by the values of these fields.
    Map { keys: Vec<String> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct MapDef {
    pub elem: TypeRef,
    /// `x-kubernetes-map-type: atomic` (default granular).
    pub atomic: bool,
}
