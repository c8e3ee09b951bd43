//! JSON values as CEL values, typed by their schema: `type: integer` numbers
//! become `int` (JSON has no integers of its own), `format: date-time`
//! strings become timestamps, and property names are escaped the way
//! upstream escapes them for CEL. Strings are borrowed from the JSON, not
//! copied.

use std::collections::HashMap;

use base64::Engine as _;
use cel::common::types::{
    CelBool, CelBytes, CelDouble, CelDuration, CelInt, CelList, CelMap, CelMapKey, CelNull,
    CelString, CelTimestamp,
};
use cel::common::value::Val;
use chrono::{DateTime, FixedOffset, NaiveDate};
use serde_json::Value;

use crate::schema::{Kind, Node};

/// Words CEL reserves, which properties of that name are escaped around.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Whether CEL reserves `name` (it cannot name a variable).
pub fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
}

/// The CEL name of property `name`, or `None` when it cannot be spelled in
/// CEL (and so is invisible to rules).
pub(crate) fn escape(name: &str) -> Option<String> {
    if is_reserved(name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

/// `value` as a CEL value of the type `node` declares (`None`: untyped,
/// converted from the JSON shape).
pub(crate) fn to_val<'a>(value: &'a Value, node: Option<&Node>) -> Box<dyn Val + 'a> {
    let kind = node.map_or(Kind::Any, |n| n.kind);
    match value {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => number(n, kind),
        Value::String(s) => string(s, kind),
        Value::Array(items) => {
            let item_node = node.and_then(|n| n.items.as_deref());
            let vals: Vec<Box<dyn Val + 'a>> =
                items.iter().map(|item| to_val(item, item_node)).collect();
            Box::new(CelList::from(vals))
        }
        Value::Object(map) => object(map, node),
    }
}

fn number<'a>(n: &serde_json::Number, kind: Kind) -> Box<dyn Val + 'a> {
    let integral = match kind {
        Kind::Number => None,
        _ => n.as_i64().or_else(|| {
            // `1.0` is a valid integer in a JSON request.
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map(|f| f as i64)
                .filter(|_| matches!(kind, Kind::Integer | Kind::IntOrString))
        }),
    };
    match integral {
        Some(i) => Box::new(CelInt::from(i)),
        None => Box::new(CelDouble::from(n.as_f64().unwrap_or(0.0))),
    }
}

fn string<'a>(s: &'a str, kind: Kind) -> Box<dyn Val + 'a> {
    match kind {
        Kind::Bytes => match base64::engine::general_purpose::STANDARD.decode(s) {
            Ok(bytes) => Box::new(CelBytes::from(bytes)),
            Err(_) => Box::new(CelString::from(s)),
        },
        Kind::Duration => match parse_go_duration(s) {
            Some(d) => Box::new(CelDuration::from(d)),
            None => Box::new(CelString::from(s)),
        },
        Kind::Timestamp => match parse_timestamp(s) {
            Some(t) => Box::new(CelTimestamp::from(t)),
            None => Box::new(CelString::from(s)),
        },
        _ => Box::new(CelString::from(s)),
    }
}

fn object<'a>(map: &'a serde_json::Map<String, Value>, node: Option<&Node>) -> Box<dyn Val + 'a> {
    let mut out: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> = HashMap::with_capacity(map.len());
    match node {
        // A map: keys are data, not field names, so they are not escaped.
        Some(n) if n.additional.is_some() => {
            let values = n.additional.as_deref();
            for (k, v) in map {
                out.insert(CelMapKey::from(k.as_str()), to_val(v, values));
            }
        }
        // An object with declared fields exposes just those.
        Some(n) if !n.properties.is_empty() => {
            for (name, prop) in &n.properties {
                if let (Some(v), Some(cel_name)) = (map.get(name), escape(name)) {
                    out.insert(CelMapKey::from(cel_name), to_val(v, Some(prop)));
                }
            }
        }
        _ => {
            for (k, v) in map {
                out.insert(CelMapKey::from(k.as_str()), to_val(v, None));
            }
        }
    }
    Box::new(CelMap::from(out))
}

/// Parses an RFC 3339 date-time, or a full date (as midnight UTC).
pub(crate) fn parse_timestamp(s: &str) -> Option<DateTime<FixedOffset>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t);
    }
    let date = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().fixed_offset())
}

/// Parses a Go duration string (`1h30m`, `-1.5s`, `300ms`, `0`).
pub(crate) fn parse_go_duration(s: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut total_nanos: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let number: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total_nanos += number * scale;
    }
    if total_nanos > i64::MAX as f64 {
        return None;
    }
    let nanos = total_nanos.round() as i64;
    Some(chrono::Duration::nanoseconds(if negative {
        -nanos
    } else {
        nanos
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_upstream() {
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(
            escape("a-b.c/d").as_deref(),
            Some("a__dash__b__dot__c__slash__d")
        );
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("plain_name1").as_deref(), Some("plain_name1"));
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn parses_go_durations() {
        assert_eq!(
            parse_go_duration("1h30m"),
            Some(chrono::Duration::minutes(90))
        );
        assert_eq!(
            parse_go_duration("-1.5s"),
            Some(chrono::Duration::milliseconds(-1500))
        );
        assert_eq!(parse_go_duration("0"), Some(chrono::Duration::zero()));
        assert_eq!(parse_go_duration("5"), None);
        assert_eq!(parse_go_duration(""), None);
    }
}
