//! kube-openapi's validation results and their translation into field
//! errors as apiextensions-apiserver does (`kubeOpenAPIResultToFieldErrors`).

use apimachinery::{FieldError, Path};
use serde_json::Value;

/// kube-openapi's error codes that change how an error becomes a field error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Code {
    Required,
    Enum,
    TooLong,
    MaxItems,
    TooManyProperties,
    InvalidType,
    Other,
}

/// One kube-openapi result error.
#[derive(Debug, Clone)]
pub(super) enum OaError {
    /// A `*errors.Validation`: named by its dotted path.
    Validation {
        code: Code,
        name: String,
        value: Option<Value>,
        /// The limit for TooLong/MaxItems/TooManyProperties, the allowed
        /// values for Enum.
        valid: Option<Value>,
        message: String,
    },
    /// Any other error (composition failures, range conversions).
    Plain(String),
}

#[derive(Debug, Default)]
pub(super) struct Res {
    pub(super) errors: Vec<OaError>,
    pub(super) matches: usize,
}

impl Res {
    pub(super) fn merge(&mut self, other: Res) {
        self.errors.extend(other.errors);
        self.matches += other.matches;
    }
    pub(super) fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
    pub(super) fn add(&mut self, code: Code, name: &str, value: Option<Value>, message: String) {
        self.errors.push(OaError::Validation {
            code,
            name: name.to_owned(),
            value,
            valid: None,
            message,
        });
    }
}

fn error_path(base: Option<&Path>, name: &str) -> Path {
    let name = if name == "." {
        ""
    } else {
        name.strip_prefix('.').unwrap_or(name)
    };
    match (base, name.is_empty()) {
        (Some(b), true) => b.clone(),
        (Some(b), false) => b.child(name),
        (None, true) => Path::new("<nil>"),
        (None, false) => Path::new(name),
    }
}

pub(super) fn to_field_error(err: OaError, base: Option<&Path>) -> FieldError {
    let (code, name, value, valid, message) = match err {
        OaError::Plain(message) => {
            let path = base.cloned().unwrap_or_else(|| Path::new("<nil>"));
            return FieldError::invalid(&path, "", message);
        }
        OaError::Validation {
            code,
            name,
            value,
            valid,
            message,
        } => (code, name, value, valid, message),
    };
    let path = error_path(base, &name);
    let as_usize = |v: &Option<Value>| v.as_ref().and_then(Value::as_u64).map(|n| n as usize);
    match code {
        Code::Required => FieldError::required(&path, ""),
        Code::Enum => {
            let allowed: Vec<String> = match valid {
                Some(Value::Array(values)) => values
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            FieldError::not_supported(&path, value.unwrap_or(Value::Null), &allowed)
        }
        Code::TooLong => FieldError::too_long(&path, as_usize(&valid)),
        Code::MaxItems | Code::TooManyProperties => {
            FieldError::too_many(&path, as_usize(&value), as_usize(&valid))
        }
        Code::InvalidType => {
            FieldError::type_invalid(&path, value.unwrap_or_else(|| "".into()), message)
        }
        Code::Other => FieldError::invalid(&path, value.unwrap_or_else(|| "".into()), message),
    }
}
