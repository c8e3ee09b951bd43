//! Field-level validation errors, the equivalent of upstream's
//! `k8s.io/apimachinery/pkg/util/validation/field`.
//!
//! A [`FieldError`] names the offending field by its [`Path`]
//! (`metadata.name[0][k]`), carries a machine-readable [`ErrorType`] (which
//! becomes the `reason` of a Status cause) and renders its message exactly
//! as upstream does, including how the bad value is printed.

use std::fmt::{self, Write as _};

use serde_json::Value;

use crate::status::StatusCause;
use crate::util::gofmt::{push_go_float, push_go_quoted};

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Field(String),
    Index(usize),
    Key(String),
}

/// The path to a field inside an object, built like upstream's
/// `field.NewPath("metadata").Child("name").Index(0).Key("k")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    segments: Vec<Segment>,
}

impl Path {
    /// A path rooted at the field `name`.
    pub fn new(name: &str) -> Self {
        Path {
            segments: vec![Segment::Field(name.to_owned())],
        }
    }

    /// This path extended by the field `name`.
    #[must_use]
    pub fn child(&self, name: &str) -> Self {
        self.with(Segment::Field(name.to_owned()))
    }

    /// This path extended by the list index `index`.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        self.with(Segment::Index(index))
    }

    /// This path extended by the map key `key`.
    #[must_use]
    pub fn key(&self, key: &str) -> Self {
        self.with(Segment::Key(key.to_owned()))
    }

    fn with(&self, segment: Segment) -> Self {
        let mut segments = Vec::with_capacity(self.segments.len() + 1);
        segments.extend(self.segments.iter().cloned());
        segments.push(segment);
        Path { segments }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                // Upstream writes no dot before a field with an empty name.
                Segment::Field(name) => {
                    if i > 0 && !name.is_empty() {
                        f.write_char('.')?;
                    }
                    f.write_str(name)?;
                }
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::Key(key) => write!(f, "[{key}]")?,
            }
        }
        Ok(())
    }
}

/// Why a field is invalid; the string forms are upstream's `CauseType`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    TooFew,
    Internal,
    TypeInvalid,
    TooShort,
}

