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
            if timestamp && looks_like_timestamp(s) {
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

/// go-yaml's `parseTimestamp`: four digits and a dash, then one of its
/// layouts (`2006-1-2`, with `T`, `t` or a space and `15:4:5`, fractional
/// seconds and a zone after `T`/`t`).
fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some((b[i], &s[i + 1..]))),
        None => (s, None),
    };
    let mut fields = date.splitn(3, '-');
    let (Some(_), Some(month), Some(day)) = (fields.next(), fields.next(), fields.next()) else {
        return false;
    };
    let in_range = |f: &str, max: u32| {
        (1..=2).contains(&f.len())
            && f.bytes().all(|c| c.is_ascii_digit())
            && f.parse::<u32>().is_ok_and(|v| (1..=max).contains(&v))
    };
    if !in_range(month, 12) || !in_range(day, 31) {
        return false;
    }
    match time {
        None => true,
        Some((sep, clock)) => timestamp_clock(clock, sep != b' '),
    }
}

/// `15:4:5.999999999`, then with a zone (`Z` or `±07:00`) when `zoned`.
fn timestamp_clock(clock: &str, zoned: bool) -> bool {
    let (clock, zone_ok) = if zoned {
        match clock.rfind(['Z', '+', '-']) {
            Some(i) => (&clock[..i], valid_zone(&clock[i..])),
            None => (clock, false),
        }
    } else {
        (clock, true)
    };
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, f)) => (hms, Some(f)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let ranges = [23, 59, 59];
    zone_ok
        && parts.len() == 3
        && parts.iter().zip(ranges).all(|(p, max)| {
            (1..=2).contains(&p.len())
                && p.bytes().all(|c| c.is_ascii_digit())
                && p.parse::<u32>().is_ok_and(|v| v <= max)
        })
        && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()))
}

fn valid_zone(zone: &str) -> bool {
    if zone == "Z" {
        return true;
    }
    let b = zone.as_bytes();
    b.len() == 6
        && matches!(b[0], b'+' | b'-')
        && b[1..3].iter().all(u8::is_ascii_digit)
        && b[3] == b':'
        && b[4..6].iter().all(u8::is_ascii_digit)
}
