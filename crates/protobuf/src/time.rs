//! The JSON forms of `metav1.Time` (RFC 3339, whole seconds) and
//! `metav1.MicroTime` (RFC 3339, microseconds), always in UTC.

use chrono::{DateTime, SecondsFormat, Utc};

/// Parses an RFC 3339 timestamp into Unix seconds and nanoseconds.
pub(crate) fn parse_time(s: &str) -> Option<(i64, u32)> {
    let t = DateTime::parse_from_rfc3339(s).ok()?;
    Some((t.timestamp(), t.timestamp_subsec_nanos()))
}

/// Formats a protobuf timestamp; `micros` selects the MicroTime form.
/// Time drops the nanoseconds (as upstream does when it reads them back).
pub(crate) fn format_time(seconds: i64, nanos: i32, micros: bool) -> Option<String> {
    if micros {
        let nanos = u32::try_from(nanos).ok().filter(|n| *n < 1_000_000_000)?;
        let t = DateTime::<Utc>::from_timestamp(seconds, nanos - nanos % 1000)?;
        Some(t.to_rfc3339_opts(SecondsFormat::Micros, true))
    } else {
        let t = DateTime::<Utc>::from_timestamp(seconds, 0)?;
        Some(t.to_rfc3339_opts(SecondsFormat::Secs, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_both_precisions() {
        assert_eq!(
            format_time(1_700_000_000, 123_456_789, false).as_deref(),
            Some("2023-11-14T22:13:20Z")
        );
        assert_eq!(
            format_time(1_700_000_000, 123_456_789, true).as_deref(),
            Some("2023-11-14T22:13:20.123456Z")
        );
        assert_eq!(
            format_time(0, 0, true).as_deref(),
            Some("1970-01-01T00:00:00.000000Z")
        );
        assert_eq!(format_time(0, -1, true), None);
    }

    #[test]
    fn parses_offsets_and_fractions() {
        assert_eq!(
            parse_time("2023-11-14T23:13:20+01:00"),
            Some((1_700_000_000, 0))
        );
        assert_eq!(
            parse_time("2023-11-14T22:13:20.5Z"),
            Some((1_700_000_000, 500_000_000))
        );
        assert_eq!(parse_time("yesterday"), None);
    }
}
