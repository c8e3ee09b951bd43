//! OpenAPI v3 value validation with the semantics and messages of
//! kube-openapi's `validate.SchemaValidator`, which upstream runs on every
//! custom resource (and on every schema `default`), and the translation of
//! its results into field errors as apiextensions-apiserver does.

use std::collections::HashMap;

use apimachinery::{FieldError, Path};
use regex::Regex;
use serde_json::Value;

use crate::formats;
use crate::gofmt::{go_float, go_quote};
use crate::props::{Items, Props};

/// Compiled `pattern`s of a schema, by pattern text.
#[derive(Debug, Clone, Default)]
pub struct Patterns {
    compiled: HashMap<String, Result<Regex, String>>,
}

impl Patterns {
    /// Compiles every pattern in `schema` (including nested value validations).
    pub fn collect(schema: &Props) -> Patterns {
        let mut p = Patterns::default();
        schema.any(&mut |s: &Props| {
            if !s.pattern.is_empty() && !p.compiled.contains_key(&s.pattern) {
                let re = Regex::new(&s.pattern).map_err(|e| e.to_string());
                p.compiled.insert(s.pattern.clone(), re);
            }
            false
        });
        p
    }

    fn get(&self, pattern: &str) -> Option<&Result<Regex, String>> {
        self.compiled.get(pattern)
    }
}

