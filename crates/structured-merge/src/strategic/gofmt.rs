//! JSON values printed as Go's `fmt` prints the decoded `interface{}`
//! values (`%v`, `%s`, type names), so that strategic merge patch errors
//! read as upstream's.

use serde_json::Value;

/// `%v` of a decoded JSON value: `map[a:1 b:[x y]]`, `<nil>`, `1e+06`.
pub fn value(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// `%v` of a list.
pub fn list(items: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, items);
    out
}

fn write_list(out: &mut String, items: &[Value]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_value(out, item);
    }
    out.push(']');
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => write_list(out, items),
        Value::Object(m) => {
            // fmt prints map keys sorted.
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_value(out, &m[k]);
            }
            out.push(']');
        }
    }
}

/// `%v` of a float64: shortest digits, exponent form below 1e-4 and from
/// 1e6 on (`strconv.FormatFloat(f, 'g', -1, 64)`).
fn float(f: f64) -> String {
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// Go's type name of a decoded JSON value (`reflect.TypeOf(v)`).
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `%s` of a decoded JSON value.
pub fn string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_owned(),
        other => format!("%!s({}={})", type_name(other), value(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prints_like_go_fmt() {
        assert_eq!(
            value(&json!({"name": "a", "ports": [80, 1.5], "x": null, "b": true})),
            "map[b:true name:a ports:[80 1.5] x:<nil>]"
        );
        assert_eq!(value(&json!(1000000.0)), "1e+06");
        assert_eq!(value(&json!(0.00001)), "1e-05");
        assert_eq!(value(&json!(123456.0)), "123456");
        assert_eq!(string(&json!("merge")), "merge");
        assert_eq!(string(&json!(1)), "%!s(int64=1)");
        assert_eq!(type_name(&json!([])), "[]interface {}");
    }
}
