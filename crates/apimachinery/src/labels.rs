//! Label selectors (upstream's `k8s.io/apimachinery/pkg/labels`): parsing
//! the `labelSelector` query syntax (`a=b,c!=d,e in (f,g),!h,i gt 5`),
//! converting a `metav1.LabelSelector` object, and matching label sets.
//!
//! Parse errors carry upstream's exact messages, since clients show them.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde_json::{Map, Value};

use crate::field_errors::{aggregate_message, ErrorType, FieldError, Path};
use crate::util::validation::{is_label_value, is_qualified_name};

/// A set of labels a selector can be matched against.
pub trait Labels {
    /// The value of label `key`, if present.
    fn get_label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl Labels for HashMap<String, String> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// An object's `metadata.labels` as JSON; non-string values are ignored.
impl Labels for Map<String, Value> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// Labels given as key/value pairs.
impl Labels for [(&str, &str)] {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

/// A selector operator (upstream's `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

impl Operator {
    /// The operator's name as upstream spells it (`in`, `=`, `gt`, `!`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// A label selector parse or validation failure, with upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

/// One requirement of a selector, e.g. `env in (prod,qa)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

fn sub_path(base: Option<&Path>, name: &str) -> Path {
    match base {
        Some(p) => p.child(name),
        None => Path::new(name),
    }
}

fn invalid_values(path: &Path, values: &[String], detail: &str) -> FieldError {
    // Upstream passes a nil slice here when there are no values.
    let shown = if values.is_empty() {
        Value::Null
    } else {
        Value::from(values.to_vec())
    };
    FieldError::invalid(path, shown, detail)
}

impl Requirement {
    /// Builds and validates a requirement as upstream's `NewRequirement`;
    /// `path` prefixes the field names in error messages.
    pub fn new(
        key: &str,
        operator: Operator,
        values: Vec<String>,
        path: Option<&Path>,
    ) -> Result<Self, SelectorError> {
        let mut errs = Vec::new();
        let key_msgs = is_qualified_name(key);
        if !key_msgs.is_empty() {
            errs.push(FieldError::invalid(
                &sub_path(path, "key"),
                key,
                key_msgs.join("; "),
            ));
        }
        let values_path = sub_path(path, "values");
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => errs.push(invalid_values(
                &values_path,
                &values,
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                errs.push(invalid_values(
                    &values_path,
                    &values,
                    "exact-match compatibility requires one single value",
                ))
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errs.push(invalid_values(
                    &values_path,
                    &values,
                    "values set must be empty for exists and does not exist",
                ))
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(invalid_values(
                        &values_path,
                        &values,
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(FieldError::invalid(
                            &values_path.index(i),
                            v.as_str(),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_label_value(v);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    &values_path.index(i).key(key),
                    v.as_str(),
                    msgs.join("; "),
                ));
            }
        }
        match aggregate_message(&errs) {
            Some(msg) => Err(SelectorError(msg)),
            None => Ok(Requirement {
                key: key.to_owned(),
                operator,
                values,
            }),
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order given.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }

    /// Whether `labels` satisfy this requirement.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let found = labels.get_label(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                found.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => !found.is_some_and(|v| self.has_value(v)),
            Operator::Exists => found.is_some(),
            Operator::DoesNotExist => found.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), [wanted]) = (found, self.values.as_slice()) else {
                    return false;
                };
                match (actual.parse::<i64>(), wanted.parse::<i64>()) {
                    (Ok(a), Ok(w)) if self.operator == Operator::GreaterThan => a > w,
                    (Ok(a), Ok(w)) => a < w,
                    _ => false,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        f.write_str(&sorted.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A label selector: all requirements must match. The "nothing" selector
/// (from a null `metav1.LabelSelector`) matches no object at all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// The selector matching every label set.
    pub fn everything() -> Self {
        Selector::default()
    }

    /// The selector matching nothing.
    pub fn nothing() -> Self {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// A selector from requirements, sorted by key as upstream does.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector {
            requirements,
            nothing: false,
        }
    }

    /// The selector requiring each `key=value` of `set`.
    pub fn from_set<'a>(set: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let requirements = set
            .into_iter()
            .map(|(k, v)| Requirement {
                key: k.to_owned(),
                operator: Operator::Equals,
                values: vec![v.to_owned()],
            })
            .collect();
        Self::from_requirements(requirements)
    }

    /// Parses the `labelSelector` query syntax.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let requirements = Parser::new(selector).parse()?;
        Ok(Self::from_requirements(requirements))
    }

