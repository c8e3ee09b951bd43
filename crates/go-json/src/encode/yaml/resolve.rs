//! Which strings go-yaml v2 quotes and how it writes floats
//! (`go.yaml.in/yaml/v2`, the YAML library of `sigs.k8s.io/yaml`):
//! `encoder.stringv` writes a string plain only when reading it back
//! unquoted gives the same string (`resolve` finds no bool, null, int,
//! float or timestamp, and `isBase60Float` does not match); `floatv` writes
//! `strconv.FormatFloat(f, 'g', -1, 64)`.

/// Whether go-yaml's `resolve("", s)` reads `s` as a string and
/// `isBase60Float(s)` is false: only then may `s` be written unquoted.
pub fn plain_is_string(s: &str) -> bool {
    apimachinery::serializer::yaml::resolve::resolves_to_string(s) && !is_base60_float(s)
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
