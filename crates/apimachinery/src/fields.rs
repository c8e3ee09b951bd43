//! Field selectors (upstream's `k8s.io/apimachinery/pkg/fields`): parsing
//! the `fieldSelector` query syntax (`metadata.name=x,status.phase!=Running`
//! with `\,`, `\=` and `\\` escapes), listing its requirements so a
//! resource can reject fields it does not support, and matching a set of
//! field values.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// The field values of one object that a selector can be matched against.
pub trait Fields {
    /// The value of field `name`, if the object has it.
    fn get_field(&self, name: &str) -> Option<&str>;
}

impl Fields for BTreeMap<String, String> {
    fn get_field(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

impl Fields for HashMap<String, String> {
    fn get_field(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

impl Fields for [(&str, &str)] {
    fn get_field(&self, name: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }
}

impl Fields for [(&str, String)] {
    fn get_field(&self, name: &str) -> Option<&str> {
        self.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A field selector parse failure, with upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    /// A term without `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    InvalidTerm { selector: String, term: String },
    /// A backslash followed by something other than `\`, `,` or `=`.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscape(String),
    /// An unescaped `,` or `=` in a value; upstream prints the code point.
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    UnescapedRune(char),
}

/// How a field is compared with the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `=` or `==`.
    Equals,
    /// `!=`.
    NotEquals,
}

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    pub value: String,
}

impl FieldRequirement {
    /// Whether `fields` satisfy this term; a missing field counts as "".
    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        let actual = fields.get_field(&self.field).unwrap_or("");
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A field selector: every term must match. The "nothing" selector
/// matches no object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
    nothing: bool,
}

impl FieldSelector {
    /// The selector matching everything.
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// The selector matching nothing.
    pub fn nothing() -> Self {
        FieldSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// The selector requiring `field=value`.
    pub fn one_term_equal(field: &str, value: &str) -> Self {
        FieldSelector {
            requirements: vec![FieldRequirement {
                field: field.to_owned(),
                operator: FieldOperator::Equals,
                value: value.to_owned(),
            }],
            nothing: false,
        }
    }

    /// Parses the `fieldSelector` query syntax. Terms are ordered by their
    /// text, as upstream sorts them before parsing.
    pub fn parse(selector: &str) -> Result<Self, FieldSelectorError> {
        let mut terms = split_terms(selector);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let Some((lhs, operator, rhs)) = split_term(term) else {
                return Err(FieldSelectorError::InvalidTerm {
                    selector: selector.to_owned(),
                    term: term.to_owned(),
                });
            };
            requirements.push(FieldRequirement {
                field: lhs.to_owned(),
                operator,
                value: unescape_value(rhs)?,
            });
        }
        Ok(FieldSelector {
            requirements,
            nothing: false,
        })
    }

    /// Rewrites each term through `f` (upstream's `Transform`, used to
    /// convert or reject field labels); terms mapped to an empty field and
    /// value are dropped.
    pub fn transform<E>(
        &self,
        mut f: impl FnMut(&str, &str) -> Result<(String, String), E>,
    ) -> Result<Self, E> {
        let mut requirements = Vec::with_capacity(self.requirements.len());
        for r in &self.requirements {
            let (field, value) = f(&r.field, &r.value)?;
            if !field.is_empty() || !value.is_empty() {
                requirements.push(FieldRequirement {
                    field,
                    operator: r.operator,
                    value,
                });
            }
        }
        Ok(FieldSelector {
            requirements,
            nothing: self.nothing,
        })
    }

    /// The terms, in order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether `fields` satisfy every term.
    pub fn matches<F: Fields + ?Sized>(&self, fields: &F) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(fields))
    }

    /// Whether the selector has no terms (and so matches everything).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is the selector matching nothing.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The value `field` must equal, if some term pins it.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.operator == FieldOperator::Equals && r.field == field)
            .map(|r| r.value.as_str())
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// The error a resource returns for a field it cannot select on.
pub fn field_label_not_supported(label: &str) -> String {
    format!("field label not supported: {label}")
}

/// The error for a field other than `metadata.name`/`metadata.namespace`
/// on resources that support only those (upstream's default conversion).
pub fn not_a_known_field_selector(label: &str) -> String {
    let mut msg = String::new();
    crate::util::gofmt::push_go_quoted(&mut msg, label);
    msg.push_str(" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"");
    msg
}

/// Escapes `\`, `,` and `=` in a value.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`], rejecting bad escapes and bare `,` or `=`.
pub fn unescape_value(s: &str) -> Result<String, FieldSelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_owned());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(FieldSelectorError::InvalidEscape(format!("\\{c}")));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(FieldSelectorError::UnescapedRune(c)),
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(FieldSelectorError::InvalidEscape("\\".to_owned()));
    }
    Ok(out)
}

