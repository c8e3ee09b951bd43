//! Go's `time.Parse(time.RFC3339, s)` as `metav1.Time` reads a query
//! parameter (`Time.UnmarshalQueryParameter` in
//! `k8s.io/apimachinery/pkg/apis/meta/v1/time.go`, reached through
//! `Convert_Slice_string_To_Pointer_v1_Time`): Go's lenient layout parse
//! (a one-digit hour, any fraction of a second, offsets up to 24:60) and
//! its `*time.ParseError` messages, which upstream answers as a 400.
//! Pure functions, no I/O.

use chrono::{DateTime, Duration, NaiveDate, Utc};

/// `time.RFC3339`, as Go's messages quote it.
const LAYOUT: &str = "2006-01-02T15:04:05Z07:00";

/// `metav1.Time.UnmarshalQueryParameter`: empty and `null` are the zero
/// time (`0001-01-01T00:00:00Z`); anything else parses as [`parse_rfc3339`].
pub fn parse_query_time(value: &str) -> Result<DateTime<Utc>, String> {
    if value.is_empty() || value == "null" {
        return Ok(zero_time());
    }
    parse_rfc3339(value)
}

/// Go's zero `time.Time`.
pub fn zero_time() -> DateTime<Utc> {
    NaiveDate::from_ymd_opt(1, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .unwrap_or_default()
}

/// `time.Parse(time.RFC3339, value)` as an instant, or Go's error text.
pub fn parse_rfc3339(value: &str) -> Result<DateTime<Utc>, String> {
    let mut p = Parser {
        value,
        rest: value.as_bytes(),
    };
    let year = p.element("2006", |s| match s {
        [a, b, c, d, rest @ ..] if [a, b, c, d].iter().all(|b| b.is_ascii_digit()) => {
            let n = [a, b, c, d]
                .iter()
                .fold(0i32, |n, b| n * 10 + i32::from(**b - b'0'));
            Some((n, rest))
        }
        _ => None,
    })?;
    p.literal(b'-')?;
    let month = p.element("01", |s| two_digits(s, true))?;
    p.range(!(1..=12).contains(&month), "month")?;
    p.literal(b'-')?;
    let day = p.element("02", |s| two_digits(s, true))?;
    p.literal(b'T')?;
    let hour = p.element("15", |s| two_digits(s, false))?;
    p.range(hour >= 24, "hour")?;
    p.literal(b':')?;
    let minute = p.element("04", |s| two_digits(s, true))?;
    p.range(minute >= 60, "minute")?;
    p.literal(b':')?;
    let second = p.element("05", |s| two_digits(s, true))?;
    p.range(second >= 60, "second")?;
    let nanos = p.fraction();
    let offset = p.zone()?;
    if !p.rest.is_empty() {
        let rest = String::from_utf8_lossy(p.rest).into_owned();
        return Err(p.message(&format!(": extra text: {}", quote(&rest))));
    }
    let date =
        NaiveDate::from_ymd_opt(year, month, day).ok_or_else(|| p.message(": day out of range"))?;
    let time = date
        .and_hms_nano_opt(hour, minute, second, nanos)
        .ok_or_else(|| p.message(": second out of range"))?;
    Ok(time.and_utc() - Duration::seconds(offset))
}

/// One or two digits (`fixed`: exactly two), as Go's `getnum`.
fn two_digits(s: &[u8], fixed: bool) -> Option<(u32, &[u8])> {
    let digit = |i: usize| {
        s.get(i)
            .filter(|b| b.is_ascii_digit())
            .map(|b| u32::from(b - b'0'))
    };
    match (digit(0), digit(1)) {
        (Some(a), Some(b)) => Some((a * 10 + b, &s[2..])),
        (Some(a), None) if !fixed => Some((a, &s[1..])),
        _ => None,
    }
}

struct Parser<'a> {
    value: &'a str,
    rest: &'a [u8],
}

impl<'a> Parser<'a> {
    /// `parsing time "<value>"` and `message`.
    fn message(&self, message: &str) -> String {
        format!("parsing time {}{message}", quote(self.value))
    }

    /// `… as "<layout>": cannot parse "<rest>" as "<element>"`.
    fn cannot_parse(&self, element: &str) -> String {
        let rest = String::from_utf8_lossy(self.rest);
        self.message(&format!(
            " as {}: cannot parse {} as {}",
            quote(LAYOUT),
            quote(&rest),
            quote(element)
        ))
    }

    fn element<T>(
        &mut self,
        name: &str,
        read: impl FnOnce(&'a [u8]) -> Option<(T, &'a [u8])>,
    ) -> Result<T, String> {
        let (v, rest) = read(self.rest).ok_or_else(|| self.cannot_parse(name))?;
        self.rest = rest;
        Ok(v)
    }

    fn literal(&mut self, b: u8) -> Result<(), String> {
        match self.rest.split_first() {
            Some((first, rest)) if *first == b => {
                self.rest = rest;
                Ok(())
            }
            _ => Err(self.cannot_parse(&char::from(b).to_string())),
        }
    }

    fn range(&self, out: bool, what: &str) -> Result<(), String> {
        if out {
            return Err(self.message(&format!(": {what} out of range")));
        }
        Ok(())
    }

