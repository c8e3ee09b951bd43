//! A parser for the subset of Go that API type files use: imports and type
//! declarations (structs with tagged fields, defined types, aliases) with
//! the comment lines above them. Function bodies, constants and variables
//! are skipped. It relies on gofmt's layout (one declaration or field per
//! line, top-level declarations in column 0), which every upstream API
//! file follows.

use std::collections::HashMap;
use std::rc::Rc;

use crate::GoError;

/// A Go type expression.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeExpr {
    /// A predeclared type or a type of the same package.
    Ident(String),
    /// `alias.Name`.
    Qualified(String, String),
    Pointer(Box<TypeExpr>),
    Slice(Box<TypeExpr>),
    Map(Box<TypeExpr>, Box<TypeExpr>),
    /// `interface{}` / `any`.
    Interface,
    /// `struct{}`.
    EmptyStruct,
    /// Anything else (generic instantiations, function types), kept as
    /// written: an error if an API field uses it.
    Opaque(String),
}

#[derive(Debug, Clone)]
pub struct Field {
    /// `None` for an embedded field.
    pub name: Option<String>,
    pub ty: TypeExpr,
    pub tag: String,
    pub doc: Vec<String>,
}

#[derive(Debug, Clone)]
pub enum DeclBody {
    Struct(Vec<Field>),
    /// `type X = Y`.
    Alias(TypeExpr),
    /// `type X Y`.
    Defined(TypeExpr),
    /// Interfaces, function types and the like: not API data.
    Opaque,
}

#[derive(Debug, Clone)]
pub struct TypeDecl {
    pub name: String,
    pub doc: Vec<String>,
    pub body: DeclBody,
    /// Import alias → import path of the file declaring the type.
    pub imports: Rc<HashMap<String, String>>,
}

/// Parses one Go file, appending its type declarations to `out`.
pub fn parse_file(src: &str, file: &str, out: &mut Vec<TypeDecl>) -> Result<(), GoError> {
    let lines: Vec<&str> = src.lines().collect();
    let imports = Rc::new(parse_imports(&lines));
    let mut doc: Vec<String> = Vec::new();
    let mut i = 0;
    let mut depth = 0i32;
    let mut in_group = false;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        i += 1;
        if trimmed.starts_with("/*") {
            while i < lines.len() && !lines[i - 1].contains("*/") {
                i += 1;
            }
            continue;
        }
        if depth > 0 {
            depth += brace_delta(line);
            continue;
        }
        if let Some(c) = trimmed.strip_prefix("//") {
            doc.push(c.trim().to_owned());
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        let decl = if in_group {
            if trimmed == ")" {
                in_group = false;
                doc.clear();
                continue;
            }
            Some(trimmed)
        } else if trimmed == "type (" {
            in_group = true;
            continue;
        } else {
            trimmed.strip_prefix("type ")
        };
        match decl {
            Some(decl) => {
                let parsed = parse_type_decl(decl, &lines, &mut i, file)?;
                let (name, body) = parsed;
                out.push(TypeDecl {
                    name,
                    doc: std::mem::take(&mut doc),
                    body,
                    imports: imports.clone(),
                });
            }
            None => {
                doc.clear();
                depth += brace_delta(line);
            }
        }
    }
    Ok(())
}

/// The string constants of a Go file (`Name Type = "value"` or
/// `Name = "value"`, alone or in a `const (` block), for the `ref(Name)`
/// values of `+default=` markers.
pub fn string_constants(src: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in src.lines() {
        let trimmed = strip_line_comment(line).trim();
        let spec = if in_block {
            if trimmed == ")" {
                in_block = false;
                continue;
            }
            trimmed
        } else if trimmed == "const (" {
            in_block = true;
            continue;
        } else if let Some(spec) = trimmed.strip_prefix("const ") {
            spec
        } else {
            continue;
        };
        let Some((names, value)) = spec.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let name = names.split_whitespace().next().unwrap_or("");
        let literal = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .filter(|v| !v.contains(['"', '\\']));
        if let (Some(literal), true) = (literal, names.split_whitespace().count() <= 2) {
            out.push((name.to_owned(), literal.to_owned()));
        }
    }
    out
}