/// kube-openapi's error codes that change how an error becomes a field error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
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
enum OaError {
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
struct Res {
    errors: Vec<OaError>,
    matches: usize,
}

impl Res {
    fn merge(&mut self, other: Res) {
        self.errors.extend(other.errors);
        self.matches += other.matches;
    }
    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
    fn add(&mut self, code: Code, name: &str, value: Option<Value>, message: String) {
        self.errors.push(OaError::Validation {
            code,
            name: name.to_owned(),
            value,
            valid: None,
            message,
        });
    }
}

/// Validates `data` against `schema`, reporting errors under `base` (upstream
/// validates custom resources with a nil base path, printed `<nil>`).
pub fn validate(
    schema: &Props,
    patterns: &Patterns,
    data: &Value,
    base: Option<&Path>,
) -> Vec<FieldError> {
    let res = validate_node(schema, patterns, data, "");
    res.errors
        .into_iter()
        .map(|e| to_field_error(e, base))
        .collect()
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

fn to_field_error(err: OaError, base: Option<&Path>) -> FieldError {
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

const IN: &str = "body";

/// The JSON types a schema accepts (`x-kubernetes-int-or-string` is two).
fn schema_types(s: &Props) -> Vec<&str> {
    if s.x_int_or_string {
        vec!["integer", "string"]
    } else if s.ty.is_empty() {
        Vec::new()
    } else {
        vec![s.ty.as_str()]
    }
}

/// The format after upstream strips the ones CRDs do not support.
pub fn effective_format(s: &Props) -> &str {
    if s.format.is_empty() {
        return "";
    }
    let ty = if s.x_int_or_string { "" } else { s.ty.as_str() };
    let keep = match ty {
        "" | "string" => formats::is_supported(&s.format),
        "integer" => matches!(s.format.as_str(), "int32" | "int64"),
        "number" => matches!(s.format.as_str(), "float" | "double"),
        _ => false,
    };
    if keep {
        &s.format
    } else {
        ""
    }
}

/// The type name and format kube-openapi infers from a JSON value.
fn value_type(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

fn validate_node(s: &Props, patterns: &Patterns, data: &Value, path: &str) -> Res {
    let mut res = Res::default();
    let types = schema_types(s);
    let format = effective_format(s);
    if data.is_null() {
        if !types.is_empty() || !format.is_empty() {
            res.merge(check_type(s, &types, format, data, path));
        }
        res.merge(check_enum(s, data, path));
        return res;
    }
    let apply = |r: Res, res: &mut Res| {
        res.merge(r);
        res.matches += 1;
    };
    if !types.is_empty() || !format.is_empty() {
        apply(check_type(s, &types, format, data, path), &mut res);
    }
    apply(check_compositions(s, patterns, data, path), &mut res);
    match data {
        Value::String(text) => {
            apply(check_string(s, patterns, text, path), &mut res);
            if !format.is_empty() && formats::is_known(format) {
                apply(check_format(format, text, path), &mut res);
            }
        }
        Value::Number(_) => apply(check_number(s, &types, format, data, path), &mut res),
        Value::Array(items) => apply(check_slice(s, patterns, items, path), &mut res),
        _ => {}
    }
    apply(check_enum(s, data, path), &mut res);
    if let Value::Object(map) = data {
        apply(check_object(s, patterns, map, path), &mut res);
    }
    res.matches += 1;
    res
}

fn invalid_type(path: &str, type_name: &str, value: &str) -> (Code, String, Option<Value>, String) {
    let message = format!(
        "{path} in {IN} must be of type {type_name}: {}",
        go_quote(value)
    );
    (
        Code::InvalidType,
        path.to_owned(),
        Some(Value::from(value)),
        message,
    )
}

fn check_type(s: &Props, types: &[&str], format: &str, data: &Value, path: &str) -> Res {
    let mut res = Res {
        matches: 1,
        ..Res::default()
    };
    let push =
        |res: &mut Res, (code, name, value, message): (Code, String, Option<Value>, String)| {
            res.add(code, &name, value, message);
        };
    if data.is_null() {
        if !types.is_empty() && !s.nullable {
            push(&mut res, invalid_type(path, &types.join(","), "null"));
        }
        return res;
    }
    let (sch_type, sch_format) = value_type(data);
    let contains = |t: &str| types.contains(&t);
    let is_float_int = sch_type == "number"
        && data
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
        && contains("integer");
    let is_int_float = sch_type == "integer" && contains("number");
    let string_or_slice = matches!(data, Value::String(_) | Value::Array(_));
    if !(string_or_slice
        || format.is_empty()
        || contains(sch_type)
        || sch_format == format
        || is_float_int
        || is_int_float)
    {
        push(&mut res, invalid_type(path, format, sch_format));
        return res;
    }
    if string_or_slice && !(contains("number") || contains("integer") || format.is_empty()) {
        return res;
    }
    if !(contains(sch_type) || is_float_int || is_int_float) {
        push(&mut res, invalid_type(path, &types.join(","), sch_type));
    }
    res
}

fn check_compositions(s: &Props, patterns: &Patterns, data: &Value, path: &str) -> Res {
    let mut main = Res::default();
    let quoted = go_quote(path);
    if !s.any_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        for alt in &s.any_of {
            let r = validate_node(alt, patterns, data, path);
            if r.is_valid() {
                best = None;
                first_success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if first_success.is_none() {
            main.errors.push(OaError::Plain(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
        }
        if let Some(r) = best.or(first_success) {
            main.merge(r);
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        let mut validated = 0;
        for alt in &s.one_of {
            let r = validate_node(alt, patterns, data, path);
            if r.is_valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let extra = if validated == 0 {
                "Found none valid".to_owned()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.errors.push(OaError::Plain(format!(
                "{quoted} must validate one and only one schema (oneOf). {extra}"
            )));
            if let Some(r) = best {
                main.merge(r);
            }
        } else if let Some(r) = first_success {
            main.merge(r);
        }
    }
    if !s.all_of.is_empty() {
        let mut validated = 0;
        for alt in &s.all_of {
            let r = validate_node(alt, patterns, data, path);
            if r.is_valid() {
                validated += 1;
            }
            main.merge(r);
        }
        if validated != s.all_of.len() {
            let extra = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            main.errors.push(OaError::Plain(format!(
                "{quoted} must validate all the schemas (allOf){extra}"
            )));
        }
    }
    if let Some(not) = &s.not {
        if validate_node(not, patterns, data, path).is_valid() {
            main.errors.push(OaError::Plain(format!(
                "{quoted} must not validate the schema (not)"
            )));
        }
    }
    main.matches += 1;
    main
}

fn check_string(s: &Props, patterns: &Patterns, text: &str, path: &str) -> Res {
    let mut res = Res::default();
    let len = text.chars().count() as i64;
    if let Some(max) = s.max_length {
        if len > max {
            res.errors.push(OaError::Validation {
                code: Code::TooLong,
                name: path.to_owned(),
                value: Some(text.into()),
                valid: Some(max.into()),
                message: format!("{path} in {IN} should be at most {max} chars long"),
            });
            return res;
        }
    }
    if let Some(min) = s.min_length {
        if len < min {
            let message = format!("{path} in {IN} should be at least {min} chars long");
            res.add(Code::Other, path, Some(text.into()), message);
            return res;
        }
    }
    if !s.pattern.is_empty() {
        let shown = match patterns.get(&s.pattern) {
            Some(Ok(re)) if re.is_match(text) => return res,
            Some(Ok(_)) => s.pattern.clone(),
            Some(Err(e)) => format!("{}, but pattern is invalid: {e}", s.pattern),
            None => match Regex::new(&s.pattern) {
                Ok(re) if re.is_match(text) => return res,
                Ok(_) => s.pattern.clone(),
                Err(e) => format!("{}, but pattern is invalid: {e}", s.pattern),
            },
        };
        let message = format!("{path} in {IN} should match '{shown}'");
        res.add(Code::Other, path, Some(text.into()), message);
    }
    res
}

fn check_format(format: &str, text: &str, path: &str) -> Res {
    let mut res = Res::default();
    if !formats::validates(format, text) {
        let (code, name, value, message) = invalid_type(path, format, text);
        res.add(code, &name, value, message);
    }
    res
}

/// Whether a number fits the type/format the way kube-openapi's range
/// check (`IsValueValidAgainstRange`) decides.
fn fits_range(n: f64, is_int_value: bool, ty: &str, format: &str) -> bool {
    match ty {
        "integer" => {
            if !is_int_value && n.fract() != 0.0 {
                return false;
            }
            match format {
                "int32" => n >= i32::MIN as f64 && n <= i32::MAX as f64,
                _ => n >= i64::MIN as f64 && n <= i64::MAX as f64,
            }
        }
        _ => match format {
            "float" => n.is_finite() && n.abs() <= f32::MAX as f64,
            _ => true,
        },
    }
}

fn range_message(prefix: &str, ty: &str, format: &str, path: &str) -> String {
    if format.is_empty() {
        format!("{prefix} value must be of type {ty} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {ty} with format {format} in {path}")
    }
}

fn check_number(s: &Props, types: &[&str], format: &str, data: &Value, path: &str) -> Res {
    let mut res = Res::default();
    let (ty, fmt) = match types {
        ["integer"] => (
            "integer",
            if matches!(format, "int32" | "int64") {
                format
            } else {
                ""
            },
        ),
        ["number"] => (
            "number",
            if matches!(format, "float" | "double") {
                format
            } else {
                ""
            },
        ),
        _ => ("", ""),
    };
    let int_value = data.as_i64();
    let value = data.as_f64().unwrap_or(0.0);
    if !fits_range(value, int_value.is_some(), ty, fmt) {
        res.errors
            .push(OaError::Plain(range_message("Checked", ty, fmt, path)));
    }
    let bound_native = |b: f64| fits_range(b, b.fract() == 0.0, ty, fmt);
    let mut extra = Vec::new();
    if let Some(factor) = s.multiple_of {
        extra.extend(multiple_of(
            path,
            data,
            int_value,
            factor,
            bound_native(factor),
        ));
    }
    if let Some(min) = s.minimum {
        extra.extend(bound(
            path,
            data,
            int_value,
            min,
            s.exclusive_minimum,
            false,
            bound_native(min),
        ));
    }
    if let Some(max) = s.maximum {
        extra.extend(bound(
            path,
            data,
            int_value,
            max,
            s.exclusive_maximum,
            true,
            bound_native(max),
        ));
    }
    res.errors.extend(extra);
    res.matches += 1;
    res
}

fn multiple_of(
    path: &str,
    data: &Value,
    int_value: Option<i64>,
    factor: f64,
    native: bool,
) -> Option<OaError> {
    if factor <= 0.0 {
        return Some(OaError::Validation {
            code: Code::Other,
            name: path.to_owned(),
            value: Some(Value::from(factor)),
            valid: None,
            message: format!(
                "factor MultipleOf declared for {path} must be positive: {}",
                go_float(factor)
            ),
        });
    }
    let (ok, shown) = match (int_value, native) {
        (Some(v), true) => {
            let f = factor as i64;
            (f != 0 && v % f == 0, f.to_string())
        }
        _ => {
            let v = data.as_f64().unwrap_or(0.0);
            let mult = if factor < 1.0 {
                1.0 / factor * v
            } else {
                v / factor
            };
            (mult.fract() == 0.0 && mult.is_finite(), go_float(factor))
        }
    };
    (!ok).then(|| OaError::Validation {
        code: Code::Other,
        name: path.to_owned(),
        value: Some(data.clone()),
        valid: None,
        message: format!("{path} in {IN} should be a multiple of {shown}"),
    })
}

fn bound(
    path: &str,
    data: &Value,
    int_value: Option<i64>,
    limit: f64,
    exclusive: bool,
    is_max: bool,
    native: bool,
) -> Option<OaError> {
    let (fails, shown) = match (int_value, native) {
        (Some(v), true) => {
            let l = limit as i64;
            let fails = match (is_max, exclusive) {
                (true, false) => v > l,
                (true, true) => v >= l,
                (false, false) => v < l,
                (false, true) => v <= l,
            };
            (fails, l.to_string())
        }
        _ => {
            let v = data.as_f64().unwrap_or(0.0);
            let fails = match (is_max, exclusive) {
                (true, false) => v > limit,
                (true, true) => v >= limit,
                (false, false) => v < limit,
                (false, true) => v <= limit,
            };
            (fails, go_float(limit))
        }
    };
    let relation = match (is_max, exclusive) {
        (true, false) => "less than or equal to",
        (true, true) => "less than",
        (false, false) => "greater than or equal to",
        (false, true) => "greater than",
    };
    fails.then(|| OaError::Validation {
        code: Code::Other,
        name: path.to_owned(),
        value: Some(data.clone()),
        valid: None,
        message: format!("{path} in {IN} should be {relation} {shown}"),
    })
}

fn check_slice(s: &Props, patterns: &Patterns, items: &[Value], path: &str) -> Res {
    let mut res = Res::default();
    match &s.items {
        Some(Items::Schema(item)) => {
            for (i, v) in items.iter().enumerate() {
                res.merge(validate_node(item, patterns, v, &format!("{path}[{i}]")));
            }
        }
        Some(Items::Array(tuple)) => {
            for (i, (schema, v)) in tuple.iter().zip(items).enumerate() {
                res.merge(validate_node(schema, patterns, v, &format!("{path}[{i}]")));
            }
        }
        None => {}
    }
    let size = items.len() as i64;
    if let Some(min) = s.min_items {
        if size < min {
            let message = format!("{path} in {IN} should have at least {min} items");
            res.add(Code::Other, path, Some(size.into()), message);
        }
    }
    if let Some(max) = s.max_items {
        if size > max {
            res.errors.push(OaError::Validation {
                code: Code::MaxItems,
                name: path.to_owned(),
                value: Some(size.into()),
                valid: Some(max.into()),
                message: format!("{path} in {IN} should have at most {max} items"),
            });
        }
    }
    if s.unique_items && has_duplicates(items) {
        let message = format!("{path} in {IN} shouldn't contain duplicates");
        res.add(Code::Other, path, None, message);
    }
    res.matches += 1;
    res
}

fn has_duplicates(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].iter().any(|b| json_equal(a, b)))
}

/// JSON equality with numbers compared by value (Go converts before comparing).
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn check_enum(s: &Props, data: &Value, path: &str) -> Res {
    let mut res = Res::default();
    let Some(values) = &s.enumeration else {
        return res;
    };
    if values.is_empty() {
        return res;
    }
    let matched = !data.is_null() && values.iter().any(|e| !e.is_null() && json_equal(data, e));
    if !matched {
        let shown: Vec<String> = values.iter().map(go_any).collect();
        res.errors.push(OaError::Validation {
            code: Code::Enum,
            name: path.to_owned(),
            value: Some(data.clone()),
            valid: Some(Value::Array(values.clone())),
            message: format!("{path} in {IN} should be one of [{}]", shown.join(" ")),
        });
    }
    res
}

/// Go's `%v` of a decoded JSON value, enough for enum messages.
fn go_any(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map(go_float).unwrap_or_else(|| n.to_string()),
        Value::Null => "<nil>".to_owned(),
        other => other.to_string(),
    }
}

fn check_object(
    s: &Props,
    patterns: &Patterns,
    map: &serde_json::Map<String, Value>,
    path: &str,
) -> Res {
    let mut res = Res::default();
    let size = map.len() as i64;
    if let Some(min) = s.min_properties {
        if size < min {
            let message = format!("{path} in {IN} should have at least {min} properties");
            res.add(Code::Other, path, Some(size.into()), message);
        }
    }
    if let Some(max) = s.max_properties {
        if size > max {
            res.errors.push(OaError::Validation {
                code: Code::TooManyProperties,
                name: path.to_owned(),
                value: Some(size.into()),
                valid: Some(max.into()),
                message: format!("{path} in {IN} should have at most {max} properties"),
            });
        }
    }
    match &s.additional_properties {
        Some(ap) if !ap.allows() => {
            for key in map.keys().filter(|k| !s.properties.contains_key(*k)) {
                let message = format!("{path}.{key} in {IN} is a forbidden property");
                res.add(Code::Other, path, Some(key.as_str().into()), message);
            }
        }
        Some(ap) => {
            if let Some(schema) = ap.schema() {
                for (key, value) in map.iter().filter(|(k, _)| !s.properties.contains_key(*k)) {
                    res.merge(validate_node(
                        schema,
                        patterns,
                        value,
                        &format!("{path}.{key}"),
                    ));
                }
            }
        }
        None => {}
    }
    for (name, schema) in &s.properties {
        if let Some(value) = map.get(name) {
            let child = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            res.merge(validate_node(schema, patterns, value, &child));
        }
    }
    for key in s.required.iter().filter(|k| !map.contains_key(*k)) {
        let name = format!("{path}.{key}");
        let message = format!("{name} in {IN} is required");
        res.add(Code::Required, &name, None, message);
    }
    res
}

#[cfg(test)]
mod tests;