/// Splits on commas not preceded by a backslash.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::with_capacity(1);
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits a term at its first operator (`!=`, `==` or `=`).
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, operator) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], operator, rhs));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> FieldSelector {
        FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn parses_and_prints() {
        let cases = [
            ("", ""),
            ("a=b", "a=b"),
            ("a==b", "a=b"),
            ("a!=b", "a!=b"),
            ("b=c,a=b", "a=b,b=c"),
            ("x=a\\,b", "x=a\\,b"),
            ("x=a\\=b\\\\", "x=a\\=b\\\\"),
            ("x=", "x="),
            ("a=b,,c=d", "a=b,c=d"),
            (
                "metadata.name=foo,spec.nodeName!=",
                "metadata.name=foo,spec.nodeName!=",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse(input).to_string(), want, "{input:?}");
        }
        let sel = parse("x=a\\,b\\=c\\\\d");
        assert_eq!(sel.requirements()[0].value, "a,b=c\\d");
    }

    #[test]
    fn errors() {
        let cases = [
            ("a", "invalid selector: 'a'; can't understand 'a'"),
            ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
            (
                "a=b\\c",
                "invalid field selector: invalid escape sequence: \\c",
            ),
            (
                "a=b\\",
                "invalid field selector: invalid escape sequence: \\",
            ),
            (
                "a=b=c",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "a==b=",
                "invalid field selector: unescaped character in value: 61",
            ),
        ];
        for (input, want) in cases {
            let got = FieldSelector::parse(input).map_err(|e| e.to_string());
            assert_eq!(got, Err(want.to_owned()), "{input:?}");
        }
    }

    #[test]
    fn matching() {
        let fields: &[(&str, &str)] = &[("metadata.name", "foo"), ("status.phase", "Running")];
        assert!(parse("").matches(fields));
        assert!(parse("metadata.name=foo").matches(fields));
        assert!(parse("metadata.name==foo,status.phase!=Pending").matches(fields));
        assert!(!parse("metadata.name=bar").matches(fields));
        assert!(!parse("status.phase!=Running").matches(fields));
        // A missing field is the empty string.
        assert!(parse("spec.nodeName=").matches(fields));
        assert!(parse("spec.nodeName!=x").matches(fields));
        assert!(!FieldSelector::nothing().matches(fields));
        assert!(FieldSelector::everything().matches(fields));
    }

    #[test]
    fn exact_match_and_transform() {
        let sel = parse("metadata.namespace=ns,metadata.name!=x");
        assert_eq!(sel.requires_exact_match("metadata.namespace"), Some("ns"));
        assert_eq!(sel.requires_exact_match("metadata.name"), None);
        let rejected = sel.transform(|field, value| match field {
            "metadata.name" | "metadata.namespace" => Ok((field.to_owned(), value.to_owned())),
            _ => Err(field_label_not_supported(field)),
        });
        assert_eq!(rejected, Ok(sel.clone()));
        let err = parse("spec.foo=1")
            .transform(|field, _| Err::<(String, String), _>(field_label_not_supported(field)));
        assert_eq!(err, Err("field label not supported: spec.foo".to_owned()));
        let dropped = sel.transform(|_, _| Ok::<_, String>((String::new(), String::new())));
        assert_eq!(dropped.map(|s| s.is_empty()), Ok(true));
        assert_eq!(
            not_a_known_field_selector("spec.x"),
            "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            FieldSelector::one_term_equal("a", "b,c").to_string(),
            "a=b\\,c"
        );
    }

    #[test]
    fn large_selectors_parse_in_linear_time() {
        let start = std::time::Instant::now();
        // 100 KB of terms, and one 100 KB escaped value.
        let terms = vec!["metadata.name!=x"; 6_000].join(",");
        assert_eq!(parse(&terms).requirements().len(), 6_000);
        let value = format!("metadata.name={}", "a\\,".repeat(33_000));
        assert_eq!(parse(&value).requirements()[0].value.len(), 66_000);
        // A term without an operator is refused after one pass over it.
        let bad = "x".repeat(100_000);
        assert!(FieldSelector::parse(&bad).is_err());
        let took = start.elapsed();
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
    }

    #[test]
    fn escaping_round_trips() {
        for v in ["", "plain", "a,b", "a=b", "a\\b", "\\,=\\"] {
            assert_eq!(unescape_value(&escape_value(v)).as_deref(), Ok(v));
        }
    }
}
