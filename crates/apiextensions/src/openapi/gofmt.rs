//! Go's formatting of strings (`%q`) and floats (`%v`), which upstream's
//! validation messages embed.

use std::fmt::Write as _;

/// A string quoted like Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A float as Go's `%v` prints it: the shortest digits, in exponent form
/// when the exponent is below -4 or at least 6 (`1e+06`, `2.5e-05`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if f == 0.0 {
        return "0".to_owned();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_go_v() {
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(10.5), "10.5");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(-1.5e-5), "-1.5e-05");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(123456789.0), "1.23456789e+08");
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
    }
}
