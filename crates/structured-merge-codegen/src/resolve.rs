//! Turns parsed Go declarations into schema types: JSON field names,
//! flattened inline embeds, OpenAPI definition names for struct types,
//! named scalar and collection types spelled out in place, and the list,
//! map and struct semantics given by markers and patch tags.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use crate::gotype::{omit_options, GoTy};
use crate::CodegenError;
use go_types::golang::{tag_value, DeclBody, Field, TypeDecl, TypeExpr};
use go_types::source::{Loader, Package};

/// A resolved type, as written to the generated table.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Scalar,
    Untyped,
    Named(String),
    List { kind: ListKind, elem: Box<Ty> },
    Map { atomic: bool, elem: Box<Ty> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum ListKind {
    Atomic,
    Set,
    Map(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutField {
    pub name: String,
    pub ty: Ty,
    pub merge: bool,
    pub retain_keys: bool,
    pub replace: bool,
    pub merge_key: Option<String>,
    /// The Go shape of the field and its `omitempty` / `omitzero` options.
    pub go: GoTy,
    pub omit_empty: bool,
    pub omit_zero: bool,
    /// Required in upstream's OpenAPI, and the `default` it gives (JSON).
    pub required: bool,
    pub default: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutStruct {
    pub atomic: bool,
    pub fields: Vec<OutField>,
}

/// The `+listType`, `+listMapKey`, `+mapType` and `+structType` markers of
/// a comment block.
#[derive(Debug, Clone, Default)]
struct Markers {
    list_type: Option<String>,
    list_map_keys: Vec<String>,
    map_type: Option<String>,
    struct_type: Option<String>,
}

impl Markers {
    fn parse(doc: &[String]) -> Markers {
        let mut m = Markers::default();
        for line in doc {
            let value = |prefix: &str| {
                line.strip_prefix(prefix)
                    .map(|v| v.split_whitespace().next().unwrap_or("").to_owned())
            };
            if let Some(v) = value("+listType=") {
                m.list_type = Some(v);
            } else if let Some(v) = value("+listMapKey=") {
                m.list_map_keys.push(v);
            } else if let Some(v) = value("+mapType=") {
                m.map_type = Some(v);
            } else if let Some(v) = value("+structType=") {
                m.struct_type = Some(v);
            }
        }
        m
    }

    /// Field markers override those of the named type they use.
    fn over(self, base: &Markers) -> Markers {
        Markers {
            list_type: self.list_type.or_else(|| base.list_type.clone()),
            list_map_keys: if self.list_map_keys.is_empty() {
                base.list_map_keys.clone()
            } else {
                self.list_map_keys
            },
            map_type: self.map_type.or_else(|| base.map_type.clone()),
            struct_type: self.struct_type.or_else(|| base.struct_type.clone()),
        }
    }
}

/// The `patchStrategy` / `patchMergeKey` tags of a field.
#[derive(Debug, Clone, Default)]
struct PatchTags {
    merge: bool,
    retain_keys: bool,
    replace: bool,
    merge_key: Option<String>,
}

impl PatchTags {
    fn parse(tag: &str) -> PatchTags {
        let strategies: Vec<&str> = tag_value(tag, "patchStrategy")
            .map(|s| s.split(',').collect())
            .unwrap_or_default();
        PatchTags {
            merge: strategies.contains(&"merge"),
            retain_keys: strategies.contains(&"retainKeys"),
            replace: strategies.contains(&"replace"),
            merge_key: tag_value(tag, "patchMergeKey")
                .filter(|k| !k.is_empty())
                .map(str::to_owned),
        }
    }
}

/// Types that marshal themselves (custom JSON) rather than as their Go
/// structure, by import path and name.
fn override_type(pkg: &str, name: &str) -> Option<Ty> {
    const META: &str = "k8s.io/apimachinery/pkg/apis/meta/v1";
    const CRD: &str = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1";
    match (pkg, name) {
        (META, "Time" | "MicroTime" | "Duration")
        | ("k8s.io/apimachinery/pkg/util/intstr", "IntOrString")
        | ("k8s.io/apimachinery/pkg/api/resource", "Quantity")
        | ("time", "Duration") => Some(Ty::Scalar),
        (META, "FieldsV1")
        | ("k8s.io/apimachinery/pkg/runtime", "RawExtension" | "Unknown" | "Object")
        | (
            CRD,
            "JSON"
            | "JSONSchemaPropsOrArray"
            | "JSONSchemaPropsOrBool"
            | "JSONSchemaPropsOrStringArray",
        ) => Some(Ty::Untyped),
        _ => None,
    }
}

fn is_predeclared_scalar(name: &str) -> bool {
    matches!(
        name,
        "string"
            | "bool"
            | "byte"
            | "rune"
            | "int"
            | "int8"
            | "int16"
            | "int32"
            | "int64"
            | "uint"
            | "uint8"
            | "uint16"
            | "uint32"
            | "uint64"
            | "float32"
            | "float64"
    )
}

/// The OpenAPI definition name of a Go type: `k8s.io/api/core/v1.PodSpec`
/// → `io.k8s.api.core.v1.PodSpec`.
pub fn definition_name(pkg: &str, name: &str) -> String {
    let path = pkg.strip_prefix("k8s.io/").unwrap_or(pkg);
    format!("io.k8s.{}.{name}", path.replace('/', "."))
}

/// Resolves types on demand, loading the packages they live in.
pub struct Resolver {
    loader: Loader,
    /// Emitted struct types by definition name (`None` while in progress).
    pub structs: BTreeMap<String, Option<OutStruct>>,
}

pub(crate) struct Ctx<'a> {
    pub pkg: &'a str,
    pub imports: &'a HashMap<String, String>,
}

impl Resolver {
    pub fn new(loader: Loader) -> Self {
        Resolver {
            loader,
            structs: BTreeMap::new(),
        }
    }

    /// Every struct type emitted so far, by definition name.
    pub fn emitted(&self) -> Vec<(&String, &OutStruct)> {
        self.structs
            .iter()
            .filter_map(|(n, s)| s.as_ref().map(|s| (n, s)))
            .collect()
    }

    pub fn package(&mut self, pkg: &str) -> Result<Rc<Package>, CodegenError> {
        Ok(self.loader.load(pkg)?)
    }

    /// Emits the struct type `name` of `pkg` (and every type it uses).
    pub fn emit_struct(&mut self, pkg: &str, name: &str) -> Result<(), CodegenError> {
        match self.emit_struct_type(pkg, name)? {
            Ty::Named(_) | Ty::Scalar | Ty::Untyped => Ok(()),
            other => Err(CodegenError::Resolve(format!(
                "{pkg}.{name} is not a struct: {other:?}"
            ))),
        }
    }

    /// Emits the named type if it is a struct (its definition name), or
    /// resolves it to the collection or scalar it is.
    pub(crate) fn emit_struct_type(&mut self, pkg: &str, name: &str) -> Result<Ty, CodegenError> {
        self.resolve_named(pkg, name, &Markers::default(), &PatchTags::default())
    }

    pub(crate) fn decl(&mut self, pkg: &str, name: &str) -> Result<TypeDecl, CodegenError> {
        let package = self.loader.load(pkg)?;
        package
            .types
            .get(name)
            .cloned()
            .ok_or_else(|| CodegenError::Resolve(format!("type {pkg}.{name} not found")))
    }

    fn resolve_named(
        &mut self,
        pkg: &str,
        name: &str,
        markers: &Markers,
        patch: &PatchTags,
    ) -> Result<Ty, CodegenError> {
        if let Some(ty) = override_type(pkg, name) {
            return Ok(ty);
        }
        let decl = self.decl(pkg, name)?;
        let ctx = Ctx {
            pkg,
            imports: &decl.imports,
        };
        let decl_markers = Markers::parse(&decl.doc);
        match &decl.body {
            DeclBody::Struct(fields) => {
                self.emit_named_struct(pkg, name, &decl_markers, |r| r.struct_fields(&ctx, fields))
            }
            DeclBody::Alias(target) => self.resolve_expr(&ctx, target, markers, patch),
            DeclBody::Defined(target) => {
                // `type X other.Struct` is a struct of its own with the
                // same fields.
                let target_struct = self
                    .named_target(&ctx, target)
                    .filter(|(p, n)| override_type(p, n).is_none());
                if let Some((tpkg, tname)) = target_struct {
                    let tdecl = self.decl(&tpkg, &tname)?;
                    if let DeclBody::Struct(fields) = &tdecl.body {
                        let tctx = Ctx {
                            pkg: &tpkg,
                            imports: &tdecl.imports,
                        };
                        return self.emit_named_struct(pkg, name, &decl_markers, |r| {
                            r.struct_fields(&tctx, fields)
                        });
                    }
                }
                let merged = markers.clone().over(&decl_markers);
                self.resolve_expr(&ctx, target, &merged, patch)
            }
            DeclBody::Opaque => Err(CodegenError::Resolve(format!(
                "{pkg}.{name} is not a data type"
            ))),
        }
    }

    fn named_target(&self, ctx: &Ctx, expr: &TypeExpr) -> Option<(String, String)> {
        match expr {
            TypeExpr::Ident(n) if !is_predeclared_scalar(n) => {
                Some((ctx.pkg.to_owned(), n.clone()))
            }
            TypeExpr::Qualified(alias, n) => ctx.imports.get(alias).map(|p| (p.clone(), n.clone())),
            _ => None,
        }
    }

    fn emit_named_struct(
        &mut self,
        pkg: &str,
        name: &str,
        markers: &Markers,
        fields: impl FnOnce(&mut Self) -> Result<Vec<OutField>, CodegenError>,
    ) -> Result<Ty, CodegenError> {
        let def = definition_name(pkg, name);
        if !self.structs.contains_key(&def) {
            self.structs.insert(def.clone(), None);
            let out = OutStruct {
                atomic: markers.struct_type.as_deref() == Some("atomic"),
                fields: fields(self)?,
            };
            self.structs.insert(def.clone(), Some(out));
        }
        Ok(Ty::Named(def))
    }

    fn struct_fields(
        &mut self,
        ctx: &Ctx,
        fields: &[Field],
    ) -> Result<Vec<OutField>, CodegenError> {
        let mut out: Vec<OutField> = Vec::new();
        for field in fields {
            let json = tag_value(&field.tag, "json").unwrap_or("");
            let json_name = json.split(',').next().unwrap_or("");
            if json_name == "-" {
                continue;
            }
            // An embed with a JSON name is an ordinary field.
            let go_name = match &field.name {
                Some(n) => n.as_str(),
                None if json_name.is_empty() => {
                    for f in self.embedded_fields(ctx, &field.ty)? {
                        if !out.iter().any(|o| o.name == f.name) {
                            out.push(f);
                        }
                    }
                    continue;
                }
                None => json_name,
            };
            if field.name.is_some() && !go_name.starts_with(|c: char| c.is_ascii_uppercase()) {
                continue;
            }
            let name = if json_name.is_empty() {
                go_name
            } else {
                json_name
            };
            let markers = Markers::parse(&field.doc);
            let patch = PatchTags::parse(&field.tag);
            let ty = self.resolve_expr(ctx, &field.ty, &markers, &patch)?;
            let go = self.go_type(ctx, &field.ty)?;
            let (omit_empty, omit_zero) = omit_options(&field.tag);
            let default = self.field_default(ctx, field, &go, omit_empty)?;
            out.retain(|o| o.name != name);
            out.push(OutField {
                name: name.to_owned(),
                ty,
                merge: patch.merge,
                retain_keys: patch.retain_keys,
                replace: patch.replace,
                merge_key: patch.merge_key,
                go,
                omit_empty,
                omit_zero,
                required: crate::openapi::required(&field.doc, omit_empty),
                default,
            });
        }
        Ok(out)
    }

    /// The fields an inline embed contributes.
    fn embedded_fields(&mut self, ctx: &Ctx, ty: &TypeExpr) -> Result<Vec<OutField>, CodegenError> {
        let inner = match ty {
            TypeExpr::Pointer(t) => t.as_ref(),
            t => t,
        };
        let (pkg, name) = self
            .named_target(ctx, inner)
            .ok_or_else(|| CodegenError::Resolve(format!("{}: embedded {inner:?}", ctx.pkg)))?;
        let decl = self.decl(&pkg, &name)?;
        let ectx = Ctx {
            pkg: &pkg,
            imports: &decl.imports,
        };
        match &decl.body {
            DeclBody::Struct(fields) => self.struct_fields(&ectx, fields),
            DeclBody::Alias(target) | DeclBody::Defined(target) => {
                self.embedded_fields(&ectx, target)
            }
            DeclBody::Opaque => Err(CodegenError::Resolve(format!(
                "{pkg}.{name}: embedded non-struct"
            ))),
        }
    }

    fn resolve_expr(
        &mut self,
        ctx: &Ctx,
        expr: &TypeExpr,
        markers: &Markers,
        patch: &PatchTags,
    ) -> Result<Ty, CodegenError> {
        match expr {
            TypeExpr::Pointer(inner) => self.resolve_expr(ctx, inner, markers, patch),
            TypeExpr::Slice(inner) if **inner == TypeExpr::Ident("byte".into()) => Ok(Ty::Scalar),
            TypeExpr::Slice(inner) => {
                let elem =
                    self.resolve_expr(ctx, inner, &Markers::default(), &PatchTags::default())?;
                let kind = list_kind(markers, patch);
                Ok(Ty::List {
                    kind,
                    elem: Box::new(elem),
                })
            }
            TypeExpr::Map(_, value) => {
                let elem =
                    self.resolve_expr(ctx, value, &Markers::default(), &PatchTags::default())?;
                Ok(Ty::Map {
                    atomic: markers.map_type.as_deref() == Some("atomic"),
                    elem: Box::new(elem),
                })
            }
            TypeExpr::Interface | TypeExpr::EmptyStruct => Ok(Ty::Untyped),
            TypeExpr::Opaque(text) => Err(CodegenError::Resolve(format!(
                "{}: unsupported type {text}",
                ctx.pkg
            ))),
            TypeExpr::Ident(name) if is_predeclared_scalar(name) => Ok(Ty::Scalar),
            TypeExpr::Ident(name) => self.resolve_named(ctx.pkg, name, markers, patch),
            TypeExpr::Qualified(alias, name) => {
                let pkg = ctx.imports.get(alias).cloned().ok_or_else(|| {
                    CodegenError::Resolve(format!("{}: unknown import {alias}", ctx.pkg))
                })?;
                self.resolve_named(&pkg, name, markers, patch)
            }
        }
    }
}

/// `+listType` decides; without it a `patchStrategy=merge` list is a map
/// keyed by its merge key (or a set), as upstream's schema conversion
/// (kube-openapi's schemaconv) does.
fn list_kind(markers: &Markers, patch: &PatchTags) -> ListKind {
    match markers.list_type.as_deref() {
        Some("map") => ListKind::Map(markers.list_map_keys.clone()),
        Some("set") => ListKind::Set,
        Some(_) => ListKind::Atomic,
        None if patch.merge => match &patch.merge_key {
            Some(key) => ListKind::Map(vec![key.clone()]),
            None => ListKind::Set,
        },
        None => ListKind::Atomic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"
package v1

type TypeMeta struct {
	Kind string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

type Time struct {
	Time int64 `json:"-"`
}
"#;

    const API: &str = r#"
package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

const GroupName = "test.k8s.io"

type Thing struct {
	metav1.TypeMeta `json:""`
	Spec ThingSpec `json:"spec"`
}

// +structType=atomic
type Ref struct {
	Name string `json:"name"`
}

// +listType=set
type Names []string

type ThingSpec struct {
	Items []Item `json:"items" patchStrategy:"merge" patchMergeKey:"name"`
	// +listType=atomic
	Plain []Item `json:"plain" patchStrategy:"merge" patchMergeKey:"name"`
	// +listType=map
	// +listMapKey=name
	// +listMapKey=port
	Keyed []Item `json:"keyed"`
	Tags Names `json:"tags"`
	Finalizers []string `json:"finalizers" patchStrategy:"merge,retainKeys"`
	// +mapType=atomic
	Sel map[string]string `json:"sel"`
	Ref *Ref `json:"ref,omitempty"`
	Raw []byte `json:"raw"`
	Skip string `json:"-"`
	hidden string
	Inline `json:",inline"`
	When metav1.Time `json:"when"`
}

type Inline struct {
	Extra string `json:"extra"`
}

type Item struct {
	Name string `json:"name"`
}
"#;

    fn resolved() -> BTreeMap<String, Option<OutStruct>> {
        let loader = Loader::from_sources(&[
            ("k8s.io/apimachinery/pkg/apis/meta/v1", META),
            ("k8s.io/api/test/v1", API),
        ])
        .unwrap();
        let mut r = Resolver::new(loader);
        r.emit_struct("k8s.io/api/test/v1", "Thing").unwrap();
        r.structs
    }

    #[test]
    fn resolves_fields_markers_and_patch_tags() {
        let structs = resolved();
        let spec = structs["io.k8s.api.test.v1.ThingSpec"].as_ref().unwrap();
        let field = |n: &str| spec.fields.iter().find(|f| f.name == n).unwrap();
        let item = || Box::new(Ty::Named("io.k8s.api.test.v1.Item".into()));
        let items = field("items");
        assert_eq!(
            items.ty,
            Ty::List {
                kind: ListKind::Map(vec!["name".into()]),
                elem: item()
            }
        );
        assert!(items.merge && items.merge_key.as_deref() == Some("name"));
        assert_eq!(
            field("plain").ty,
            Ty::List {
                kind: ListKind::Atomic,
                elem: item()
            }
        );
        let keyed = ListKind::Map(vec!["name".into(), "port".into()]);
        assert_eq!(
            field("keyed").ty,
            Ty::List {
                kind: keyed,
                elem: item()
            }
        );
        assert_eq!(
            field("tags").ty,
            Ty::List {
                kind: ListKind::Set,
                elem: Box::new(Ty::Scalar)
            }
        );
        let finalizers = field("finalizers");
        assert!(finalizers.merge && finalizers.retain_keys);
        assert_eq!(
            finalizers.ty,
            Ty::List {
                kind: ListKind::Set,
                elem: Box::new(Ty::Scalar)
            }
        );
        assert_eq!(
            field("sel").ty,
            Ty::Map {
                atomic: true,
                elem: Box::new(Ty::Scalar)
            }
        );
        assert_eq!(field("ref").ty, Ty::Named("io.k8s.api.test.v1.Ref".into()));
        assert_eq!(field("raw").ty, Ty::Scalar);
        assert_eq!(field("when").ty, Ty::Scalar);
        assert_eq!(field("extra").ty, Ty::Scalar);
        let names: Vec<&str> = spec.fields.iter().map(|f| f.name.as_str()).collect();
        assert!(
            !names.contains(&"Skip") && !names.contains(&"hidden"),
            "{names:?}"
        );
        assert!(structs["io.k8s.api.test.v1.Ref"].as_ref().unwrap().atomic);
        let thing = structs["io.k8s.api.test.v1.Thing"].as_ref().unwrap();
        let names: Vec<&str> = thing.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["kind", "apiVersion", "spec"]);
        assert!(!structs.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.Time"));
    }
}
