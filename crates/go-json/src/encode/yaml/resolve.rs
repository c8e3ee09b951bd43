//! Which strings go-yaml v2 quotes and how it writes floats
//! (`go.yaml.in/yaml/v2`, the YAML library of `sigs.k8s.io/yaml`):
//! `encoder.stringv` writes a string plain only when reading it back
//! unquoted gives the same string (`resolve` finds no bool, null, int,
//! float or timestamp, and `isBase60Float` does not match); `floatv` writes
//! `strconv.FormatFloat(f, 'g', -1, 64)`.

/// Whether go-yaml's `resolve("", s)` reads `s` as a string and
/// `isBase60Float(s)` is false: only then may `s` be written unquoted.
pub fn plain_is_string(s: &str) -> bool {
    resolves_to_string(s) && !is_base60_float(s)
}

/// go-yaml's `resolve` with no tag: the first byte hints at what the
/// scalar may be; only those hints are tried.
fn resolves_to_string(s: &str) -> bool {
    let Some(&first) = s.as_bytes().first() else {
        return false; // "" is null
    };
    if in_resolve_map(s) {
        return false;
    }
    match first {
        b'.' => !go_parse_float(s),
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(s) {
                return false;
            }
            let plain: String = s.chars().filter(|c| *c != '_').collect();
            !(go_parse_int(&plain) || (is_yaml_style_float(&plain) && go_parse_float(&plain)))
        }
        _ => true,
    }
}

/// The words go-yaml resolves by table: YAML 1.1 booleans, nulls, the
/// special floats and the merge key.
fn in_resolve_map(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "true"
            | "True"
            | "TRUE"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "false"
            | "False"
            | "FALSE"
            | "off"
            | "Off"
            | "OFF"
            | "~"
            | "null"
            | "Null"
            | "NULL"
            | ".nan"
            | ".NaN"
            | ".NAN"
            | ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "+.Inf"
            | "+.INF"
            | "-.inf"
            | "-.Inf"
            | "-.INF"
            | "<<"
    )
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeds: an
/// optional sign, a `0x`/`0o`/`0b` prefix or a leading `0` (octal), digits
/// of that base, and a value within 64 bits.
fn go_parse_int(s: &str) -> bool {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    match u64::from_str_radix(digits, radix) {
        Ok(v) if negative => v <= 1 << 63,
        Ok(_) => true,
        Err(_) => false,
    }
}

/// go-yaml's `yamlStyleFloat`:
/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
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

/// `strconv.ParseFloat(s, 64)` succeeds on the decimal forms go-yaml
/// passes it (a leading `.` or the YAML float syntax): the value must
/// not overflow to infinity.
fn go_parse_float(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if lower.len() - unsigned.len() > 1 {
        return false;
    }
    if matches!(unsigned, "inf" | "infinity" | "nan") {
        return true;
    }
    is_yaml_style_float(&lower) && lower.parse::<f64>().is_ok_and(f64::is_finite)
}

/// go-yaml's `isBase60Float`:
/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        while i - start < 2 && b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let group = &b[start..i];
        let valid = match group {
            [d] => d.is_ascii_digit(),
            [t, _] => *t <= b'5',
            _ => false,
        };
        if !valid {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    i == b.len()
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

/// `strconv.FormatFloat(f, 'g', -1, 64)` as go-yaml's `floatv` writes it:
/// the shortest digits, in `%e` form (a signed exponent of at least two
/// digits) when the exponent is below -4 or at least 6 (Go's precision
/// for that choice when the digits are the shortest); `.inf`, `-.inf`,
/// `.nan` for the special values.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}
