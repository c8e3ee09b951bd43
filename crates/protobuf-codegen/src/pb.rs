//! Parser for the prost-generated sources of the `k8s-pb` crate: which
//! messages exist, and each field's protobuf tag, wire type and cardinality.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{walk, CodegenError};

/// The scalar or message type of a protobuf field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PbType {
    String,
    Bytes,
    Int32,
    Int64,
    Bool,
    Double,
    /// Fully qualified message key (`api::core::v1::Pod`).
    Message(String),
}

/// How many values a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Single,
    Repeated,
    /// `map<string, V>`.
    Map,
}

#[derive(Debug, Clone)]
pub struct PbField {
    /// Rust name with any `r#` prefix removed.
    pub name: String,
    pub tag: u32,
    pub ty: PbType,
    pub shape: Shape,
}

#[derive(Debug, Clone)]
pub struct PbMessage {
    /// Module path (`api::core::v1`).
    pub module: String,
    /// Rust struct name (`JsonSchemaProps`).
    pub name: String,
    pub fields: Vec<PbField>,
}

impl PbMessage {
    pub fn key(&self) -> String {
        format!("{}::{}", self.module, self.name)
    }
}

/// Parses every `mod.rs` below `src` into messages keyed by `module::Name`.
pub fn parse(src: &Path) -> Result<BTreeMap<String, PbMessage>, CodegenError> {
    let mut out = BTreeMap::new();
    for file in walk(src)? {
        if file.file_name().and_then(|n| n.to_str()) != Some("mod.rs") {
            continue;
        }
        let rel = file
            .parent()
            .and_then(|p| p.strip_prefix(src).ok())
            .map(|p| p.to_string_lossy().replace('/', "::"))
            .unwrap_or_default();
        if rel.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(&file).map_err(|e| CodegenError::Io(file.clone(), e))?;
        for msg in parse_module(&rel, &text)? {
            out.insert(msg.key(), msg);
        }
    }
    Ok(out)
}

fn parse_module(module: &str, text: &str) -> Result<Vec<PbMessage>, CodegenError> {
    let mut messages = Vec::new();
    let mut current: Option<PbMessage> = None;
    let mut attr: Option<String> = None;
    let mut pending_decl = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            if let Some(name) = rest.strip_suffix(" {") {
                current = Some(PbMessage {
                    module: module.to_owned(),
                    name: name.to_owned(),
                    fields: Vec::new(),
                });
            } else if let Some(name) = rest.strip_suffix(" {}") {
                messages.push(PbMessage {
                    module: module.to_owned(),
                    name: name.to_owned(),
                    fields: Vec::new(),
                });
            }
            continue;
        }
        let Some(msg) = current.as_mut() else {
            continue;
        };
        if line == "}" {
            messages.extend(current.take());
            continue;
        }
        let trimmed = line.trim();
        if let Some(a) = trimmed.strip_prefix("#[prost(") {
            attr = Some(a.trim_end_matches(")]").to_owned());
            continue;
        }
        if attr.is_some() && (trimmed.starts_with("pub ") || !pending_decl.is_empty()) {
            pending_decl.push_str(trimmed);
            let open = pending_decl.matches('<').count();
            if !trimmed.ends_with(',') || open != pending_decl.matches('>').count() {
                continue;
            }
            let decl = std::mem::take(&mut pending_decl);
            let a = attr.take().unwrap_or_default();
            msg.fields.push(parse_field(module, &a, &decl)?);
        }
    }
    Ok(messages)
}

fn parse_field(module: &str, attr: &str, decl: &str) -> Result<PbField, CodegenError> {
    let bad = || CodegenError::Parse(format!("{module}: `{attr}` / `{decl}`"));
    let decl = decl.strip_prefix("pub ").ok_or_else(bad)?;
    let (name, ty) = decl.split_once(':').ok_or_else(bad)?;
    let name = name.trim().trim_start_matches("r#").to_owned();
    let ty = ty.trim().trim_end_matches(',');
    let tag = attr
        .split("tag = \"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .ok_or_else(bad)?;
    let first = attr.split(',').next().unwrap_or_default().trim();
    let shape = if first.starts_with("btree_map") {
        Shape::Map
    } else if attr.contains("repeated") {
        Shape::Repeated
    } else {
        Shape::Single
    };
    let kind = if shape == Shape::Map {
        attr.split("\"string, ")
            .nth(1)
            .and_then(|v| v.split('"').next())
            .ok_or_else(bad)?
    } else {
        first.split(' ').next().unwrap_or_default()
    };
    let pb_ty = match kind {
        "string" => PbType::String,
        "bytes" => PbType::Bytes,
        "int32" => PbType::Int32,
        "int64" => PbType::Int64,
        "bool" => PbType::Bool,
        "double" => PbType::Double,
        "message" => PbType::Message(resolve(module, ty)),
        _ => return Err(bad()),
    };
    Ok(PbField {
        name,
        tag,
        ty: pb_ty,
        shape,
    })
}

/// Resolves the message path in a field's Rust type relative to `module`.
fn resolve(module: &str, ty: &str) -> String {
    let inner = ty
        .trim_end_matches([',', '>'])
        .rsplit([',', '<'])
        .next()
        .unwrap_or(ty)
        .trim()
        .trim_end_matches('>')
        .trim();
    let mut parts: Vec<&str> = module.split("::").collect();
    let mut rest = inner;
    while let Some(r) = rest.strip_prefix("super::") {
        parts.pop();
        rest = r;
    }
    parts.push(rest);
    parts.join("::")
}
