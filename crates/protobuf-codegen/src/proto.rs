//! Parser for upstream's `generated.proto` files (read from git
//! repositories of kubernetes/api, apimachinery, apiextensions-apiserver
//! and kube-aggregator), producing the same message model as [`crate::pb`].
//! Upstream's files are newer than k8s-pb's and carry the latest fields.

use std::collections::BTreeMap;

use go_types::source::Loader;

use crate::pb::{PbField, PbMessage, PbType, Shape};
use crate::CodegenError;

/// Parses every `generated.proto` of each module's repository.
pub fn parse(
    loader: &Loader,
    modules: &[&str],
) -> Result<BTreeMap<String, PbMessage>, CodegenError> {
    let mut out = BTreeMap::new();
    for module in modules {
        for text in loader.files_named(module, "generated.proto")? {
            for msg in parse_file(&text)? {
                out.insert(msg.key(), msg);
            }
        }
    }
    Ok(out)
}

/// `k8s.io.api.core.v1` → `api::core::v1`.
fn module_of(package: &str) -> String {
    package
        .trim_start_matches('.')
        .trim_start_matches("k8s.io.")
        .replace('.', "::")
}

fn parse_file(text: &str) -> Result<Vec<PbMessage>, CodegenError> {
    let mut module = String::new();
    let mut messages = Vec::new();
    let mut current: Option<PbMessage> = None;
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("package ") {
            module = module_of(p.trim_end_matches(';'));
        } else if let Some(name) = line
            .strip_prefix("message ")
            .and_then(|l| l.strip_suffix(" {"))
        {
            current = Some(PbMessage {
                module: module.clone(),
                name: name.to_owned(),
                fields: Vec::new(),
            });
        } else if line == "}" {
            messages.extend(current.take());
        } else if let Some(msg) = current.as_mut() {
            let decl = line.trim();
            if decl.starts_with("optional ")
                || decl.starts_with("repeated ")
                || decl.starts_with("map<")
            {
                msg.fields.push(parse_field(&module, decl)?);
            }
        }
    }
    Ok(messages)
}

/// `optional T name = N;`, `repeated T name = N;` or `map<string, T> name = N;`.
fn parse_field(module: &str, decl: &str) -> Result<PbField, CodegenError> {
    let bad = || CodegenError::Parse(format!("{module}: `{decl}`"));
    let (lhs, tag) = decl
        .trim_end_matches(';')
        .split_once(" = ")
        .ok_or_else(bad)?;
    let tag = tag.trim().parse().map_err(|_| bad())?;
    let (ty, name) = lhs.rsplit_once(' ').ok_or_else(bad)?;
    let (shape, ty) = if let Some(m) = ty.strip_prefix("map<string, ") {
        (Shape::Map, m.trim_end_matches('>'))
    } else if let Some(t) = ty.strip_prefix("repeated ") {
        (Shape::Repeated, t)
    } else {
        (Shape::Single, ty.trim_start_matches("optional "))
    };
    let ty = match ty {
        "string" => PbType::String,
        "bytes" => PbType::Bytes,
        "int32" => PbType::Int32,
        "int64" => PbType::Int64,
        "bool" => PbType::Bool,
        "double" => PbType::Double,
        qualified if qualified.starts_with('.') => {
            let (package, name) = qualified.rsplit_once('.').ok_or_else(bad)?;
            PbType::Message(format!("{}::{name}", module_of(package)))
        }
        local => PbType::Message(format!("{module}::{local}")),
    };
    Ok(PbField {
        name: name.to_owned(),
        tag,
        ty,
        shape,
    })
}
