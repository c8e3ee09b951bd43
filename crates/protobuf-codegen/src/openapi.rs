//! Parser for the `k8s-openapi` sources of one Kubernetes version: each
//! struct's fields in serialization order with their JSON names and whether
//! they are required, and the `apiVersion`/`kind` of every resource type.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{walk, CodegenError};

#[derive(Debug, Clone)]
pub struct OaField {
    /// Rust name with any trailing `_` removed.
    pub name: String,
    pub json: String,
    /// The field is not an `Option` (k8s-openapi always serializes it).
    pub required: bool,
}

#[derive(Debug, Clone)]
pub struct OaStruct {
    /// Upstream type name (`JSONSchemaProps`).
    pub name: String,
    pub fields: Vec<OaField>,
    /// `(apiVersion, kind)` when the type is a resource.
    pub resource: Option<(String, String)>,
    /// The kind of the resource's list type, when it has one.
    pub list_kind: Option<String>,
}

/// Parses every type file below `src` (the `v1_*` directory), keyed by
/// `module::lowercasename` so that prost's renamed acronyms still match.
pub fn parse(src: &Path) -> Result<BTreeMap<String, OaStruct>, CodegenError> {
    let mut out = BTreeMap::new();
    for file in walk(src)? {
        let Some(module) = file
            .parent()
            .and_then(|p| p.strip_prefix(src).ok())
            .map(|p| p.to_string_lossy().replace('/', "::"))
        else {
            continue;
        };
        if module.is_empty() || file.file_name().and_then(|n| n.to_str()) == Some("mod.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).map_err(|e| CodegenError::Io(file.clone(), e))?;
        if let Some(s) = parse_file(&text) {
            out.insert(format!("{module}::{}", s.name.to_lowercase()), s);
        }
    }
    Ok(out)
}

fn parse_file(text: &str) -> Option<OaStruct> {
    let mut name = None;
    let mut rust_fields: Vec<(String, bool)> = Vec::new();
    let mut json_names: BTreeMap<String, String> = BTreeMap::new();
    let mut in_struct = false;
    let mut api_version = None;
    let mut kind = None;
    let mut list_kind = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            if let Some(n) = rest.strip_suffix(" {") {
                name = Some(n.to_owned());
                in_struct = true;
            }
            continue;
        }
        if in_struct {
            if line == "}" {
                in_struct = false;
            } else if let Some(decl) = line.strip_prefix("    pub ") {
                if let Some((field, ty)) = decl.split_once(": ") {
                    let field = field.trim_end_matches('_').to_owned();
                    rust_fields.push((field, !ty.starts_with("Option<")));
                }
            }
            continue;
        }
        let t = line.trim();
        if let Some((json, key)) = t.split_once("\" => Field::Key_") {
            let json = json.trim_start_matches('"');
            json_names.insert(
                key.trim_end_matches(',').trim_end_matches('_').to_owned(),
                json.to_owned(),
            );
        } else if let Some(v) = const_str(t, "const API_VERSION: &'static str = ") {
            api_version = Some(v);
        } else if let Some(v) = const_str(t, "const KIND: &'static str = ") {
            kind = Some(v);
        } else if let Some(v) = const_str(t, "const LIST_KIND: &'static str = ") {
            list_kind = Some(v);
        }
    }
    let name = name?;
    let fields = rust_fields
        .into_iter()
        .filter_map(|(n, required)| {
            let json = json_names.get(&n)?.clone();
            Some(OaField {
                name: n,
                json,
                required,
            })
        })
        .collect();
    Some(OaStruct {
        name,
        fields,
        resource: api_version.zip(kind),
        list_kind,
    })
}

fn const_str(line: &str, prefix: &str) -> Option<String> {
    let v = line.strip_prefix(prefix)?;
    Some(v.trim_end_matches(';').trim_matches('"').to_owned())
}
