//! The Go shape of a field, for the JSON shape table of the `go-json`
//! crate: what Go's `encoding/json` writes for it (its kind, whether it
//! is a pointer, the types that marshal themselves) and the `omitempty` /
//! `omitzero` options of its tag.

use go_types::golang::{tag_value, DeclBody, TypeExpr};

use crate::resolve::{Ctx, Resolver, Ty};
use crate::CodegenError;

/// A field's Go type as `encoding/json` sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum GoTy {
    String,
    Int,
    Float,
    Bool,
    /// `[]byte`: base64, `null` when nil.
    Bytes,
    /// `metav1.Time` / `MicroTime`: `null` when zero.
    Time,
    /// `metav1.Duration`: `"0s"` when zero.
    Duration,
    /// `resource.Quantity`: `"0"` when zero.
    Quantity,
    /// `intstr.IntOrString`: `0` when zero.
    IntOrString,
    /// A struct marshalling itself as raw JSON (RawExtension, FieldsV1,
    /// apiextensions' JSON, …): `null` when zero, never omitted by
    /// `omitempty` (a struct).
    Raw,
    /// `interface{}`: `null` when nil, omitted by `omitempty` when nil.
    Interface,
    Pointer(Box<GoTy>),
    Slice(Box<GoTy>),
    Map(Box<GoTy>),
    /// A struct type by definition name.
    Struct(String),
}

/// The `omitempty` and `omitzero` options of a field's `json` tag.
pub fn omit_options(tag: &str) -> (bool, bool) {
    let opts: Vec<&str> = tag_value(tag, "json")
        .map(|j| j.split(',').skip(1).collect())
        .unwrap_or_default();
    (opts.contains(&"omitempty"), opts.contains(&"omitzero"))
}

/// Types that marshal themselves, by import path and name.
fn self_marshalling(pkg: &str, name: &str) -> Option<GoTy> {
    const META: &str = "k8s.io/apimachinery/pkg/apis/meta/v1";
    const RUNTIME: &str = "k8s.io/apimachinery/pkg/runtime";
    match (pkg, name) {
        (META, "Time" | "MicroTime") => Some(GoTy::Time),
        (META, "Duration") => Some(GoTy::Duration),
        (META, "FieldsV1") | (RUNTIME, "RawExtension" | "Unknown") => Some(GoTy::Raw),
        (RUNTIME, "Object") => Some(GoTy::Interface),
        ("k8s.io/apimachinery/pkg/util/intstr", "IntOrString") => Some(GoTy::IntOrString),
        ("k8s.io/apimachinery/pkg/api/resource", "Quantity") => Some(GoTy::Quantity),
        ("time", "Duration") => Some(GoTy::Int),
        (p, "JSON" | "JSONSchemaPropsOrArray" | "JSONSchemaPropsOrBool")
        | (p, "JSONSchemaPropsOrStringArray")
            if p.starts_with("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/") =>
        {
            Some(GoTy::Raw)
        }
        _ => None,
    }
}

fn predeclared(name: &str) -> Option<GoTy> {
    Some(match name {
        "string" => GoTy::String,
        "bool" => GoTy::Bool,
        "float32" | "float64" => GoTy::Float,
        "byte" | "rune" | "int" | "int8" | "int16" | "int32" | "int64" | "uint" | "uint8"
        | "uint16" | "uint32" | "uint64" => GoTy::Int,
        _ => return None,
    })
}

impl Resolver {
    /// The Go shape of a type expression in `ctx`'s package; struct types
    /// it names are emitted as well.
    pub(crate) fn go_type(&mut self, ctx: &Ctx, expr: &TypeExpr) -> Result<GoTy, CodegenError> {
        match expr {
            TypeExpr::Pointer(inner) => Ok(GoTy::Pointer(Box::new(self.go_type(ctx, inner)?))),
            TypeExpr::Slice(inner) if **inner == TypeExpr::Ident("byte".into()) => Ok(GoTy::Bytes),
            TypeExpr::Slice(inner) => Ok(GoTy::Slice(Box::new(self.go_type(ctx, inner)?))),
            TypeExpr::Map(_, value) => Ok(GoTy::Map(Box::new(self.go_type(ctx, value)?))),
            TypeExpr::Interface | TypeExpr::EmptyStruct => Ok(GoTy::Interface),
            TypeExpr::Opaque(text) => Err(CodegenError::Resolve(format!(
                "{}: unsupported type {text}",
                ctx.pkg
            ))),
            TypeExpr::Ident(name) => match predeclared(name) {
                Some(ty) => Ok(ty),
                None => self.go_named(ctx.pkg, name),
            },
            TypeExpr::Qualified(alias, name) => {
                let pkg = ctx.imports.get(alias).cloned().ok_or_else(|| {
                    CodegenError::Resolve(format!("{}: unknown import {alias}", ctx.pkg))
                })?;
                self.go_named(&pkg, name)
            }
        }
    }

    fn go_named(&mut self, pkg: &str, name: &str) -> Result<GoTy, CodegenError> {
        if let Some(ty) = self_marshalling(pkg, name) {
            return Ok(ty);
        }
        let decl = self.decl(pkg, name)?;
        let ctx = Ctx {
            pkg,
            imports: &decl.imports,
        };
        match &decl.body {
            DeclBody::Alias(target) => self.go_type(&ctx, target),
            DeclBody::Struct(_) | DeclBody::Defined(_) => match self.emit_struct_type(pkg, name)? {
                Ty::Named(def) => Ok(GoTy::Struct(def)),
                _ => match &decl.body {
                    DeclBody::Defined(target) => self.go_type(&ctx, target),
                    _ => Err(CodegenError::Resolve(format!("{pkg}.{name}: not a struct"))),
                },
            },
            DeclBody::Opaque => Err(CodegenError::Resolve(format!(
                "{pkg}.{name} is not a data type"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_omit_options() {
        assert_eq!(omit_options(r#"json:"a,omitempty""#), (true, false));
        assert_eq!(omit_options(r#"json:"a,omitempty,omitzero""#), (true, true));
        assert_eq!(
            omit_options(r#"json:"a" protobuf:"omitempty""#),
            (false, false)
        );
    }
}