    /// Converts a `metav1.LabelSelector` object; `None` or `null` selects
    /// nothing, an empty object selects everything.
    pub fn from_label_selector(selector: Option<&Value>) -> Result<Self, SelectorError> {
        let Some(obj) = selector.and_then(Value::as_object) else {
            return Ok(Self::nothing());
        };
        let match_labels = obj.get("matchLabels").and_then(Value::as_object);
        let match_exprs = obj.get("matchExpressions").and_then(Value::as_array);
        let count = match_labels.map_or(0, Map::len) + match_exprs.map_or(0, Vec::len);
        if count == 0 {
            return Ok(Self::everything());
        }
        let mut requirements = Vec::with_capacity(count);
        for (k, v) in match_labels.into_iter().flatten() {
            let value = v.as_str().unwrap_or_default().to_owned();
            requirements.push(Requirement::new(k, Operator::Equals, vec![value], None)?);
        }
        for expr in match_exprs.into_iter().flatten() {
            let field = |name: &str| expr.get(name).and_then(Value::as_str).unwrap_or_default();
            let op = match field("operator") {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    let mut msg = String::new();
                    crate::util::gofmt::push_go_quoted(&mut msg, other);
                    msg.push_str(" is not a valid label selector operator");
                    return Err(SelectorError(msg));
                }
            };
            let values = expr
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .map(|v| v.as_str().unwrap_or_default().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            requirements.push(Requirement::new(field("key"), op, values, None)?);
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector matches everything (has no requirements).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is the selector matching nothing.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The value `label` must have exactly, if the selector pins it (lets
    /// a store narrow a list before matching).
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for Selector {
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

/// Lexical tokens of the selector syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the input into tokens, as upstream's lexer does.
fn lex(s: &str) -> Vec<(Token, &str)> {
    let bytes = s.as_bytes();
    let mut items = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() {
            items.push((Token::EndOfString, ""));
            return items;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            // Longest run of special characters that still forms a token;
            // every single special character is one.
            let mut end = pos + 1;
            while end < bytes.len() && is_special(bytes[end]) && keyword(&s[start..=end]).is_some()
            {
                end += 1;
            }
            let lit = &s[start..end];
            items.push((keyword(lit).unwrap_or(Token::Identifier), lit));
            pos = end;
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_whitespace(bytes[pos]) {
                pos += 1;
            }
            let lit = &s[start..pos];
            items.push((keyword(lit).unwrap_or(Token::Identifier), lit));
        }
    }
}

/// Whether tokens are read as keys/operators or as values (where `in` and
/// `notin` are plain identifiers).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    items: Vec<(Token, &'a str)>,
    position: usize,
}

fn err(msg: String) -> SelectorError {
    SelectorError(msg)
}

impl<'a> Parser<'a> {
    fn new(input: &'a str) -> Self {
        Parser {
            items: lex(input),
            position: 0,
        }
    }

    fn item(&self, index: usize, ctx: Context) -> (Token, &'a str) {
        // The lexer always ends with EndOfString; stay on it.
        let (tok, lit) = self
            .items
            .get(index)
            .or(self.items.last())
            .copied()
            .unwrap_or((Token::EndOfString, ""));
        match tok {
            Token::In | Token::NotIn if ctx == Context::Values => (Token::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn lookahead(&self, ctx: Context) -> (Token, &'a str) {
        self.item(self.position, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, &'a str) {
        let item = self.item(self.position, ctx);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| err(format!("unable to parse requirement: {e}")))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(err(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )))
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, SelectorError> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return Requirement::new(key, op, Vec::new(), None);
        }
        let op = self.parse_operator()?;
        let mut values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        // Upstream collects values in a set and lists it sorted.
        values.sort_unstable();
        values.dedup();
        Requirement::new(key, op, values, None)
    }

    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(&'a str, Option<Operator>), SelectorError> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(err(format!("found '{lit}', expected: identifier")));
        }
        let msgs = is_qualified_name(lit);
        if !msgs.is_empty() {
            // Upstream validates the key against a nil path here.
            let e = FieldError {
                error_type: ErrorType::Invalid,
                field: "<nil>".to_owned(),
                bad_value: Some(Value::from(lit)),
                detail: msgs.join("; "),
            };
            return Err(err(e.to_string()));
        }
        let (next, _) = self.lookahead(Context::Values);
        if op.is_none() && matches!(next, Token::EndOfString | Token::Comma) {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, SelectorError> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                )))
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, SelectorError> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(err(format!("found '{lit}' expected: '('")));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                // The list only ends on a lookahead of ')'.
                self.consume(Context::Values);
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(err(format!(
                "found '{lit}', expected: ',', ')' or identifier"
            ))),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, SelectorError> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    values.push(lit.to_owned());
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(err(format!("found '{lit2}', expected: ',' or ')'"))),
                    }
                }
                Token::Comma => {
                    // Empty entries (`(,a)`, `(a,)`, `(a,,b)`) mean "".
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if tok2 == Token::Comma {
                        values.push(String::new());
                    }
                }
                _ => return Err(err(format!("found '{lit}', expected: ',', or identifier"))),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, SelectorError> {
        let (tok, _) = self.lookahead(Context::Values);
        if matches!(tok, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(vec![lit.to_owned()])
        } else {
            Err(err(format!("found '{lit}', expected: identifier")))
        }
    }
}

#[cfg(test)]
mod tests;