impl ErrorType {
    /// The machine-readable name, used as the `reason` of a Status cause.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::TooFew => "FieldValueTooFew",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::TooShort => "FieldValueTooShort",
        }
    }

    /// The human-readable label that starts an error's message.
    pub fn label(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::TooFew => "Too few",
            ErrorType::Internal => "Internal error",
            ErrorType::TooShort => "Too short",
        }
    }

    /// Whether messages of this type show the offending value.
    fn shows_value(self) -> bool {
        !matches!(
            self,
            ErrorType::Required
                | ErrorType::Forbidden
                | ErrorType::TooLong
                | ErrorType::TooShort
                | ErrorType::Internal
        )
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A field-level validation error (upstream's `field.Error`).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// The kind of problem.
    pub error_type: ErrorType,
    /// The rendered path of the field, e.g. `metadata.labels`.
    pub field: String,
    /// The offending value; `None` when the message must not show it.
    pub bad_value: Option<Value>,
    /// Free-form detail appended to the message.
    pub detail: String,
}

/// A list of field errors (upstream's `field.ErrorList`).
pub type ErrorList = Vec<FieldError>;

impl FieldError {
    fn new(error_type: ErrorType, path: &Path, bad_value: Option<Value>, detail: String) -> Self {
        FieldError {
            error_type,
            field: path.to_string(),
            bad_value,
            detail,
        }
    }

    /// A required value is missing.
    pub fn required(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, path, None, detail.into())
    }

    /// A malformed value.
    pub fn invalid(path: &Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, path, Some(value.into()), detail.into())
    }

    /// A value that does not match the schema type of the field.
    pub fn type_invalid(path: &Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::new(
            ErrorType::TypeInvalid,
            path,
            Some(value.into()),
            detail.into(),
        )
    }

    /// A value that must be unique appears more than once.
    pub fn duplicate(path: &Path, value: impl Into<Value>) -> Self {
        Self::new(
            ErrorType::Duplicate,
            path,
            Some(value.into()),
            String::new(),
        )
    }

    /// A referenced value could not be found.
    pub fn not_found(path: &Path, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::NotFound, path, Some(value.into()), String::new())
    }

    /// A value outside an enumerated set; lists the supported values.
    pub fn not_supported<S: AsRef<str>>(
        path: &Path,
        value: impl Into<Value>,
        supported: &[S],
    ) -> Self {
        let mut detail = String::new();
        if !supported.is_empty() {
            detail.push_str("supported values: ");
            for (i, v) in supported.iter().enumerate() {
                if i > 0 {
                    detail.push_str(", ");
                }
                push_go_quoted(&mut detail, v.as_ref());
            }
        }
        Self::new(ErrorType::NotSupported, path, Some(value.into()), detail)
    }

    /// A well-formed value that the current conditions do not permit.
    pub fn forbidden(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, path, None, detail.into())
    }

    /// A value longer than `max_bytes` bytes (`None`: no limit is named).
    pub fn too_long(path: &Path, max_bytes: Option<usize>) -> Self {
        let detail = match max_bytes {
            Some(1) => "may not be more than 1 byte".to_owned(),
            Some(n) => format!("may not be more than {n} bytes"),
            None => "value is too long".to_owned(),
        };
        Self::new(ErrorType::TooLong, path, None, detail)
    }

    /// A value longer than `max_chars` characters (`None`: no limit is named).
    pub fn too_long_characters(path: &Path, max_chars: Option<usize>) -> Self {
        let detail = match max_chars {
            Some(1) => "may not be more than 1 character".to_owned(),
            Some(n) => format!("may not be more than {n} characters"),
            None => "value is too long".to_owned(),
        };
        Self::new(ErrorType::TooLong, path, None, detail)
    }

    /// A value shorter than `min_chars` characters.
    pub fn too_short(path: &Path, value: &str, min_chars: Option<usize>) -> Self {
        let detail = match min_chars {
            Some(1) => "must be at least 1 character".to_owned(),
            Some(n) => format!("must be at least {n} characters"),
            None => "value is too short".to_owned(),
        };
        Self::new(ErrorType::TooShort, path, Some(Value::from(value)), detail)
    }

    /// A list with `actual` items (`None`: not shown) where at most `max`
    /// (`None`: not named) are allowed.
    pub fn too_many(path: &Path, actual: Option<usize>, max: Option<usize>) -> Self {
        let detail = match max {
            Some(1) => "must have at most 1 item".to_owned(),
            Some(n) => format!("must have at most {n} items"),
            None => "has too many items".to_owned(),
        };
        Self::new(ErrorType::TooMany, path, actual.map(Value::from), detail)
    }

    /// An error not caused by the user's input.
    pub fn internal(path: &Path, err: impl fmt::Display) -> Self {
        Self::new(ErrorType::Internal, path, None, err.to_string())
    }

    /// The message without the field path (upstream's `ErrorBody`).
    pub fn body(&self) -> String {
        let mut s = String::from(self.error_type.label());
        if self.error_type.shows_value() {
            if let Some(value) = &self.bad_value {
                s.push_str(": ");
                push_go_value(&mut s, value);
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// This error as a cause of a Status.
    pub fn to_cause(&self) -> StatusCause {
        StatusCause {
            reason: self.error_type.as_str().to_owned(),
            message: self.body(),
            field: self.field.clone(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// The aggregate message of a list as upstream's `ToAggregate().Error()`
/// renders it: duplicates dropped, a lone message bare, several as
/// `[a, b]`. `None` for an empty list.
pub fn aggregate_message(errors: &[FieldError]) -> Option<String> {
    let mut seen = std::collections::HashSet::with_capacity(errors.len());
    let mut unique: Vec<String> = Vec::with_capacity(errors.len());
    for err in errors {
        let msg = err.to_string();
        if seen.insert(msg.clone()) {
            unique.push(msg);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop(),
        _ => Some(format!("[{}]", unique.join(", "))),
    }
}

/// Renders a bad value as upstream does: strings Go-quoted, numbers and
/// booleans bare, anything else as Go's JSON encoding.
fn push_go_value(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => push_go_quoted(out, s),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => push_go_float(out, f),
            _ => {
                let _ = write!(out, "{n}");
            }
        },
        Value::Null | Value::Array(_) | Value::Object(_) => push_go_json(out, value),
    }
}

/// Appends `value` as Go's `encoding/json` would encode it: object keys
/// sorted, `<`, `>` and `&` escaped, whole floats without a fraction.
fn push_go_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => {
                let _ = write!(out, "{f:.0}");
            }
            _ => {
                let _ = write!(out, "{n}");
            }
        },
        Value::String(s) => push_go_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_go_json_string(out, key);
                out.push(':');
                if let Some(v) = map.get(key) {
                    push_go_json(out, v);
                }
            }
            out.push('}');
        }
    }
}

