//! OpenAPI v3 value validation with the semantics and messages of
//! kube-openapi's `validate.SchemaValidator`, which upstream runs on every
//! custom resource (and on every schema `default`), and the translation of
//! its results into field errors as apiextensions-apiserver does. With
//! what the validator reads, below the rest of the crate: the schema type
//! ([`props`], upstream's `JSONSchemaProps`), the string formats
//! ([`formats`], kube-openapi's `strfmt`); Go's value formatting, which
//! its messages use, is apimachinery's `util::gofmt`.

use std::collections::HashMap;

use apimachinery::{FieldError, Path};
use regex::Regex;
use serde_json::Value;

pub(crate) mod formats;
mod number;
pub mod props;
mod result;

use apimachinery::util::gofmt::{go_float, go_quote};
use number::check_number;
use props::{Items, Props};
use result::{to_field_error, Code, OaError, Res};

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

pub(crate) const IN: &str = "body";

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

/// Validates `data` against `schema`, reporting errors under `base` (upstream
/// validates custom resources with a nil base path, printed `<nil>`).
pub fn validate(
    schema: &Props,
    patterns: &Patterns,
    data: &Value,
    base: Option<&Path>,
) -> Vec<FieldError> {
    let walker = Walker { patterns };
    let res = walker.node(schema, data, "", None, true);
    res.errors
        .into_iter()
        .map(|e| to_field_error(e, base))
        .collect()
}

/// Validates an update with ratcheting (upstream's CRDValidationRatcheting,
/// GA): a field or list item whose value is unchanged from `old` (lists of
/// type map correlate items by key, other lists do not correlate) keeps no
/// errors, so objects stored before a schema tightened stay updatable.
pub fn validate_update(
    schema: &Props,
    patterns: &Patterns,
    data: &Value,
    old: &Value,
    base: Option<&Path>,
) -> Vec<FieldError> {
    let walker = Walker { patterns };
    let res = walker.node(schema, data, "", Some(old), true);
    res.errors
        .into_iter()
        .map(|e| to_field_error(e, base))
        .collect()
}

/// Whether `new` equals its correlated `old` value the way upstream's
/// `CorrelatedObject.CachedDeepEqual` decides (map lists ignore order).
fn unchanged(s: &Props, new: &Value, old: &Value) -> bool {
    match (new, old) {
        (Value::Object(n), Value::Object(o)) => {
            n.len() == o.len()
                && n.iter().all(|(k, v)| match (o.get(k), field_schema(s, k)) {
                    (Some(ov), Some(fs)) => unchanged(fs, v, ov),
                    (Some(ov), None) => json_equal(v, ov),
                    (None, _) => false,
                })
        }
        (Value::Array(n), Value::Array(o)) if s.x_list_type.as_deref() == Some("map") => {
            let Some(item) = s.items_schema() else {
                return json_equal(new, old);
            };
            n.len() == o.len()
                && n.iter()
                    .all(|v| map_list_match(s, v, o).is_some_and(|ov| unchanged(item, v, ov)))
        }
        _ => json_equal(new, old),
    }
}

fn field_schema<'a>(s: &'a Props, key: &str) -> Option<&'a Props> {
    s.properties.get(key).or_else(|| s.additional_schema())
}

/// The item of `old` with the same `x-kubernetes-list-map-keys` values.
fn map_list_match<'a>(s: &Props, item: &Value, old: &'a [Value]) -> Option<&'a Value> {
    let key = |v: &Value| -> Option<Vec<Option<Value>>> {
        let m = v.as_object()?;
        Some(
            s.x_list_map_keys
                .iter()
                .map(|k| m.get(k).cloned())
                .collect(),
        )
    };
    let wanted = key(item)?;
    old.iter().find(|o| {
        key(o).is_some_and(|k| {
            k.len() == wanted.len()
                && k.iter().zip(&wanted).all(|(a, b)| match (a, b) {
                    (Some(a), Some(b)) => json_equal(a, b),
                    (None, None) => true,
                    _ => false,
                })
        })
    })
}

