//! The JSON format (upstream's `k8s.io/component-base/logs/json`, zap
//! behind zapr): one object per line, keys in zap's order:
//!
//! ```text
//! {"ts":1732741872834.976,"caller":"filters/httplog.rs:42","msg":"HTTP","v":0,"verb":"GET","resp":200}
//! {"ts":1732741872835.1,"caller":"app/run.rs:9","msg":"server failed","key":"x","err":"boom"}
//! ```
//!
//! `ts` is milliseconds since the epoch as a float (zap's
//! `epochMillisTimeEncoder`), `caller` the file's last directory and name
//! and line (`ShortCallerEncoder`). Info and warning entries carry their
//! V level as `v` before the key/value pairs; errors carry no `v` and put
//! the error last under `err` (zapr's `ErrorKey("err")`). Strings are
//! escaped as zap does: `\\`, `\"`, `\n`, `\r`, `\t`, other controls as
//! `\u00XX`, nothing else.

use std::fmt::Write;
use std::time::SystemTime;

use super::entry::{Entry, Severity, Value};

/// The whole line, with its newline.
pub fn format(entry: &Entry, now: SystemTime) -> String {
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let millis = nanos as f64 / 1e6;
    let mut out = format!("{{\"ts\":{millis},\"caller\":");
    write_string(&mut out, &caller(entry));
    out.push_str(",\"msg\":");
    write_string(&mut out, &entry.msg);
    let is_error = entry.severity == Severity::Error;
    if !is_error {
        let _ = write!(out, ",\"v\":{}", entry.v);
    }
    for (key, value) in &entry.values {
        write_field(&mut out, key, value);
    }
    if let Some(err) = &entry.err {
        write_field(&mut out, "err", &Value::Str(err.clone()));
    }
    out.push_str("}\n");
    out
}

fn caller(entry: &Entry) -> String {
    let Some(file) = entry.file.as_deref() else {
        return "undefined".into();
    };
    let mut parts = file.rsplitn(3, ['/', '\\']);
    let name = parts.next().unwrap_or(file);
    match parts.next() {
        Some(dir) => format!("{dir}/{name}:{}", entry.line),
        None => format!("{name}:{}", entry.line),
    }
}

fn write_field(out: &mut String, key: &str, value: &Value) {
    out.push(',');
    write_string(out, key);
    out.push(':');
    match value {
        Value::Str(s) => write_string(out, s),
        Value::Float(f) if !f.is_finite() => write_string(out, &float_name(*f)),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// zap writes non-finite floats as these strings.
fn float_name(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn entry(severity: Severity) -> Entry {
        Entry {
            severity,
            v: 0,
            file: Some("crates/kube-apiserver/src/app/run.rs".into()),
            line: 9,
            msg: "test".into(),
            err: None,
            values: vec![
                ("ns".into(), Value::Str("default".into())),
                ("podnum".into(), Value::Int(2)),
                ("time".into(), Value::Str("1µs".into())),
            ],
        }
    }

    fn epoch_plus_123ns() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_nanos(123)
    }

    #[test]
    fn info_has_v_before_the_values() {
        // As upstream's TestZapLoggerV for V(3).
        let mut e = entry(Severity::Info);
        e.v = 3;
        assert_eq!(
            format(&e, epoch_plus_123ns()),
            "{\"ts\":0.000123,\"caller\":\"app/run.rs:9\",\"msg\":\"test\",\"v\":3,\
             \"ns\":\"default\",\"podnum\":2,\"time\":\"1µs\"}\n"
        );
    }

    #[test]
    fn errors_have_no_v_and_err_last() {
        // As upstream's TestZapLoggerError.
        let mut e = entry(Severity::Error);
        e.msg = "wrong namespace".into();
        e.err = Some("invalid namespace:default".into());
        assert_eq!(
            format(&e, epoch_plus_123ns()),
            "{\"ts\":0.000123,\"caller\":\"app/run.rs:9\",\"msg\":\"wrong namespace\",\
             \"ns\":\"default\",\"podnum\":2,\"time\":\"1µs\",\"err\":\"invalid namespace:default\"}\n"
        );
    }

    #[test]
    fn strings_are_escaped_as_zap() {
        let mut e = entry(Severity::Warning);
        e.values = vec![("s".into(), Value::Str("a\"b\\c\nd\u{8}<>&\u{2028}".into()))];
        let line = format(&e, epoch_plus_123ns());
        assert!(
            line.ends_with(",\"v\":0,\"s\":\"a\\\"b\\\\c\\nd\\u0008<>&\u{2028}\"}\n"),
            "{line}"
        );
    }

    #[test]
    fn ts_is_epoch_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_732_741_872_834);
        let line = format(&entry(Severity::Info), now);
        // Go's float64(nanos)/1e6, which need not be a whole number.
        let ts: f64 = line["{\"ts\":".len()..line.find(',').unwrap()]
            .parse()
            .unwrap();
        assert!((ts - 1_732_741_872_834.0).abs() < 0.001, "{line}");
    }
}
