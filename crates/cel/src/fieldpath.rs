//! A rule's `fieldPath`: a JSON path (`.spec.replicas`, `.labels['a.b']`)
//! relative to the rule's node, checked against the schema and normalised
//! into the field path its errors are reported at (upstream's
//! `ValidFieldPath`).

use crate::schema::{Kind, Node};

/// The tokens of a path: `.`, `[`, `]`, a name, or a single-quoted string.
fn tokens(path: &str) -> Vec<&str> {
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        if bytes[start] == b'\'' {
            let mut end = start + 1;
            while end < bytes.len() && !(bytes[end] == b'\'' && bytes[end - 1] != b'\\') {
                end += 1;
            }
            let stop = (end + 1).min(bytes.len());
            out.push(&path[start..stop]);
            start = stop;
            continue;
        }
        if matches!(bytes[start], b'.' | b'[' | b']') {
            out.push(&path[start..start + 1]);
            start += 1;
            continue;
        }
        let end = bytes[start..]
            .iter()
            .position(|b| matches!(b, b'.' | b'[' | b']'))
            .map_or(bytes.len(), |p| start + p);
        out.push(&path[start..end]);
        start = end;
    }
    out
}

/// Undoes the escapes allowed in a single-quoted name.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some(c @ ('\'' | '"' | '\\')) => c,
            Some(other) => return Err(format!("invalid escape char \\{other}")),
            None => return Err("invalid escape char \\".to_owned()),
        };
        out.push(escaped);
    }
    Ok(out)
}

/// One step down from `node` by `name`: a declared property, or a map key.
fn step<'n>(node: &'n Node, name: &str, out: &mut String) -> Result<&'n Node, String> {
    if node.kind == Kind::Object && !node.properties.is_empty() {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(name);
        return node
            .property(name)
            .ok_or_else(|| "does not refer to a valid field".to_owned());
    }
    match node.additional.as_deref() {
        Some(values) => {
            out.push('[');
            out.push_str(name);
            out.push(']');
            Ok(values)
        }
        None => Err("does not refer to a valid field".to_owned()),
    }
}

/// Checks `path` against `node` and returns it normalised (`spec.a[key]`).
pub(crate) fn normalize(path: &str, node: &Node) -> Result<String, String> {
    let toks = tokens(path);
    let mut out = String::new();
    let mut current = node;
    let mut i = 0;
    while i < toks.len() {
        match toks[i] {
            "." => {
                let name = toks.get(i + 1).ok_or("unexpected end of JSON path")?;
                current = step(current, name, &mut out)?;
                i += 2;
            }
            "[" => {
                let quoted = toks.get(i + 1).ok_or("unexpected end of JSON path")?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = unescape(&quoted[1..quoted.len() - 1])
                    .map_err(|e| format!("invalid string literal: {e}"))?;
                current = step(current, &name, &mut out)?;
                match toks.get(i + 2) {
                    Some(&"]") => i += 3,
                    Some(other) => return Err(format!("expected ] but got {other}")),
                    None => return Err("unexpected end of JSON path".to_owned()),
                }
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalizes_and_checks_paths() {
        let node = Node::parse(
            &json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"a.b": {"type": "string"}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}),
            false,
        );
        assert_eq!(normalize(".spec['a.b']", &node).as_deref(), Ok("spec.a.b"));
        assert_eq!(normalize(".labels.x", &node).as_deref(), Ok("labels[x]"));
        assert_eq!(
            normalize(".nope", &node),
            Err("does not refer to a valid field".to_owned())
        );
        assert!(normalize("spec", &node).is_err());
        assert!(normalize(".spec[", &node).is_err());
    }
}