fn push_go_json_string(out: &mut String, s: &str) {
    let encoded = Value::from(s).to_string();
    for c in encoded.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_render_like_upstream() {
        let p = Path::new("metadata").child("name").index(0).key("k");
        assert_eq!(p.to_string(), "metadata.name[0][k]");
        assert_eq!(Path::new("spec").to_string(), "spec");
        assert_eq!(
            Path::new("spec")
                .child("containers")
                .index(3)
                .child("image")
                .to_string(),
            "spec.containers[3].image"
        );
        assert_eq!(
            Path::new("metadata")
                .child("annotations")
                .key("a.b/c")
                .to_string(),
            "metadata.annotations[a.b/c]"
        );
    }

    #[test]
    fn messages_per_type() {
        let p = Path::new("metadata").child("name");
        let cases = [
            (
                FieldError::required(&p, ""),
                "metadata.name: Required value",
            ),
            (
                FieldError::required(&p, "name or generateName is required"),
                "metadata.name: Required value: name or generateName is required",
            ),
            (
                FieldError::invalid(&p, "Foo", "must be lower case"),
                "metadata.name: Invalid value: \"Foo\": must be lower case",
            ),
            (
                FieldError::invalid(&p, 5, "must be positive"),
                "metadata.name: Invalid value: 5: must be positive",
            ),
            (
                FieldError::invalid(&p, -1.5, ""),
                "metadata.name: Invalid value: -1.5",
            ),
            (
                FieldError::invalid(&p, true, "x"),
                "metadata.name: Invalid value: true: x",
            ),
            (
                FieldError::invalid(&p, json!(["a", "b<"]), "x"),
                "metadata.name: Invalid value: [\"a\",\"b\\u003c\"]: x",
            ),
            (
                FieldError::invalid(&p, json!({"z": 1, "a": 2.0}), "x"),
                "metadata.name: Invalid value: {\"a\":2,\"z\":1}: x",
            ),
            (
                FieldError::invalid(&p, Value::Null, "x"),
                "metadata.name: Invalid value: null: x",
            ),
            (
                FieldError::duplicate(&p, "a"),
                "metadata.name: Duplicate value: \"a\"",
            ),
            (
                FieldError::not_found(&p, "a"),
                "metadata.name: Not found: \"a\"",
            ),
            (
                FieldError::not_supported(&p, "x", &["a", "b"]),
                "metadata.name: Unsupported value: \"x\": supported values: \"a\", \"b\"",
            ),
            (
                FieldError::not_supported::<&str>(&p, "x", &[]),
                "metadata.name: Unsupported value: \"x\"",
            ),
            (
                FieldError::forbidden(&p, "field is immutable"),
                "metadata.name: Forbidden: field is immutable",
            ),
            (
                FieldError::too_long(&p, Some(63)),
                "metadata.name: Too long: may not be more than 63 bytes",
            ),
            (
                FieldError::too_long(&p, Some(1)),
                "metadata.name: Too long: may not be more than 1 byte",
            ),
            (
                FieldError::too_long(&p, None),
                "metadata.name: Too long: value is too long",
            ),
            (
                FieldError::too_long_characters(&p, Some(5)),
                "metadata.name: Too long: may not be more than 5 characters",
            ),
            (
                FieldError::too_short(&p, "ab", Some(3)),
                "metadata.name: Too short: must be at least 3 characters",
            ),
            (
                FieldError::too_many(&p, Some(5), Some(4)),
                "metadata.name: Too many: 5: must have at most 4 items",
            ),
            (
                FieldError::too_many(&p, None, Some(1)),
                "metadata.name: Too many: must have at most 1 item",
            ),
            (
                FieldError::too_many(&p, Some(2), None),
                "metadata.name: Too many: 2: has too many items",
            ),
            (
                FieldError::internal(&p, "boom"),
                "metadata.name: Internal error: boom",
            ),
            (
                FieldError::type_invalid(&p, "x", "must be an integer"),
                "metadata.name: Invalid value: \"x\": must be an integer",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn aggregate_dedupes_and_brackets() {
        let p = Path::new("spec");
        assert_eq!(aggregate_message(&[]), None);
        let one = FieldError::required(&p.child("a"), "");
        assert_eq!(
            aggregate_message(std::slice::from_ref(&one)).as_deref(),
            Some("spec.a: Required value")
        );
        let two = FieldError::forbidden(&p.child("b"), "no");
        assert_eq!(
            aggregate_message(&[one.clone(), two.clone(), one.clone()]).as_deref(),
            Some("[spec.a: Required value, spec.b: Forbidden: no]")
        );
        assert_eq!(
            aggregate_message(&[one.clone(), one]).as_deref(),
            Some("spec.a: Required value")
        );
    }

    #[test]
    fn causes_carry_type_body_and_field() {
        let err = FieldError::invalid(&Path::new("metadata").child("name"), "A", "bad");
        let cause = err.to_cause();
        assert_eq!(cause.reason, "FieldValueInvalid");
        assert_eq!(cause.message, "Invalid value: \"A\": bad");
        assert_eq!(cause.field, "metadata.name");
        assert_eq!(
            FieldError::required(&Path::new("x"), "").to_cause().reason,
            "FieldValueRequired"
        );
    }
}
