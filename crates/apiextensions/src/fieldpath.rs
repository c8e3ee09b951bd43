//! Field paths into a schema as upstream's `cel.ValidFieldPath` reads them
//! (`.spec.a`, `.spec['key.with.dots']`): used for selectable fields and
//! for the `fieldPath` of `x-kubernetes-validations` rules.

use crate::props::Props;

/// Splits a path into `.`, `[`, `]` and the text between them; a token
/// starting with `'` runs to the next unescaped `'`.
fn tokens(path: &str) -> Vec<String> {
    let chars: Vec<char> = path.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '.' | '[' | ']') {
            out.push(c.to_string());
            i += 1;
            continue;
        }
        let start = i;
        if c == '\'' {
            i += 1;
            while i < chars.len() && !(chars[i] == '\'' && chars[i - 1] != '\\') {
                i += 1;
            }
            i = (i + 1).min(chars.len());
        } else {
            while i < chars.len() && !matches!(chars[i], '.' | '[' | ']') {
                i += 1;
            }
        }
        out.push(chars[start..i].iter().collect());
    }
    out
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let replaced = match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some('\'') => '\'',
            Some('\\') => '\\',
            other => {
                let shown: String = other
                    .map(|c| format!("\\{c}"))
                    .unwrap_or_else(|| "\\".to_owned());
                return Err(format!(
                    "invalid string literal: invalid escape char {shown}"
                ));
            }
        };
        out.push(replaced);
    }
    Ok(out)
}

/// Steps into `name` of an object schema: a declared property, or any key
/// of a map schema.
fn step<'a>(schema: &'a Props, name: &str) -> Result<&'a Props, String> {
    const INVALID: &str = "does not refer to a valid field";
    if !schema.properties.is_empty() {
        schema
            .properties
            .get(name)
            .ok_or_else(|| INVALID.to_owned())
    } else if schema.additional_properties.is_some() {
        schema.additional_schema().ok_or_else(|| INVALID.to_owned())
    } else {
        Err(INVALID.to_owned())
    }
}

/// Resolves `path` in `schema`: the name of its first field and the schema
/// it points at, or upstream's error text.
pub fn resolve<'a>(
    path: &str,
    schema: &'a Props,
    allow_array_notation: bool,
) -> Result<(String, &'a Props), String> {
    let toks = tokens(path);
    let mut it = toks.iter();
    let mut node = schema;
    let mut root: Option<String> = None;
    let end = || "unexpected end of JSON path".to_owned();
    while let Some(tok) = it.next() {
        let name = match tok.as_str() {
            "[" => {
                if !allow_array_notation {
                    return Err("array notation is not allowed".to_owned());
                }
                let quoted = it.next().ok_or_else(end)?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = unescape(&quoted[1..quoted.len() - 1])?;
                let close = it.next().ok_or_else(end)?;
                if close != "]" {
                    return Err(format!("expected ] but got {close}"));
                }
                name
            }
            "." => it.next().ok_or_else(end)?.clone(),
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        node = step(node, &name)?;
        root.get_or_insert(name);
    }
    Ok((root.unwrap_or_default(), node))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_dots_and_quoted_keys() {
        let s = Props::from_value(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "a.b": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "integer"}}}}}}));
        let ty =
            |p: &str, arrays: bool| resolve(p, &s, arrays).map(|(root, n)| (root, n.ty.clone()));
        assert_eq!(
            ty(".spec['a.b']", true),
            Ok(("spec".into(), "string".into()))
        );
        assert_eq!(
            ty(".spec.labels.x", false),
            Ok(("spec".into(), "integer".into()))
        );
        assert_eq!(
            ty(".spec['a.b']", false),
            Err("array notation is not allowed".into())
        );
        assert_eq!(
            ty(".spec.nope", true),
            Err("does not refer to a valid field".into())
        );
        assert_eq!(
            ty("spec", true),
            Err("expected [ or . but got: spec".into())
        );
        assert_eq!(
            ty(".spec.", true),
            Err("unexpected end of JSON path".into())
        );
        assert_eq!(
            ty(".spec[a]", true),
            Err("expected single quoted string but got a".into())
        );
    }
}
