//! Writes the generated table in the line format that
//! `structured_merge::builtin` reads (described there).

use std::fmt::Write;

use crate::resolve::{ListKind, OutStruct, Ty};

/// A resource kind and its root type.
pub struct Kind {
    pub api_version: String,
    pub kind: String,
    pub type_name: String,
}

/// The header comment and the `kind` lines both generated tables start
/// with.
pub fn preamble(header: &str, kinds: &[Kind]) -> String {
    let mut out = String::with_capacity(1 << 20);
    for line in header.lines() {
        let _ = writeln!(out, "# {line}");
    }
    for k in kinds {
        let _ = writeln!(out, "kind {} {} {}", k.api_version, k.kind, k.type_name);
    }
    out
}

pub fn render(header: &str, kinds: &[Kind], structs: &[(&String, &OutStruct)]) -> String {
    let mut out = preamble(header, kinds);
    for (name, s) in structs {
        let atomic = if s.atomic { " atomic" } else { "" };
        let _ = writeln!(out, "type {name}{atomic}");
        for f in &s.fields {
            out.push(' ');
            out.push_str(&f.name);
            out.push(' ');
            write_ty(&mut out, &f.ty);
            if f.merge {
                out.push_str(" merge");
            }
            if f.retain_keys {
                out.push_str(" retainKeys");
            }
            if f.replace {
                out.push_str(" replace");
            }
            if let Some(key) = &f.merge_key {
                let _ = write!(out, " key={key}");
            }
            out.push('\n');
        }
    }
    out
}

/// `s` scalar, `u` untyped, `@Name`, `[a:`/`[s:`/`[m=k1,k2:` list of the
/// element type that follows, `{:`/`{a:` (granular/atomic) map of it.
fn write_ty(out: &mut String, ty: &Ty) {
    match ty {
        Ty::Scalar => out.push('s'),
        Ty::Untyped => out.push('u'),
        Ty::Named(n) => {
            out.push('@');
            out.push_str(n);
        }
        Ty::List { kind, elem } => {
            match kind {
                ListKind::Atomic => out.push_str("[a:"),
                ListKind::Set => out.push_str("[s:"),
                ListKind::Map(keys) => {
                    let _ = write!(out, "[m={}:", keys.join(","));
                }
            }
            write_ty(out, elem);
        }
        Ty::Map { atomic, elem } => {
            out.push_str(if *atomic { "{a:" } else { "{:" });
            write_ty(out, elem);
        }
    }
}
