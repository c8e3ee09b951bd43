//! Go's formatting of strings (`%q`, `strconv.Quote`) and floats (`%v`),
//! which upstream's messages embed; Go's standard library (`strconv`,
//! `fmt`) is the counterpart.

use std::fmt::Write as _;

/// Appends `s` quoted like Go's `strconv.Quote` (`%q`).
pub fn push_go_quoted(out: &mut String, s: &str) {
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
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
}

/// Approximates Go's `unicode.IsPrint`: letters, marks, numbers,
/// punctuation, symbols and the ASCII space.
pub fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    let format_or_private = matches!(u,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F
        | 0xE000..=0xF8FF | 0xFEFF | 0xFFF9..=0xFFFB | 0xFFFE | 0xFFFF
        | 0xE0001 | 0xE0020..=0xE007F | 0xF0000..=0x10FFFF);
    !format_or_private
}

/// Appends a float as Go's `%v` does: shortest digits, exponent form
/// (`1e+06`) when the decimal exponent is below -4 or at least 6.
pub fn push_go_float(out: &mut String, f: f64) {
    if !f.is_finite() {
        out.push_str(if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        });
        return;
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    if (-4..6).contains(&exp) {
        let _ = write!(out, "{f}");
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "{mantissa}e{sign}{:02}", exp.unsigned_abs());
    }
}

/// `s` quoted like Go's `strconv.Quote` (`%q`).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_go_quoted(&mut out, s);
    out
}

/// A float as Go's `%v` prints it.
pub fn go_float(f: f64) -> String {
    let mut out = String::new();
    push_go_float(&mut out, f);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_quoting_escapes_like_strconv_quote() {
        let cases = [
            ("plain", "\"plain\""),
            ("a\"b\\c", "\"a\\\"b\\\\c\""),
            ("tab\tnl\n", "\"tab\\tnl\\n\""),
            ("\u{1}\u{7f}", "\"\\x01\\x7f\""),
            ("héllo 世界", "\"héllo 世界\""),
            ("\u{a0}\u{200b}", "\"\\u00a0\\u200b\""),
            ("\u{7}\u{8}\u{b}\u{c}\r", "\"\\a\\b\\v\\f\\r\""),
        ];
        for (input, want) in cases {
            let mut out = String::new();
            push_go_quoted(&mut out, input);
            assert_eq!(out, want, "quoting {input:?}");
        }
    }

    #[test]
    fn floats_print_like_go() {
        let cases = [
            (1.5, "1.5"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1e20, "1e+20"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e21, "1e+21"),
            (1234567.0, "1.234567e+06"),
            (-2.5e-7, "-2.5e-07"),
        ];
        for (f, want) in cases {
            let mut out = String::new();
            push_go_float(&mut out, f);
            assert_eq!(out, want, "formatting {f}");
        }
    }
}
