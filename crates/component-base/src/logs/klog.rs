//! klog's text format (`k8s.io/klog/v2`: `internal/buffer.FormatHeader`
//! and `internal/serialize.KVListFormat`):
//!
//! ```text
//! I1127 21:11:12.834976   18332 file.rs:123] "message" err="..." key="value" n=3
//! ```
//!
//! The header is the severity, month and day, local time to the
//! microsecond, the process id right-aligned in 7 columns (where klog
//! puts its "thread id", also the pid) and the source file's name and
//! line. The message is always quoted; string values are quoted as Go's
//! `strconv.Quote`, or, when they hold line breaks, written as klog's
//! indented `key=<` … ` >` block; numbers and booleans are bare.

use chrono::{DateTime, Datelike, Local, Timelike};

use super::entry::{Entry, Value};

/// The whole line, with its newline.
pub fn format(entry: &Entry, now: DateTime<Local>, pid: u32) -> String {
    let mut out = header(entry, now, pid);
    out.push_str(&quoted(&entry.msg));
    if let Some(err) = &entry.err {
        write_value(&mut out, "err", &Value::Str(err.clone()));
    }
    for (key, value) in &entry.values {
        write_value(&mut out, key, value);
    }
    out.push('\n');
    out
}

fn header(entry: &Entry, now: DateTime<Local>, pid: u32) -> String {
    let file = entry
        .file
        .as_deref()
        .map_or("???", |f| f.rsplit(['/', '\\']).next().unwrap_or(f));
    format!(
        "{}{:02}{:02} {:02}:{:02}:{:02}.{:06} {:>7} {}:{}] ",
        entry.severity.char(),
        now.month(),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.nanosecond() % 1_000_000_000 / 1000,
        // klog keeps the last 7 digits.
        pid % 10_000_000,
        file,
        entry.line,
    )
}

/// Go's `strconv.Quote` of `s`.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    apimachinery::util::gofmt::push_go_quoted(&mut out, s);
    out
}

/// klog's `formatKV`: a space, the key, `=` and the value.
fn write_value(out: &mut String, key: &str, value: &Value) {
    out.push(' ');
    out.push_str(key);
    match value {
        Value::Str(s) if s.contains('\n') => write_multiline(out, s),
        Value::Str(s) => {
            out.push('=');
            out.push_str(&quoted(s));
        }
        other => {
            out.push('=');
            out.push_str(&other.to_string());
        }
    }
}

/// A value with line breaks: each line indented by a tab, the end
/// marked by ` >` on a line of its own.
fn write_multiline(out: &mut String, s: &str) {
    out.push_str("=<\n");
    let mut rest = s;
    while let Some(i) = rest.find('\n') {
        out.push('\t');
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
    }
    if rest.is_empty() {
        out.push_str(" >");
    } else {
        out.push('\t');
        out.push_str(rest);
        out.push_str("\n >");
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::logs::entry::Severity;

    fn entry(values: Vec<(&str, Value)>) -> Entry {
        Entry {
            severity: Severity::Info,
            v: 0,
            file: Some("crates/apiserver/src/filters/httplog.rs".into()),
            line: 42,
            msg: "HTTP".into(),
            err: None,
            values: values.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        }
    }

    fn time() -> DateTime<Local> {
        Local
            .with_ymd_and_hms(2025, 11, 27, 21, 11, 12)
            .unwrap()
            .with_nanosecond(834_976_123)
            .unwrap()
    }

    #[test]
    fn header_is_klogs() {
        let line = format(&entry(vec![]), time(), 18332);
        assert_eq!(
            line,
            "I1127 21:11:12.834976   18332 httplog.rs:42] \"HTTP\"\n"
        );
        let mut e = entry(vec![]);
        e.severity = Severity::Warning;
        e.file = None;
        e.line = 1;
        assert!(
            format(&e, time(), 123_456_789).starts_with("W1127 21:11:12.834976 3456789 ???:1] ")
        );
    }

    #[test]
    fn values_are_quoted_as_klog() {
        let mut e = entry(vec![
            ("verb", Value::Str("LIST".into())),
            (
                "URI",
                Value::Str("/api/v1/pods?labelSelector=a%3D\"b\"".into()),
            ),
            ("latency", Value::Str("1.234µs".into())),
            ("resp", Value::Int(200)),
            ("count", Value::Uint(3)),
            ("ratio", Value::Float(0.5)),
            ("hijacked", Value::Bool(true)),
        ]);
        e.err = Some("not found: \"x\"".into());
        assert_eq!(
            format(&e, time(), 7).split_once("] ").unwrap().1,
            "\"HTTP\" err=\"not found: \\\"x\\\"\" verb=\"LIST\" \
             URI=\"/api/v1/pods?labelSelector=a%3D\\\"b\\\"\" latency=\"1.234µs\" \
             resp=200 count=3 ratio=0.5 hijacked=true\n"
        );
    }

    #[test]
    fn multiline_values_are_indented_blocks() {
        let e = entry(vec![
            ("a", Value::Str("line 1\nline 2".into())),
            ("b", Value::Str("ends\n".into())),
        ]);
        assert_eq!(
            format(&e, time(), 7).split_once("] ").unwrap().1,
            "\"HTTP\" a=<\n\tline 1\n\tline 2\n > b=<\n\tends\n >\n"
        );
    }

    #[test]
    fn the_message_is_always_quoted() {
        let mut e = entry(vec![]);
        e.msg = "two\nlines \"quoted\"".into();
        assert!(format(&e, time(), 7).ends_with("] \"two\\nlines \\\"quoted\\\"\"\n"));
    }
}
