//! Go's `strconv.Quote`, which klog's text format applies to the message
//! and to string values (`k8s.io/klog/v2/internal/serialize`).
//!
//! Printable characters stay as they are; `\a \b \f \n \r \t \v \\ \"`
//! get their short escapes, other ASCII controls `\xNN`, and other
//! non-printable characters `\uNNNN` or `\UNNNNNNNN`. "Printable" follows
//! Go's `unicode.IsPrint` for controls, format characters, separators
//! other than the ASCII space, surrogates and private use; unassigned code
//! points (which Go also escapes) are kept, as Rust has no Unicode tables
//! for them.

use std::fmt::Write;

/// `s` quoted as Go's `strconv.Quote` does.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if is_print(c) => out.push(c),
            c if (c as u32) < 0x80 => {
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
    out
}

/// Go's `unicode.IsPrint`, as far as it can be told without tables.
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(c as u32,
        0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2 | 0x180e
        | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f
        | 0xe000..=0xf8ff | 0xfeff | 0xfff9..=0xfffb | 0x110bd | 0x110cd
        | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a
        | 0xe0001 | 0xe0020..=0xe007f | 0xf0000..=0x10ffff)
}

#[cfg(test)]
mod tests {
    use super::go_quote;

    #[test]
    fn quotes_as_go() {
        // Expected values are what Go's strconv.Quote returns.
        let cases = [
            ("", r#""""#),
            ("hello world", r#""hello world""#),
            ("say \"hi\"", r#""say \"hi\"""#),
            ("back\\slash", r#""back\\slash""#),
            ("a\nb\tc\rd", r#""a\nb\tc\rd""#),
            ("\u{7}\u{8}\u{c}\u{b}", r#""\a\b\f\v""#),
            ("esc\u{1b}[0m", r#""esc\x1b[0m""#),
            ("nul\u{0}del\u{7f}", r#""nul\x00del\x7f""#),
            ("1.5µs", r#""1.5µs""#),
            ("日本語", r#""日本語""#),
            ("nbsp\u{a0}", r#""nbsp\u00a0""#),
            ("zwsp\u{200b}bom\u{feff}", r#""zwsp\u200bbom\ufeff""#),
            ("line\u{2028}sep", r#""line\u2028sep""#),
            ("c1\u{85}", r#""c1\u0085""#),
            ("private\u{f0000}", r#""private\U000f0000""#),
            ("emoji 😀", r#""emoji 😀""#),
        ];
        for (input, want) in cases {
            assert_eq!(go_quote(input), want, "{input:?}");
        }
    }
}