/// The net change of `{`/`(` nesting on a line, outside strings and
/// comments.
fn brace_delta(line: &str) -> i32 {
    let mut delta = 0;
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for c in line.chars() {
        match quote {
            Some(q) => {
                if c == q && (prev != '\\' || q == '`') {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' | '`' => quote = Some(c),
                '/' if prev == '/' => break,
                '{' | '(' => delta += 1,
                '}' | ')' => delta -= 1,
                _ => {}
            },
        }
        prev = c;
    }
    delta
}

fn parse_imports(lines: &[&str]) -> HashMap<String, String> {
    let mut imports = HashMap::new();
    let mut in_block = false;
    for line in lines {
        let t = line.trim();
        let spec = if in_block {
            if t == ")" {
                in_block = false;
                continue;
            }
            t
        } else if t == "import (" {
            in_block = true;
            continue;
        } else if let Some(s) = t.strip_prefix("import ") {
            s
        } else {
            continue;
        };
        let mut parts = spec.split_whitespace();
        let (alias, path) = match (parts.next(), parts.next()) {
            (Some(p), None) => (None, p),
            (Some(a), Some(p)) => (Some(a), p),
            _ => continue,
        };
        let path = path.trim_matches('"');
        if path.is_empty() {
            continue;
        }
        let alias = alias
            .map(str::to_owned)
            .unwrap_or_else(|| path.rsplit('/').next().unwrap_or(path).to_owned());
        imports.insert(alias, path.to_owned());
    }
    imports
}

/// Parses `Name <type>` (the text after `type `), reading struct bodies
/// from the following lines.
fn parse_type_decl(
    decl: &str,
    lines: &[&str],
    i: &mut usize,
    file: &str,
) -> Result<(String, DeclBody), GoError> {
    let bad = || GoError::Parse(format!("{file}: type {decl}"));
    let (name, rest) = decl.split_once(char::is_whitespace).ok_or_else(bad)?;
    if name.contains('[') {
        return Err(bad());
    }
    let rest = strip_line_comment(rest).trim();
    if rest == "struct {" {
        return Ok((
            name.to_owned(),
            DeclBody::Struct(parse_struct_body(lines, i, file)?),
        ));
    }
    if let Some(target) = rest.strip_prefix("= ") {
        return Ok((
            name.to_owned(),
            DeclBody::Alias(parse_type_expr(target.trim()).ok_or_else(bad)?),
        ));
    }
    if rest == "struct{}" {
        return Ok((name.to_owned(), DeclBody::Struct(Vec::new())));
    }
    if let Some(expr) = parse_type_expr(rest) {
        return Ok((name.to_owned(), DeclBody::Defined(expr)));
    }
    // Skip the body of a multi-line interface or function type.
    let mut depth = brace_delta(rest);
    while depth > 0 && *i < lines.len() {
        depth += brace_delta(lines[*i]);
        *i += 1;
    }
    Ok((name.to_owned(), DeclBody::Opaque))
}

fn parse_struct_body(lines: &[&str], i: &mut usize, file: &str) -> Result<Vec<Field>, GoError> {
    let mut fields = Vec::new();
    let mut doc = Vec::new();
    while *i < lines.len() {
        let t = lines[*i].trim();
        *i += 1;
        if t == "}" {
            return Ok(fields);
        }
        if t.is_empty() {
            doc.clear();
            continue;
        }
        if t.starts_with("/*") {
            while *i < lines.len() && !lines[*i - 1].contains("*/") {
                *i += 1;
            }
            continue;
        }
        if let Some(c) = t.strip_prefix("//") {
            doc.push(c.trim().to_owned());
            continue;
        }
        let field = parse_field(t).ok_or_else(|| GoError::Parse(format!("{file}: field {t}")))?;
        fields.push(Field {
            doc: std::mem::take(&mut doc),
            ..field
        });
    }
    Err(GoError::Parse(format!("{file}: unterminated struct")))
}

/// `Name Type \`tag\`` or an embedded `Type \`tag\``.
fn parse_field(line: &str) -> Option<Field> {
    let (decl, tag) = match (line.find('`'), line.rfind('`')) {
        (Some(a), Some(b)) if b > a => (&line[..a], line[a + 1..b].to_owned()),
        _ => (strip_line_comment(line), String::new()),
    };
    let mut parts = decl.split_whitespace();
    let (name, ty) = match (parts.next(), parts.next(), parts.next()) {
        (Some(ty), None, None) => (None, ty),
        (Some(name), Some(ty), None) => (Some(name.to_owned()), ty),
        _ => return None,
    };
    Some(Field {
        name,
        ty: parse_type_expr(ty).unwrap_or_else(|| TypeExpr::Opaque(ty.to_owned())),
        tag,
        doc: Vec::new(),
    })
}

fn strip_line_comment(s: &str) -> &str {
    s.find("//").map_or(s, |p| &s[..p])
}

/// Parses a type expression without spaces (`[]*metav1.Time`,
/// `map[string][]string`).
pub fn parse_type_expr(s: &str) -> Option<TypeExpr> {
    if let Some(rest) = s.strip_prefix('*') {
        return Some(TypeExpr::Pointer(Box::new(parse_type_expr(rest)?)));
    }
    if let Some(rest) = s.strip_prefix("[]") {
        return Some(TypeExpr::Slice(Box::new(parse_type_expr(rest)?)));
    }
    if let Some(rest) = s.strip_prefix("map[") {
        let mut depth = 1;
        let close = rest.char_indices().find_map(|(p, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(p)
        })?;
        let key = parse_type_expr(&rest[..close])?;
        let value = parse_type_expr(&rest[close + 1..])?;
        return Some(TypeExpr::Map(Box::new(key), Box::new(value)));
    }
    if s.starts_with('[') {
        // A fixed-size array serializes as a JSON array.
        let close = s.find(']')?;
        return Some(TypeExpr::Slice(Box::new(parse_type_expr(&s[close + 1..])?)));
    }
    match s {
        "interface{}" | "any" => return Some(TypeExpr::Interface),
        "struct{}" => return Some(TypeExpr::EmptyStruct),
        _ => {}
    }
    let ident = |x: &str| !x.is_empty() && x.chars().all(|c| c.is_alphanumeric() || c == '_');
    match s.split_once('.') {
        Some((pkg, name)) if ident(pkg) && ident(name) => {
            Some(TypeExpr::Qualified(pkg.to_owned(), name.to_owned()))
        }
        None if ident(s) => Some(TypeExpr::Ident(s.to_owned())),
        _ => None,
    }
}

/// The value of `key:"value"` in a struct tag.
pub fn tag_value<'a>(tag: &'a str, key: &str) -> Option<&'a str> {
    let mut rest = tag;
    while let Some(colon) = rest.find(':') {
        let k = rest[..colon].trim();
        let after = rest[colon + 1..].strip_prefix('"')?;
        let end = after.find('"')?;
        if k == key {
            return Some(&after[..end]);
        }
        rest = &after[end + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient

// Thing is a test.
// +structType=atomic
type Thing struct {
	metav1.TypeMeta `json:",inline"`
	// Items are listed.
	// +listType=map
	// +listMapKey=name
	Items []Item `json:"items,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	Port intstr.IntOrString `json:"port"` // trailing
	Labels map[string][]string `json:"labels"`
}

func (t *Thing) Foo() { if true { return } }

type Kind string

type (
	Other = Kind
)
"#;

    #[test]
    fn parses_structs_fields_tags_and_markers() {
        let mut out = Vec::new();
        parse_file(SRC, "x.go", &mut out).unwrap();
        let names: Vec<_> = out.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["Thing", "Kind", "Other"]);
        let thing = &out[0];
        assert!(thing.doc.iter().any(|l| l == "+structType=atomic"));
        assert!(thing.doc.iter().any(|l| l == "+genclient"));
        let DeclBody::Struct(fields) = &thing.body else {
            panic!("struct")
        };
        assert_eq!(fields.len(), 4);
        assert_eq!(fields[0].name, None);
        assert_eq!(tag_value(&fields[1].tag, "patchMergeKey"), Some("name"));
        assert_eq!(tag_value(&fields[1].tag, "json"), Some("items,omitempty"));
        assert_eq!(
            fields[1].doc.last().map(String::as_str),
            Some("+listMapKey=name")
        );
        assert_eq!(
            fields[2].ty,
            TypeExpr::Qualified("intstr".into(), "IntOrString".into())
        );
        assert!(fields[3].doc.is_empty());
        assert_eq!(
            thing.imports.get("intstr").map(String::as_str),
            Some("k8s.io/apimachinery/pkg/util/intstr")
        );
        assert!(matches!(out[2].body, DeclBody::Alias(TypeExpr::Ident(ref n)) if n == "Kind"));
    }

    #[test]
    fn parses_type_expressions() {
        assert_eq!(
            parse_type_expr("map[string][]*v1.X"),
            Some(TypeExpr::Map(
                Box::new(TypeExpr::Ident("string".into())),
                Box::new(TypeExpr::Slice(Box::new(TypeExpr::Pointer(Box::new(
                    TypeExpr::Qualified("v1".into(), "X".into())
                )))))
            ))
        );
        assert_eq!(parse_type_expr("interface{}"), Some(TypeExpr::Interface));
        assert_eq!(parse_type_expr("a b"), None);
    }

    #[test]
    fn reads_string_constants() {
        let src = r#"
const GroupName = "apps"
const (
	// ReadWrite caching.
	AzureDataDiskCachingReadWrite AzureDataDiskCachingMode = "ReadWrite" // comment
	AzureSharedBlobDisk           AzureDataDiskKind        = "Shared"
	Count                                                  = 3
	Pair                          string                   = "a" + "b"
)
"#;
        assert_eq!(
            string_constants(src),
            [
                ("GroupName".to_owned(), "apps".to_owned()),
                (
                    "AzureDataDiskCachingReadWrite".to_owned(),
                    "ReadWrite".to_owned()
                ),
                ("AzureSharedBlobDisk".to_owned(), "Shared".to_owned()),
            ]
        );
    }
}
