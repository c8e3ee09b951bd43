//! Scalar resolution as go-yaml v2's `resolve.go` (YAML 1.1): `y`, `yes`,
//! `on`, `true` (and their capitalized forms) are booleans, `~`, `null`
//! and the empty scalar are null, integers are read as Go's
//! `strconv.ParseInt(s, 0, 64)` reads them after dropping `_` (so `0x1F`,
//! `0o17`, `017` and `0b101` are numbers), then as unsigned, then as
//! floats when they look like YAML floats; timestamps stay strings (go-yaml
//! v2 keeps them as strings when decoding into `interface{}`). An explicit
//! tag that the text does not fit fails as go-yaml fails it.

/// A resolved scalar, as go-yaml v2 hands it to `interface{}`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

const LONG_PREFIX: &str = "tag:yaml.org,2002:";

/// go-yaml's `resolvableTag`: the tags resolution applies to.
fn resolvable(tag: &str) -> bool {
    matches!(
        tag.strip_prefix(LONG_PREFIX),
        Some("str" | "bool" | "int" | "float" | "null" | "timestamp")
    )
}

/// `!!int` for `tag:yaml.org,2002:int`, as go-yaml's `shortTag`.
fn short(tag: &str) -> String {
    match tag.strip_prefix(LONG_PREFIX) {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_string(),
    }
}

/// Resolves a scalar node's text (go-yaml's `decoder.scalar` into an
/// `interface{}`): quoted untagged text is a string, plain text is
/// resolved, tagged text is resolved and checked against its tag.
pub(super) fn scalar(tag: Option<&str>, value: &str, implicit: bool) -> Result<Scalar, String> {
    let tag = tag.unwrap_or("");
    if tag.is_empty() && !implicit {
        return Ok(Scalar::Str(value.to_string()));
    }
    if !tag.is_empty() && !resolvable(tag) {
        return Ok(Scalar::Str(value.to_string()));
    }
    let (rtag, out) = implicit_type(tag, value);
    let wanted = tag.strip_prefix(LONG_PREFIX).unwrap_or(tag);
    match (wanted, rtag, out) {
        ("" | "str" | "binary", _, out) => Ok(out),
        (wanted, rtag, out) if wanted == rtag => Ok(out),
        ("float", "int", Scalar::Int(i)) => Ok(Scalar::Float(i as f64)),
        (_, rtag, _) => Err(format!(
            "yaml: cannot decode !!{rtag} `{value}` as a {}",
            short(tag)
        )),
    }
}

/// Whether go-yaml's `resolve("", s)` reads plain `s` as a string (what
/// its encoder asks before writing a string unquoted).
pub fn resolves_to_string(s: &str) -> bool {
    implicit_type("", s).0 == "str"
}

/// go-yaml's `resolve` for a resolvable or empty tag: the short name of the
/// type found and the value.
fn implicit_type(tag: &str, s: &str) -> (&'static str, Scalar) {
    let str_tag = tag == format!("{LONG_PREFIX}str");
    let hint = match s.as_bytes().first() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => 0,
    };
    if hint == 0 || str_tag {
        return ("str", Scalar::Str(s.to_string()));
    }
    if let Some(known) = table(s) {
        return known;
    }
    match hint {
        b'.' => {
            if let Some(f) = go_parse_float(s) {
                return ("float", Scalar::Float(f));
            }
        }
        b'D' | b'S' => {
            let timestamp = tag.is_empty() || tag == format!("{LONG_PREFIX}timestamp");
            if timestamp && is_timestamp(s) {
                return ("timestamp", Scalar::Str(s.to_string()));
            }
            let plain = s.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return ("int", Scalar::Int(i));
            }
            if let Some(u) = go_parse_uint(&plain) {
                return ("int", Scalar::Uint(u));
            }
            if yaml_style_float(&plain) {
                if let Some(f) = go_parse_float(&plain) {
                    return ("float", Scalar::Float(f));
                }
            }
        }
        _ => {}
    }
    ("str", Scalar::Str(s.to_string()))
}

/// go-yaml's `resolveMap`.
fn table(s: &str) -> Option<(&'static str, Scalar)> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            ("bool", Scalar::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            ("bool", Scalar::Bool(false))
        }
        "" | "~" | "null" | "Null" | "NULL" => ("null", Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => ("float", Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            ("float", Scalar::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => ("float", Scalar::Float(f64::NEG_INFINITY)),
        _ => return None,
    })
}

