//! One log entry as both formats see it: severity, V level, source
//! location, message, error and key/value pairs in the order given
//! (klog's `InfoS`/`ErrorS` arguments), read from a `tracing` event.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level};

use super::verbosity;

/// klog's severities (`internal/severity`); tracing has no Fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    /// The header's first character.
    pub fn char(self) -> char {
        match self {
            Severity::Info => 'I',
            Severity::Warning => 'W',
            Severity::Error => 'E',
        }
    }

    fn of(level: &Level) -> Severity {
        match *level {
            Level::ERROR => Severity::Error,
            Level::WARN => Severity::Warning,
            _ => Severity::Info,
        }
    }
}

/// A value: strings (and anything formatted) quoted, the rest bare.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Uint(u64),
    Float(f64),
    Bool(bool),
}

impl fmt::Display for Value {
    /// The bare form (Go's `%+v`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Int(v) => write!(f, "{v}"),
            Value::Uint(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub severity: Severity,
    pub v: u32,
    /// The source file's path, when known.
    pub file: Option<String>,
    pub line: u32,
    pub msg: String,
    /// The `error` (or `err`) field, shown as klog's `err`.
    pub err: Option<String>,
    pub values: Vec<(String, Value)>,
}

impl Entry {
    /// Reads `event`; `file` and `line` are its (normalized) location.
    pub fn from_event(event: &Event<'_>, file: Option<&str>, line: Option<u32>) -> Entry {
        let level = event.metadata().level();
        let mut entry = Entry {
            severity: Severity::of(level),
            v: verbosity::default_v(level),
            file: file.map(str::to_owned),
            line: line.unwrap_or(1),
            msg: String::new(),
            err: None,
            values: Vec::new(),
        };
        event.record(&mut entry);
        entry
    }

    fn push(&mut self, field: &Field, value: Value) {
        match field.name() {
            "message" => self.msg = value.to_string(),
            "error" | "err" => self.err = Some(value.to_string()),
            "v" => match value {
                Value::Int(v) => self.v = u32::try_from(v).unwrap_or(0),
                Value::Uint(v) => self.v = u32::try_from(v).unwrap_or(u32::MAX),
                other => self.values.push(("v".into(), other)),
            },
            // Where tracing-log put a `log` record's origin.
            name if name.starts_with("log.") => {}
            name => self.values.push((name.to_owned(), value)),
        }
    }
}

impl Visit for Entry {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.push(field, Value::Str(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field, Value::Str(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field, Value::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push(field, Value::Uint(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.push(field, Value::Float(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push(field, Value::Bool(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.push(field, Value::Str(value.to_string()));
    }
}
