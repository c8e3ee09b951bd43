//! Go's `time.Duration` as `metav1.Duration` carries it in API and
//! configuration types (`k8s.io/apimachinery/pkg/apis/meta/v1/duration.go`,
//! parsed and printed as Go's `time.ParseDuration` and `Duration.String`).
//! Pure functions, no I/O.

use std::fmt;
use std::str::FromStr;

/// A duration string did not parse; the message is Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseDurationError(pub String);

/// A signed duration with nanosecond precision, written like Go's
/// `time.Duration` (`"1m0s"`, `"30s"`, `"1h"`, `"1.5s"`, `"-2m"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct GoDuration {
    nanos: i64,
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;

impl GoDuration {
    /// The zero duration.
    pub const ZERO: Self = Self { nanos: 0 };

    /// A duration of the given nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        Self { nanos }
    }

    /// Whether the duration is below zero.
    pub const fn is_negative(self) -> bool {
        self.nanos < 0
    }

    /// The duration as a `std::time::Duration`; negative durations become zero.
    pub fn to_std(self) -> std::time::Duration {
        u64::try_from(self.nanos)
            .map(std::time::Duration::from_nanos)
            .unwrap_or_default()
    }
}

/// Unit suffixes Go accepts, with their length in nanoseconds.
const DURATION_UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

impl FromStr for GoDuration {
    type Err = ParseDurationError;

    /// Parses Go's duration syntax: an optional sign, then one or more
    /// decimal numbers each followed by a unit; a bare `0` is allowed.
    fn from_str(input: &str) -> Result<Self, ParseDurationError> {
        let invalid = || ParseDurationError(format!("time: invalid duration {input:?}"));
        let (negative, mut rest) = match input.as_bytes().first() {
            Some(b'-') => (true, &input[1..]),
            Some(b'+') => (false, &input[1..]),
            _ => (false, input),
        };
        if rest == "0" {
            return Ok(Self::ZERO);
        }
        if rest.is_empty() {
            return Err(invalid());
        }
        let mut total: u128 = 0;
        while !rest.is_empty() {
            let number_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(|| {
                    ParseDurationError(format!("time: missing unit in duration {input:?}"))
                })?;
            let (number, after) = rest.split_at(number_len);
            let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
            if whole.is_empty() && fraction.is_empty() {
                return Err(invalid());
            }
            let unit_len = after
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(after.len());
            let (unit, next) = after.split_at(unit_len);
            let scale = DURATION_UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|(_, scale)| *scale)
                .ok_or_else(|| {
                    ParseDurationError(format!("time: unknown unit {unit:?} in duration {input:?}"))
                })?;
            let whole_value: u128 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| invalid())?
            };
            let mut value = whole_value.checked_mul(scale).ok_or_else(invalid)?;
            // Each fractional digit contributes a tenth of the previous one.
            let mut place = scale;
            for digit in fraction.bytes() {
                place /= 10;
                value += u128::from(digit - b'0') * place;
            }
            total = total.checked_add(value).ok_or_else(invalid)?;
            rest = next;
        }
        let limit = if negative {
            i64::MIN.unsigned_abs().into()
        } else {
            i64::MAX as u128
        };
        if total > limit {
            return Err(invalid());
        }
        let magnitude = i128::try_from(total).map_err(|_| invalid())?;
        let nanos = if negative { -magnitude } else { magnitude };
        i64::try_from(nanos)
            .map(Self::from_nanos)
            .map_err(|_| invalid())
    }
}

impl fmt::Display for GoDuration {
    /// Formats like Go's `Duration.String`: `"1h0m0s"`, `"1m30s"`, `"1.5s"`,
    /// `"500ms"`, `"0s"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let total = self.nanos.unsigned_abs();
        if total == 0 {
            return f.write_str("0s");
        }
        if total < NANOS_PER_SECOND as u64 {
            let (scale, unit) = match total {
                0..=999 => (1, "ns"),
                1_000..=999_999 => (1_000, "µs"),
                _ => (1_000_000, "ms"),
            };
            return write!(f, "{sign}{}{unit}", decimal(total, scale));
        }
        let hours = total / 3_600_000_000_000;
        let minutes = (total / 60_000_000_000) % 60;
        let seconds = decimal(total % 60_000_000_000, NANOS_PER_SECOND as u64);
        if hours > 0 {
            write!(f, "{sign}{hours}h{minutes}m{seconds}s")
        } else if minutes > 0 {
            write!(f, "{sign}{minutes}m{seconds}s")
        } else {
            write!(f, "{sign}{seconds}s")
        }
    }
}

/// `value / scale` as a decimal without trailing fractional zeros.
fn decimal(value: u64, scale: u64) -> String {
    let whole = value / scale;
    let fraction = value % scale;
    if fraction == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        let cases = [
            ("0", 0),
            ("1m0s", 60 * NANOS_PER_SECOND),
            ("30s", 30 * NANOS_PER_SECOND),
            ("1h", 3600 * NANOS_PER_SECOND),
            ("1.5s", 1_500_000_000),
            ("-2m", -120 * NANOS_PER_SECOND),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("300ms", 300_000_000),
            (".5s", 500_000_000),
            ("2µs", 2_000),
        ];
        for (text, nanos) in cases {
            assert_eq!(
                text.parse::<GoDuration>(),
                Ok(GoDuration::from_nanos(nanos)),
                "{text}"
            );
        }
    }

    #[test]
    fn go_durations_reject_bad_syntax() {
        for text in ["", "5", "1x", "s", "-", "1m-2s", "99999999999h"] {
            assert!(
                text.parse::<GoDuration>().is_err(),
                "{text:?} should not parse"
            );
        }
    }

    #[test]
    fn go_durations_format_like_go() {
        let cases = [
            (0, "0s"),
            (60 * NANOS_PER_SECOND, "1m0s"),
            (3600 * NANOS_PER_SECOND, "1h0m0s"),
            (30 * NANOS_PER_SECOND, "30s"),
            (1_500_000_000, "1.5s"),
            (5_000_000, "5ms"),
            (-90 * NANOS_PER_SECOND, "-1m30s"),
            (1_500, "1.5µs"),
        ];
        for (nanos, text) in cases {
            assert_eq!(GoDuration::from_nanos(nanos).to_string(), text);
        }
    }

    #[test]
    fn negative_durations_clamp_to_zero_as_std() {
        assert_eq!(
            GoDuration::from_nanos(-3_000_000_000).to_std(),
            std::time::Duration::ZERO
        );
        assert_eq!(
            GoDuration::from_nanos(3_000_000_000).to_std(),
            std::time::Duration::from_secs(3)
        );
    }
}