/// go-yaml's `yamlStyleFloat`:
/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` for decimal text: out of range is an
/// error, as are Rust's `inf` and `nan` spellings (never reached here).
fn go_parse_float(s: &str) -> Option<f64> {
    if s.bytes()
        .any(|c| c.is_ascii_alphabetic() && !matches!(c, b'e' | b'E'))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// The sign, base and digits of a Go integer literal (`strconv`'s base 0).
fn go_int_parts(s: &str) -> Option<(bool, u32, &str)> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = rest.get(..2).map(str::to_ascii_lowercase);
    let (base, digits) = match lower.as_deref() {
        Some("0x") => (16, &rest[2..]),
        Some("0o") => (8, &rest[2..]),
        Some("0b") => (2, &rest[2..]),
        _ if rest.len() > 1 && rest.starts_with('0') => (8, &rest[1..]),
        _ => (10, rest),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(base)) {
        return None;
    }
    Some((negative, base, digits))
}

/// `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, base, digits) = go_int_parts(s)?;
    let magnitude = u64::from_str_radix(digits, base).ok()?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `strconv.ParseUint(s, 0, 64)`: no sign allowed.
fn go_parse_uint(s: &str) -> Option<u64> {
    if s.starts_with(['+', '-']) {
        return None;
    }
    let (_, base, digits) = go_int_parts(s)?;
    u64::from_str_radix(digits, base).ok()
}

/// go-yaml's `parseTimestamp`: `time.Parse` with one of
/// `2006-1-2T15:4:5.999999999Z07:00` (`T` or `t`),
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`, after checking the text
/// starts with four digits and a `-`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut p = Parser { b, i: 5 };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let Some(month) = p.num().filter(|m| (1..=12).contains(m)) else {
        return false;
    };
    if !p.eat(b'-') {
        return false;
    }
    let Some(day) = p.num() else {
        return false;
    };
    if day < 1 || day > days_in(month, year) {
        return false;
    }
    if p.done() {
        return true;
    }
    let zoned = match b[p.i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    p.i += 1;
    if !p.clock() {
        return false;
    }
    if zoned && !p.zone() {
        return false;
    }
    p.done()
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A cursor over a timestamp, reading numbers as Go's `getnum` (one or
/// two digits).
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn done(&self) -> bool {
        self.i == self.b.len()
    }

    fn eat(&mut self, c: u8) -> bool {
        let ok = self.b.get(self.i) == Some(&c);
        self.i += usize::from(ok);
        ok
    }

    fn digit(&self, at: usize) -> Option<u32> {
        self.b
            .get(at)
            .filter(|c| c.is_ascii_digit())
            .map(|c| u32::from(c - b'0'))
    }

    fn num(&mut self) -> Option<u32> {
        let first = self.digit(self.i)?;
        self.i += 1;
        match self.digit(self.i) {
            Some(second) => {
                self.i += 1;
                Some(first * 10 + second)
            }
            None => Some(first),
        }
    }

    /// `15:4:5` and an optional fraction of up to nine digits.
    fn clock(&mut self) -> bool {
        let hour = self.num().filter(|h| *h < 24);
        let ok = hour.is_some()
            && self.eat(b':')
            && self.num().is_some_and(|m| m < 60)
            && self.eat(b':')
            && self.num().is_some_and(|s| s < 60);
        if ok && matches!(self.b.get(self.i), Some(b'.' | b',')) && self.digit(self.i + 1).is_some()
        {
            self.i += 1;
            let start = self.i;
            while self.i - start < 9 && self.digit(self.i).is_some() {
                self.i += 1;
            }
        }
        ok
    }

    /// `Z07:00`: `Z`, or a sign, two-digit hours, `:`, two-digit minutes.
    fn zone(&mut self) -> bool {
        if self.eat(b'Z') {
            return true;
        }
        let rest = &self.b[self.i..];
        let ok = rest.len() >= 6
            && matches!(rest[0], b'+' | b'-')
            && rest[1..3].iter().all(u8::is_ascii_digit)
            && rest[3] == b':'
            && rest[4..6].iter().all(u8::is_ascii_digit);
        self.i += if ok { 6 } else { 0 };
        ok
    }
}