/// The recursive validator; `old` is the correlated old value (ratcheting).
struct Walker<'a> {
    patterns: &'a Patterns,
}

impl Walker<'_> {
    /// Validates one node. `ratchet`: this node is a field, item or the
    /// root (upstream ratchets there, not in composition branches).
    fn node(&self, s: &Props, data: &Value, path: &str, old: Option<&Value>, ratchet: bool) -> Res {
        let mut res = self.node_checks(s, data, path, old);
        if ratchet && !res.is_valid() && old.is_some_and(|o| unchanged(s, data, o)) {
            res.errors.clear();
        }
        res
    }

    fn node_checks(&self, s: &Props, data: &Value, path: &str, old: Option<&Value>) -> Res {
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
        apply(self.compositions(s, data, path, old), &mut res);
        match data {
            Value::String(text) => {
                apply(check_string(s, self.patterns, text, path), &mut res);
                if !format.is_empty() && formats::is_known(format) {
                    apply(check_format(format, text, path), &mut res);
                }
            }
            Value::Number(_) => apply(check_number(s, &types, format, data, path), &mut res),
            Value::Array(items) => apply(self.slice(s, items, path, old), &mut res),
            _ => {}
        }
        apply(check_enum(s, data, path), &mut res);
        if let Value::Object(map) = data {
            apply(self.object(s, map, path, old), &mut res);
        }
        res.matches += 1;
        res
    }

    fn compositions(&self, s: &Props, data: &Value, path: &str, old: Option<&Value>) -> Res {
        let mut main = Res::default();
        let quoted = go_quote(path);
        let branch = |alt: &Props| self.node(alt, data, path, old, false);
        if !s.any_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            for alt in &s.any_of {
                let r = branch(alt);
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
            main.merge(self.one_of(s, &quoted, &branch));
        }
        if !s.all_of.is_empty() {
            let mut validated = 0;
            for alt in &s.all_of {
                let r = branch(alt);
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
            if branch(not).is_valid() {
                main.errors.push(OaError::Plain(format!(
                    "{quoted} must not validate the schema (not)"
                )));
            }
        }
        main.matches += 1;
        main
    }

    fn one_of(&self, s: &Props, quoted: &str, branch: &dyn Fn(&Props) -> Res) -> Res {
        let mut main = Res::default();
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        let mut validated = 0;
        for alt in &s.one_of {
            let r = branch(alt);
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
        main
    }

    fn slice(&self, s: &Props, items: &[Value], path: &str, old: Option<&Value>) -> Res {
        let mut res = Res::default();
        let old_items = old
            .and_then(Value::as_array)
            .filter(|_| s.x_list_type.as_deref() == Some("map"));
        match &s.items {
            Some(Items::Schema(item)) => {
                for (i, v) in items.iter().enumerate() {
                    let old_item = old_items.and_then(|o| map_list_match(s, v, o));
                    res.merge(self.node(item, v, &format!("{path}[{i}]"), old_item, true));
                }
            }
            Some(Items::Array(tuple)) => {
                for (i, (schema, v)) in tuple.iter().zip(items).enumerate() {
                    res.merge(self.node(schema, v, &format!("{path}[{i}]"), None, true));
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

    fn object(
        &self,
        s: &Props,
        map: &serde_json::Map<String, Value>,
        path: &str,
        old: Option<&Value>,
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
        // Type meta at the root is never ratcheted.
        let old_child = |key: &str| {
            if path.is_empty() && (key == "kind" || key == "apiVersion") {
                return None;
            }
            old.and_then(|o| o.get(key))
        };
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
                        let child = format!("{path}.{key}");
                        res.merge(self.node(schema, value, &child, old_child(key), true));
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
                res.merge(self.node(schema, value, &child, old_child(name), true));
            }
        }
        for key in s.required.iter().filter(|k| !map.contains_key(*k)) {
            let name = format!("{path}.{key}");
            let message = format!("{name} in {IN} is required");
            res.add(Code::Required, &name, None, message);
        }
        res
    }
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

#[cfg(test)]
mod tests;
