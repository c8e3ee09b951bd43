//! The string formats CRD schemas may use (upstream keeps only these and
//! strips any other `format`) and their checks, after kube-openapi's
//! `strfmt` registry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use apimachinery::validation::{is_dns1123_label, is_dns1123_subdomain};
use regex::Regex;

/// Formats supported on strings, in go-openapi's normalized spelling
/// (dashes removed).
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// Whether a string `format` survives upstream's stripping.
pub fn is_supported(format: &str) -> bool {
    SUPPORTED.contains(&normalize(format).as_str())
}

/// Whether the registry knows the format (and so validates it).
pub fn is_known(format: &str) -> bool {
    is_supported(format)
}

/// Compiles one of this file's literal patterns (covered by the tests).
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("format patterns are valid literals")
}

static UUID: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static HEXCOLOR: LazyLock<Regex> = LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Regex> = LazyLock::new(|| {
    let c = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*";
    re(&format!(r"^rgb\({c},{c},{c}\)$"))
});
static BSON: LazyLock<Regex> = LazyLock::new(|| re(r"^[0-9a-fA-F]{24}$"));
static URI_SCHEME: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:\S*$"));
static DURATION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^((\d+(\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?|nanos?|micros?|millis?|secs?|mins?|hrs?))+$",
    )
});

/// Whether `text` is valid for `format` (which must be supported).
pub fn validates(format: &str, text: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => BSON.is_match(text),
        "uri" => text.starts_with('/') || URI_SCHEME.is_match(text),
        "email" => is_email(text),
        "hostname" => is_hostname(text),
        "ipv4" => text.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => text.contains(':') && text.parse::<IpAddr>().is_ok(),
        "cidr" => is_cidr(text),
        "mac" => is_mac(text),
        "uuid" => UUID.is_match(text),
        "uuid3" => UUID3.is_match(text),
        "uuid4" => UUID4.is_match(text),
        "uuid5" => UUID5.is_match(text),
        "isbn" => is_isbn10(text) || is_isbn13(text),
        "isbn10" => is_isbn10(text),
        "isbn13" => is_isbn13(text),
        "creditcard" => is_credit_card(text),
        "ssn" => SSN.is_match(text),
        "hexcolor" => HEXCOLOR.is_match(text),
        "rgbcolor" => RGBCOLOR.is_match(text),
        "byte" => BASE64.is_match(text),
        "password" => true,
        "date" => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok() && text.len() == 10,
        "duration" => DURATION.is_match(text.trim()),
        "datetime" => is_date_time(text),
        "k8sshortname" => is_dns1123_label(text).is_empty(),
        "k8slongname" => is_dns1123_subdomain(text).is_empty(),
        _ => true,
    }
}

fn is_email(text: &str) -> bool {
    let addr = match (text.find('<'), text.rfind('>')) {
        (Some(a), Some(b)) if a < b => &text[a + 1..b],
        _ => text,
    };
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !addr.chars().any(char::is_whitespace)
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

fn is_hostname(text: &str) -> bool {
    text.len() <= 255 && text.split('.').all(|l| l.len() <= 63) && HOSTNAME.is_match(text)
}

fn is_cidr(text: &str) -> bool {
    let Some((ip, bits)) = text.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if let Ok(_v4) = ip.parse::<Ipv4Addr>() {
        bits <= 32
    } else {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    }
}

fn is_mac(text: &str) -> bool {
    let hex_group = |g: &str, n: usize| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit());
    for sep in [':', '-'] {
        if text.contains(sep) {
            let groups: Vec<&str> = text.split(sep).collect();
            return matches!(groups.len(), 6 | 8 | 20) && groups.iter().all(|g| hex_group(g, 2));
        }
    }
    let groups: Vec<&str> = text.split('.').collect();
    matches!(groups.len(), 3 | 4 | 10) && groups.iter().all(|g| hex_group(g, 4))
}

fn isbn_digits(text: &str) -> Vec<char> {
    text.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

fn is_isbn10(text: &str) -> bool {
    let d = isbn_digits(text);
    if d.len() != 10 {
        return false;
    }
    let mut sum = 0;
    for (i, c) in d.iter().enumerate() {
        let v = match (i, c) {
            (9, 'X') => 10,
            (_, c) => match c.to_digit(10) {
                Some(v) => v,
                None => return false,
            },
        };
        sum += (10 - i as u32) * v;
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(text: &str) -> bool {
    let d = isbn_digits(text);
    if d.len() != 13 {
        return false;
    }
    let mut sum = 0;
    for (i, c) in d.iter().enumerate() {
        let Some(v) = c.to_digit(10) else {
            return false;
        };
        sum += if i % 2 == 0 { v } else { 3 * v };
    }
    sum.is_multiple_of(10)
}

fn is_credit_card(text: &str) -> bool {
    let digits: Vec<u32> = text.chars().filter_map(|c| c.to_digit(10)).collect();
    if digits.len() < 12 || digits.len() > 19 {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 {
                    x - 9
                } else {
                    x
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn is_date_time(text: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(text).is_ok()
        || chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
        || chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_formats_are_normalized() {
        assert!(is_supported("date-time"));
        assert!(is_supported("k8s-short-name"));
        assert!(!is_supported("int32"));
        assert!(!is_supported("quantity"));
    }

    #[test]
    fn checks_common_formats() {
        assert!(validates("date-time", "2024-01-02T03:04:05Z"));
        assert!(!validates("date-time", "yesterday"));
        assert!(validates("date", "2024-01-02"));
        assert!(!validates("date", "2024-1-2"));
        assert!(validates("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(!validates("uuid", "123"));
        assert!(validates("byte", "aGVsbG8="));
        assert!(!validates("byte", "hello!"));
        assert!(validates("ipv4", "10.0.0.1"));
        assert!(!validates("ipv4", "10.0.0"));
        assert!(validates("ipv6", "::1"));
        assert!(validates("cidr", "10.0.0.0/8"));
        assert!(!validates("cidr", "10.0.0.0/33"));
        assert!(validates("mac", "01:23:45:67:89:ab"));
        assert!(validates("hostname", "example.com"));
        assert!(!validates("hostname", "-bad-"));
        assert!(validates("email", "a@example.com"));
        assert!(!validates("email", "nobody"));
        assert!(validates("isbn10", "0321751043"));
        assert!(validates("isbn13", "978-0321751041"));
        assert!(validates("k8s-short-name", "abc-1"));
        assert!(!validates("k8s-short-name", "Abc"));
        assert!(validates("duration", "1h30m"));
        assert!(validates("hexcolor", "#fff"));
        assert!(validates("rgbcolor", "rgb(255, 0, 10)"));
    }
}