    /// A fraction of a second the layout does not name: `.` or `,` and
    /// digits, of which the first nine count.
    fn fraction(&mut self) -> u32 {
        let digits = match self.rest {
            [b'.' | b',', d, ..] if d.is_ascii_digit() => &self.rest[1..],
            _ => return 0,
        };
        let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        let nanos = (0..9).fold(0u32, |acc, i| {
            acc * 10
                + digits
                    .get(i)
                    .filter(|_| i < n)
                    .map_or(0, |b| u32::from(b - b'0'))
        });
        self.rest = &digits[n..];
        nanos
    }

    /// `Z`, or `±hh:mm` (hours up to 24, minutes up to 60), in seconds
    /// east of UTC.
    fn zone(&mut self) -> Result<i64, String> {
        if let Some(rest) = self.rest.strip_prefix(b"Z") {
            self.rest = rest;
            return Ok(0);
        }
        let hold = self.rest;
        let [sign, h1, h2, b':', m1, m2, rest @ ..] = hold else {
            return Err(self.cannot_parse("Z07:00"));
        };
        self.rest = rest;
        let hours = two_digits(&[*h1, *h2], true).map(|(h, _)| i64::from(h));
        self.range(hours.is_some_and(|h| h > 24), "time zone offset hour")?;
        let minutes = two_digits(&[*m1, *m2], true).map(|(m, _)| i64::from(m));
        self.range(minutes.is_some_and(|m| m > 60), "time zone offset minute")?;
        self.rest = hold;
        let (Some(hours), Some(minutes)) = (hours, minutes) else {
            return Err(self.cannot_parse("Z07:00"));
        };
        let seconds = (hours * 60 + minutes) * 60;
        let seconds = match sign {
            b'+' => seconds,
            b'-' => -seconds,
            _ => return Err(self.cannot_parse("Z07:00")),
        };
        self.rest = rest;
        Ok(seconds)
    }
}

/// The `time` package's quoting: `"`, `\` escaped, bytes of control and
/// non-ASCII characters as `\x..`.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='\u{7e}' => out.push(c),
            _ => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> String {
        parse_rfc3339(s)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
            .unwrap_or_else(|e| e)
    }

    #[test]
    fn accepts_what_go_accepts() {
        assert_eq!(utc("2026-01-02T03:04:05Z"), "2026-01-02T03:04:05Z");
        assert_eq!(utc("2026-01-02T03:04:05+01:00"), "2026-01-02T02:04:05Z");
        assert_eq!(utc("2026-01-02T3:04:05-00:30"), "2026-01-02T03:34:05Z");
        assert_eq!(
            utc("2026-01-02T03:04:05.1234567891Z"),
            "2026-01-02T03:04:05.123456789Z"
        );
        assert_eq!(utc("2026-01-02T03:04:05,5Z"), "2026-01-02T03:04:05.500Z");
        assert_eq!(utc("2026-01-02T00:00:00+24:60"), "2025-12-31T23:00:00Z");
        assert_eq!(parse_query_time("").unwrap(), zero_time());
        assert_eq!(parse_query_time("null").unwrap(), zero_time());
    }

    #[test]
    fn refuses_with_gos_messages() {
        let cases = [
            (
                "bogus",
                r#"parsing time "bogus" as "2006-01-02T15:04:05Z07:00": cannot parse "bogus" as "2006""#,
            ),
            (
                "2026/01/02",
                r#"parsing time "2026/01/02" as "2006-01-02T15:04:05Z07:00": cannot parse "/01/02" as "-""#,
            ),
            (
                "2026-1-02T00:00:00Z",
                r#"parsing time "2026-1-02T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-02T00:00:00Z" as "01""#,
            ),
            (
                "2026-13-02T00:00:00Z",
                r#"parsing time "2026-13-02T00:00:00Z": month out of range"#,
            ),
            (
                "2026-02-30T00:00:00Z",
                r#"parsing time "2026-02-30T00:00:00Z": day out of range"#,
            ),
            (
                "2026-01-02 00:00:00Z",
                r#"parsing time "2026-01-02 00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 00:00:00Z" as "T""#,
            ),
            (
                "2026-01-02T24:00:00Z",
                r#"parsing time "2026-01-02T24:00:00Z": hour out of range"#,
            ),
            (
                "2026-01-02T00:60:00Z",
                r#"parsing time "2026-01-02T00:60:00Z": minute out of range"#,
            ),
            (
                "2026-01-02T00:00:60Z",
                r#"parsing time "2026-01-02T00:00:60Z": second out of range"#,
            ),
            (
                "2026-01-02T00:00:00",
                r#"parsing time "2026-01-02T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#,
            ),
            (
                "2026-01-02T00:00:00*01:00",
                r#"parsing time "2026-01-02T00:00:00*01:00" as "2006-01-02T15:04:05Z07:00": cannot parse "*01:00" as "Z07:00""#,
            ),
            (
                "2026-01-02T00:00:00+25:00",
                r#"parsing time "2026-01-02T00:00:00+25:00": time zone offset hour out of range"#,
            ),
            (
                "2026-01-02T00:00:00Zé",
                r#"parsing time "2026-01-02T00:00:00Z\xc3\xa9": extra text: "\xc3\xa9""#,
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_rfc3339(input).unwrap_err(), want, "{input}");
        }
    }
}
