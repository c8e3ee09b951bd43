//! The time tags (0: RFC 3339 text, 1: seconds since the epoch) decode to
//! RFC 3339 strings with nanoseconds, trailing zeros dropped, as upstream
//! formats them (Go's `time.RFC3339Nano`).

use chrono::{DateTime, Datelike, FixedOffset, Timelike, Utc};

use crate::CborError;

/// Tag 0: the text must be an RFC 3339 time; it is normalised.
pub(crate) fn from_rfc3339(text: &str) -> Result<String, CborError> {
    let time = DateTime::parse_from_rfc3339(text).map_err(|e| CborError::InvalidTime {
        tag: 0,
        message: format!("parsing time {text:?}: {e}"),
    })?;
    format(time, 0)
}

/// Tag 1: seconds (possibly fractional, possibly negative) since the epoch.
pub(crate) fn from_epoch(seconds: f64) -> Result<String, CborError> {
    let whole = seconds.floor();
    let invalid = || CborError::InvalidTime {
        tag: 1,
        message: format!("{seconds} seconds since the epoch is out of range"),
    };
    if !(i64::MIN as f64..=i64::MAX as f64).contains(&whole) {
        return Err(invalid());
    }
    let nanos = ((seconds - whole) * 1e9).round().clamp(0.0, 999_999_999.0) as u32;
    let time = DateTime::<Utc>::from_timestamp(whole as i64, nanos).ok_or_else(invalid)?;
    format(time.fixed_offset(), 1)
}

fn format(time: DateTime<FixedOffset>, tag: u64) -> Result<String, CborError> {
    if !(0..=9999).contains(&time.year()) {
        return Err(CborError::InvalidTime {
            tag,
            message: format!("year {} cannot be written in RFC 3339", time.year()),
        });
    }
    let mut out = time.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = time.nanosecond() % 1_000_000_000;
    if nanos > 0 {
        let digits = format!("{nanos:09}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    let offset = time.offset().local_minus_utc();
    if offset == 0 {
        out.push('Z');
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let minutes = offset.unsigned_abs() / 60;
        out.push_str(&format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60));
    }
    Ok(out)
}
