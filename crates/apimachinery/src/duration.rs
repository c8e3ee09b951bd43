//! Human-readable durations as upstream prints them in tables (the `AGE`
//! column of `kubectl get`), from `k8s.io/apimachinery/pkg/util/duration`.

use chrono::{DateTime, TimeDelta, Utc};

/// Whole seconds, truncated toward zero as Go's `int(d.Seconds())`.
fn whole_seconds(d: TimeDelta) -> i64 {
    d.num_milliseconds() / 1000
}

/// Early-outs shared by both formats: negative and sub-limit durations.
fn small(d: TimeDelta, limit: i64) -> Option<String> {
    let seconds = whole_seconds(d);
    if seconds < -1 {
        Some("<invalid>".to_owned())
    } else if seconds < 0 {
        Some("0s".to_owned())
    } else if seconds < limit {
        Some(format!("{seconds}s"))
    } else {
        None
    }
}

/// One unit only: `45s`, `5m`, `3h`, `12d`, `2y`.
pub fn short_human_duration(d: TimeDelta) -> String {
    if let Some(s) = small(d, 60) {
        return s;
    }
    let minutes = d.num_minutes();
    let hours = d.num_hours();
    if minutes < 60 {
        format!("{minutes}m")
    } else if hours < 24 {
        format!("{hours}h")
    } else if hours < 24 * 365 {
        format!("{}d", hours / 24)
    } else {
        format!("{}y", hours / 24 / 365)
    }
}

/// Up to two units where it helps: `90s`, `5m30s`, `3h10m`, `2d5h`,
/// `3y20d`.
pub fn human_duration(d: TimeDelta) -> String {
    if let Some(s) = small(d, 60 * 2) {
        return s;
    }
    let minutes = d.num_minutes();
    if minutes < 10 {
        let s = whole_seconds(d) % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d.num_hours();
    let days = hours / 24;
    let with_rest = |major: i64, unit: &str, rest: i64, rest_unit: &str| {
        if rest == 0 {
            format!("{major}{unit}")
        } else {
            format!("{major}{unit}{rest}{rest_unit}")
        }
    };
    if hours < 8 {
        with_rest(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        with_rest(days, "d", hours % 24, "h")
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        with_rest(days / 365, "y", days % 365, "d")
    } else {
        format!("{}y", days / 365)
    }
}

/// The age of an object created at `timestamp` (RFC 3339) as of `now`, as
/// upstream's printers show it; `<unknown>` when there is no valid
/// timestamp.
pub fn age(timestamp: Option<&str>, now: DateTime<Utc>) -> String {
    match timestamp.map(DateTime::parse_from_rfc3339) {
        Some(Ok(t)) => human_duration(now.signed_duration_since(t)),
        _ => "<unknown>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: i64) -> TimeDelta {
        TimeDelta::seconds(s)
    }

    #[test]
    fn human() {
        let cases = [
            (secs(-3), "<invalid>"),
            (TimeDelta::milliseconds(-1500), "0s"),
            (secs(-1), "0s"),
            (secs(0), "0s"),
            (secs(119), "119s"),
            (secs(120), "2m"),
            (secs(150), "2m30s"),
            (secs(9 * 60 + 59), "9m59s"),
            (secs(10 * 60 + 30), "10m"),
            (secs(179 * 60), "179m"),
            (secs(3 * 3600), "3h"),
            (secs(3 * 3600 + 10 * 60), "3h10m"),
            (secs(8 * 3600 + 10 * 60), "8h"),
            (secs(47 * 3600), "47h"),
            (secs(48 * 3600), "2d"),
            (secs(53 * 3600), "2d5h"),
            (secs(8 * 86400), "8d"),
            (secs(729 * 86400), "729d"),
            (secs(730 * 86400), "2y"),
            (secs(750 * 86400), "2y20d"),
            (secs(8 * 365 * 86400 + 86400), "8y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d:?}");
        }
    }

    #[test]
    fn short() {
        let cases = [
            (secs(-5), "<invalid>"),
            (secs(-1), "0s"),
            (secs(59), "59s"),
            (secs(60), "1m"),
            (secs(3599), "59m"),
            (secs(3600), "1h"),
            (secs(86399), "23h"),
            (secs(86400 * 364), "364d"),
            (secs(86400 * 365 * 3), "3y"),
        ];
        for (d, want) in cases {
            assert_eq!(short_human_duration(d), want, "{d:?}");
        }
    }

    #[test]
    fn ages() {
        let now = DateTime::parse_from_rfc3339("2024-01-02T00:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        assert_eq!(age(Some("2024-01-01T23:55:00Z"), now), "5m");
        assert_eq!(age(Some("2024-01-01T00:00:00Z"), now), "24h");
        assert_eq!(age(Some("not a time"), now), "<unknown>");
        assert_eq!(age(None, now), "<unknown>");
    }
}
