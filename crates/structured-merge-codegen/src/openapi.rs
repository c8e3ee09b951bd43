//! Writes the OpenAPI field table of kube-apiserver
//! (`crates/kube-apiserver/src/controlplane/openapi/generated/fields.table`,
//! read by `controlplane::openapi::generated`): for every struct type, the
//! fields upstream's generated OpenAPI (`pkg/generated/openapi`, written by
//! kube-openapi's `openapi-gen`) marks required and the `default` it
//! gives them. openapi-gen's rules: a field is required when it has
//! `+required`, or has neither `+optional` nor `omitempty`; its default
//! is its `+default=` marker (`ref(Name)` naming a constant of the
//! package) or, when the type forces one, Go's zero value: `{}` for a
//! struct held by value (a struct of a single embedded type as that
//! type), `""`, `0` or `false` for a scalar without `omitempty`, nothing
//! for pointers, slices, maps and types that unmarshal themselves. A
//! `,string` field has no default.

use std::fmt::Write;

use go_types::golang::{tag_value, DeclBody, Field, TypeExpr};

use crate::emit::preamble;
use crate::gotype::GoTy;
use crate::resolve::{Ctx, OutStruct, Resolver};
use crate::CodegenError;

/// The line format: `type <definition>`, then one line per required or
/// defaulted field: ` <json name> <r|-> [<default as JSON>]`.
pub fn render(header: &str, structs: &[(&String, &OutStruct)]) -> String {
    let mut out = preamble(header, &[]);
    for (name, s) in structs {
        let _ = writeln!(out, "type {name}");
        for f in s
            .fields
            .iter()
            .filter(|f| f.required || f.default.is_some())
        {
            let flag = if f.required { "r" } else { "-" };
            let _ = write!(out, " {} {flag}", f.name);
            if let Some(d) = &f.default {
                let _ = write!(out, " {d}");
            }
            out.push('\n');
        }
    }
    out
}

/// The value of a `+name` comment marker (`Some("")` for a bare one), as
/// gengo's `ExtractCommentTags` reads the first.
fn marker<'a>(doc: &'a [String], name: &str) -> Option<&'a str> {
    doc.iter().find_map(|line| {
        let rest = line.trim().strip_prefix('+')?;
        let (key, value) = rest.split_once('=').unwrap_or((rest, ""));
        (key == name).then_some(value)
    })
}

/// kube-openapi's `isOptional`, negated.
pub fn required(doc: &[String], omit_empty: bool) -> bool {
    if marker(doc, "required").is_some() {
        return true;
    }
    marker(doc, "optional").is_none() && !omit_empty
}

fn json_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Resolver {
    /// The `default` openapi-gen writes for a field, as JSON text.
    pub(crate) fn field_default(
        &mut self,
        ctx: &Ctx,
        field: &Field,
        go: &GoTy,
        omit_empty: bool,
    ) -> Result<Option<String>, CodegenError> {
        let json = tag_value(&field.tag, "json").unwrap_or("");
        if json.split(',').skip(1).any(|o| o == "string") {
            return Ok(None);
        }
        if let Some(value) = marker(&field.doc, "default") {
            let Some(name) = value.strip_prefix("ref(").and_then(|v| v.strip_suffix(')')) else {
                return Ok(Some(value.to_owned()));
            };
            let package = self.package(ctx.pkg)?;
            let constant = package.constants.get(name).ok_or_else(|| {
                CodegenError::Resolve(format!("{}: no string constant {name}", ctx.pkg))
            })?;
            return Ok(Some(json_string(constant)));
        }
        self.enforced_default(ctx, &field.ty, go, omit_empty)
    }

    /// kube-openapi's `mustEnforceDefault`.
    fn enforced_default(
        &mut self,
        ctx: &Ctx,
        ty: &TypeExpr,
        go: &GoTy,
        omit_empty: bool,
    ) -> Result<Option<String>, CodegenError> {
        let zero = match go {
            GoTy::String => "\"\"",
            GoTy::Int | GoTy::Float => "0",
            GoTy::Bool => "false",
            GoTy::Struct(_) => return self.struct_default(ctx, ty, omit_empty),
            _ => return Ok(None),
        };
        Ok((!omit_empty).then(|| zero.to_owned()))
    }

    /// `{}`, or for a struct of one embedded type, that type's default.
    fn struct_default(
        &mut self,
        ctx: &Ctx,
        ty: &TypeExpr,
        omit_empty: bool,
    ) -> Result<Option<String>, CodegenError> {
        let (pkg, name) = match ty {
            TypeExpr::Ident(n) => (ctx.pkg.to_owned(), n.clone()),
            TypeExpr::Qualified(alias, n) => match ctx.imports.get(alias) {
                Some(p) => (p.clone(), n.clone()),
                None => return Ok(Some("{}".into())),
            },
            _ => return Ok(Some("{}".into())),
        };
        let decl = self.decl(&pkg, &name)?;
        let ectx = Ctx {
            pkg: &pkg,
            imports: &decl.imports,
        };
        match &decl.body {
            DeclBody::Struct(fields) if fields.len() == 1 && fields[0].name.is_none() => {
                let go = self.go_type(&ectx, &fields[0].ty)?;
                self.enforced_default(&ectx, &fields[0].ty, &go, omit_empty)
            }
            DeclBody::Defined(target) | DeclBody::Alias(target) => {
                let go = self.go_type(&ectx, target)?;
                self.enforced_default(&ectx, target, &go, omit_empty)
            }
            _ => Ok(Some("{}".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn required_follows_markers_then_omitempty() {
        assert!(required(&doc(&["Name."]), false));
        assert!(!required(&doc(&["Name."]), true));
        assert!(!required(&doc(&["+optional"]), false));
        assert!(required(&doc(&["+required"]), true));
        assert!(!required(&doc(&["+k8s:required"]), true));
        assert_eq!(
            marker(&doc(&["+default=\"TCP\""]), "default"),
            Some("\"TCP\"")
        );
        assert_eq!(
            marker(&doc(&["+kubebuilder:default=\"\""]), "default"),
            None
        );
    }
}
