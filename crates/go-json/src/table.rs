//! The generated shape table (`generated/shapes.table`), parsed once on
//! first use.
//!
//! The file is line-based; `#` starts a comment line.
//! `kind <apiVersion> <Kind> <type>` names the root type of a kind;
//! `type <name>` starts a struct type whose fields follow in Go's order,
//! one a line, each indented by a space: `<json name> <options> <shape>`.
//! Options are `-`, `e` (`omitempty`), `z` (`omitzero`) or `ez`. A shape
//! is `s` string, `i` integer, `f` float, `b` bool, `B` `[]byte`, `t`
//! `metav1.Time`/`MicroTime`, `d` `metav1.Duration`, `q` `Quantity`, `n`
//! `IntOrString`, `r` a struct that marshals itself as raw JSON
//! (`RawExtension`, `FieldsV1`, …), `a` `interface{}`, `*`/`[`/`{`
//! followed by a shape (pointer to, slice of, map of it), or `@<type>`.

use std::collections::HashMap;
use std::sync::OnceLock;

const TABLE: &str = include_str!("generated/shapes.table");

/// What Go's `encoding/json` sees in a field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    String,
    Int,
    Float,
    Bool,
    Bytes,
    Time,
    Duration,
    Quantity,
    IntOrString,
    Raw,
    Interface,
    Pointer(Box<Shape>),
    Slice(Box<Shape>),
    Map(Box<Shape>),
    /// A struct type, by index in [`Shapes::structs`].
    Struct(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub omit_empty: bool,
    pub omit_zero: bool,
    pub shape: Shape,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StructShape {
    pub name: String,
    pub fields: Vec<Field>,
}

/// A line of the table that does not follow its format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shapes.table line {line}: {message}")]
pub struct FormatError {
    pub line: usize,
    pub message: String,
}

/// The parsed table.
#[derive(Debug, Default)]
pub struct Shapes {
    pub structs: Vec<StructShape>,
    by_name: HashMap<String, usize>,
    /// (apiVersion, kind) → struct index.
    kinds: HashMap<(String, String), usize>,
}

impl Shapes {
    /// The root struct of a kind at an apiVersion (`apps/v1`, `v1`).
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        self.kinds
            .get(&(api_version.to_owned(), kind.to_owned()))
            .copied()
    }

    /// A struct type by definition name
    /// (`io.k8s.apimachinery.pkg.apis.meta.v1.Status`).
    pub fn by_name(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
}

/// The built-in table.
pub fn shapes() -> &'static Shapes {
    static SHAPES: OnceLock<Shapes> = OnceLock::new();
    // The table is part of the build, not input; the `generated_table_parses`
    // test keeps it well-formed.
    SHAPES.get_or_init(|| parse(TABLE).expect("generated shapes.table is well-formed"))
}

/// Parses a table in the format described in the module documentation.
pub fn parse(text: &str) -> Result<Shapes, FormatError> {
    let mut shapes = Shapes::default();
    // Struct names first: fields refer to types declared later.
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("type ") {
            shapes.by_name.insert(name.to_owned(), shapes.structs.len());
            shapes.structs.push(StructShape {
                name: name.to_owned(),
                fields: Vec::new(),
            });
        }
    }
    let mut current: Option<usize> = None;
    for (index, line) in text.lines().enumerate() {
        let err = |message: String| FormatError {
            line: index + 1,
            message,
        };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(field) = line.strip_prefix(' ') {
            let at = current.ok_or_else(|| err("field outside a type".into()))?;
            let field = parse_field(field, &shapes.by_name).map_err(err)?;
            shapes.structs[at].fields.push(field);
        } else if let Some(name) = line.strip_prefix("type ") {
            current = shapes.by_name.get(name).copied();
        } else if let ["kind", api_version, kind, ty] = line.split(' ').collect::<Vec<_>>()[..] {
            let at = shapes
                .by_name(ty)
                .ok_or_else(|| err(format!("unknown type {ty}")))?;
            shapes
                .kinds
                .insert((api_version.to_owned(), kind.to_owned()), at);
        } else {
            return Err(err(format!("unexpected line {line:?}")));
        }
    }
    Ok(shapes)
}

fn parse_field(text: &str, names: &HashMap<String, usize>) -> Result<Field, String> {
    let [name, options, shape] = text.split(' ').collect::<Vec<_>>()[..] else {
        return Err(format!("bad field {text:?}"));
    };
    let (omit_empty, omit_zero) = match options {
        "-" => (false, false),
        "e" => (true, false),
        "z" => (false, true),
        "ez" => (true, true),
        _ => return Err(format!("bad options {options:?}")),
    };
    Ok(Field {
        name: name.to_owned(),
        omit_empty,
        omit_zero,
        shape: parse_shape(shape, names)?,
    })
}

fn parse_shape(text: &str, names: &HashMap<String, usize>) -> Result<Shape, String> {
    let boxed = |rest: &str| parse_shape(rest, names).map(Box::new);
    let mut chars = text.chars();
    let first = chars.next().ok_or("empty shape")?;
    let rest = chars.as_str();
    let simple = match first {
        '*' => return Ok(Shape::Pointer(boxed(rest)?)),
        '[' => return Ok(Shape::Slice(boxed(rest)?)),
        '{' => return Ok(Shape::Map(boxed(rest)?)),
        '@' => {
            let at = names
                .get(rest)
                .ok_or_else(|| format!("unknown type {rest}"))?;
            return Ok(Shape::Struct(*at));
        }
        's' => Shape::String,
        'i' => Shape::Int,
        'f' => Shape::Float,
        'b' => Shape::Bool,
        'B' => Shape::Bytes,
        't' => Shape::Time,
        'd' => Shape::Duration,
        'q' => Shape::Quantity,
        'n' => Shape::IntOrString,
        'r' => Shape::Raw,
        'a' => Shape::Interface,
        _ => return Err(format!("bad shape {text:?}")),
    };
    if !rest.is_empty() {
        return Err(format!("bad shape {text:?}"));
    }
    Ok(simple)
}

#[cfg(test)]
mod tests;
