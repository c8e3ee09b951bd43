//! Numeric checks of kube-openapi: the range of the declared type and
//! format, `multipleOf`, `minimum` and `maximum` (compared natively for
//! integers when the bound fits, as floats otherwise).

use serde_json::Value;

use super::props::Props;
use super::result::{Code, OaError, Res};
use super::IN;
use apimachinery::util::gofmt::go_float;

/// go-openapi's `IsFloat64AJSONInteger`: integral within a relative error
/// of 1e-9.
fn is_json_integer(f: f64) -> bool {
    const EPSILON: f64 = 1e-9;
    const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX_JSON_FLOAT..=MAX_JSON_FLOAT).contains(&f) {
        return false;
    }
    // Go converts through uint64, which saturates negatives to 0 here.
    let g = if f < 0.0 { 0.0 } else { f.trunc() };
    if f == g || f == f.trunc() {
        return true;
    }
    let diff = (f - g).abs();
    if g == 0.0 || diff < f64::MIN_POSITIVE {
        return diff < EPSILON * f64::MIN_POSITIVE;
    }
    diff / (f.abs() + g.abs()).min(f64::MAX) < EPSILON
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

pub(super) fn check_number(
    s: &Props,
    types: &[&str],
    format: &str,
    data: &Value,
    path: &str,
) -> Res {
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
            (is_json_integer(mult), go_float(factor))
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
