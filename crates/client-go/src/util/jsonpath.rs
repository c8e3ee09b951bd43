//! The JSONPath subset custom resource definitions use in
//! `additionalPrinterColumns` and `selectableFields` (upstream's
//! `client-go/util/jsonpath`, simple paths only): `.a.b`, `['a']`, `[0]`,
//! `[-1]`, `[*]` and `[?(@.x=="y")]` filters.

use serde_json::Value;

/// One step of a parsed path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    /// `[?(@.path == "value")]` (or `!=`).
    Filter {
        path: Vec<String>,
        equal: bool,
        value: Value,
    },
}

/// A parsed path, evaluated against objects many times.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSONPath {path:?}: {reason}")]
pub struct JsonPathError {
    path: String,
    reason: &'static str,
}

impl JsonPath {
    /// Parses `.spec.replicas` (braces around the path are accepted too).
    pub fn parse(path: &str) -> Result<Self, JsonPathError> {
        let err = |reason| JsonPathError {
            path: path.to_owned(),
            reason,
        };
        let mut rest = path.trim();
        if let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            rest = inner.trim();
        }
        rest = rest.strip_prefix('$').unwrap_or(rest);
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let end = r.find(['.', '[']).unwrap_or(r.len());
                if end == 0 {
                    return Err(err("empty field name"));
                }
                steps.push(Step::Field(r[..end].to_owned()));
                rest = &r[end..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']').ok_or_else(|| err("unclosed ["))?;
                steps.push(parse_bracket(&r[..end]).ok_or_else(|| err("unsupported [...]"))?);
                rest = &r[end + 1..];
            } else {
                return Err(err("expected . or ["));
            }
        }
        Ok(JsonPath { steps })
    }

    /// Every value the path selects, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in current {
                apply(step, v, &mut next);
            }
            current = next;
        }
        current
    }

    /// The first selected value.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.find(root).into_iter().next()
    }
}

fn parse_bracket(inner: &str) -> Option<Step> {
    let inner = inner.trim();
    if inner == "*" {
        return Some(Step::All);
    }
    if let Some(quoted) = inner
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
    {
        return Some(Step::Field(quoted.to_owned()));
    }
    if let Ok(i) = inner.parse::<i64>() {
        return Some(Step::Index(i));
    }
    let filter = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (lhs, rhs, equal) = match filter.split_once("==") {
        Some((l, r)) => (l, r, true),
        None => {
            let (l, r) = filter.split_once("!=")?;
            (l, r, false)
        }
    };
    let path = lhs
        .trim()
        .strip_prefix("@.")?
        .split('.')
        .map(str::to_owned)
        .collect();
    let rhs = rhs.trim();
    let value = match rhs
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| rhs.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
    {
        Some(s) => Value::String(s.to_owned()),
        None => serde_json::from_str(rhs).ok()?,
    };
    Some(Step::Filter { path, equal, value })
}

fn apply<'a>(step: &Step, v: &'a Value, out: &mut Vec<&'a Value>) {
    match step {
        Step::Field(name) => {
            if let Some(child) = v.get(name) {
                out.push(child);
            }
        }
        Step::Index(i) => {
            if let Some(items) = v.as_array() {
                let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
                let at = if *i < 0 { len + i } else { *i };
                if let Some(item) = usize::try_from(at).ok().and_then(|at| items.get(at)) {
                    out.push(item);
                }
            }
        }
        Step::All => match v {
            Value::Array(items) => out.extend(items),
            Value::Object(map) => out.extend(map.values()),
            _ => {}
        },
        Step::Filter { path, equal, value } => {
            for item in v.as_array().into_iter().flatten() {
                let field = path.iter().try_fold(item, |at, key| at.get(key));
                if field.is_some_and(|f| f == value) == *equal {
                    out.push(item);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_select_fields_items_and_filtered_items() {
        let obj = json!({"spec": {"replicas": 3, "list": [1, 2, 3]},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                                      {"type": "Synced", "status": "False"}]}});
        let p = |s| JsonPath::parse(s).unwrap_or(JsonPath { steps: vec![] });
        assert_eq!(p(".spec.replicas").first(&obj), Some(&json!(3)));
        assert_eq!(p("{.spec.list[-1]}").first(&obj), Some(&json!(3)));
        assert_eq!(p(".spec.list[*]").find(&obj).len(), 3);
        assert_eq!(
            p(".status.conditions[?(@.type==\"Synced\")].status").first(&obj),
            Some(&json!("False"))
        );
        assert_eq!(p(".spec['replicas']").first(&obj), Some(&json!(3)));
        assert!(p(".spec.missing").first(&obj).is_none());
        assert!(JsonPath::parse("spec").is_err());
        assert!(JsonPath::parse(".spec[").is_err());
    }
}
