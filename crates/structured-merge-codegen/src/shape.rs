//! Writes the JSON shape table of the `go-json` crate
//! (`crates/go-json/src/generated/shapes.table`, format described in
//! `go_json::table`): every struct type's fields in Go's order with their
//! Go shapes and `omitempty` / `omitzero` options.

use std::fmt::Write;

use crate::emit::{preamble, Kind};
use crate::gotype::GoTy;
use crate::resolve::OutStruct;

pub fn render(header: &str, kinds: &[Kind], structs: &[(&String, &OutStruct)]) -> String {
    let mut out = preamble(header, kinds);
    for (name, s) in structs {
        let _ = writeln!(out, "type {name}");
        for f in &s.fields {
            let flags = match (f.omit_empty, f.omit_zero) {
                (false, false) => "-",
                (true, false) => "e",
                (false, true) => "z",
                (true, true) => "ez",
            };
            let _ = write!(out, " {} {flags} ", f.name);
            write_go(&mut out, &f.go);
            out.push('\n');
        }
    }
    out
}

/// `s` string, `i` integer, `f` float, `b` bool, `B` bytes, `t` time,
/// `d` duration, `q` quantity, `n` int-or-string, `r` raw, `a` interface,
/// `*`/`[`/`{` pointer to / slice of / map of the type that follows,
/// `@<name>` a struct.
fn write_go(out: &mut String, ty: &GoTy) {
    let code = match ty {
        GoTy::String => "s",
        GoTy::Int => "i",
        GoTy::Float => "f",
        GoTy::Bool => "b",
        GoTy::Bytes => "B",
        GoTy::Time => "t",
        GoTy::Duration => "d",
        GoTy::Quantity => "q",
        GoTy::IntOrString => "n",
        GoTy::Raw => "r",
        GoTy::Interface => "a",
        GoTy::Pointer(inner) | GoTy::Slice(inner) | GoTy::Map(inner) => {
            out.push(match ty {
                GoTy::Pointer(_) => '*',
                GoTy::Slice(_) => '[',
                _ => '{',
            });
            return write_go(out, inner);
        }
        GoTy::Struct(name) => {
            out.push('@');
            out.push_str(name);
            return;
        }
    };
    out.push_str(code);
}
