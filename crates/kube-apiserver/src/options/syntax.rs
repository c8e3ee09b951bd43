//! Parsers and printers for the value syntaxes upstream's flags accept:
//! Go booleans and integers, comma-separated (CSV) lists,
//! `key=value` maps, CIDRs and port ranges. Pure functions, no I/O.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use apimachinery::go_duration::ParseDurationError;

/// A value did not match the syntax its flag expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SyntaxError(pub String);

impl SyntaxError {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Duration flags (`apimachinery::go_duration`) fail with Go's message.
impl From<ParseDurationError> for SyntaxError {
    fn from(e: ParseDurationError) -> Self {
        Self(e.0)
    }
}

/// Parses a boolean the way Go's `strconv.ParseBool` does.
pub fn parse_bool(input: &str) -> Result<bool, SyntaxError> {
    match input {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(SyntaxError::new(format!(
            "strconv.ParseBool: parsing {input:?}: invalid syntax"
        ))),
    }
}

/// Parses an integer the way Go's `strconv.ParseInt(s, 0, 64)` does:
/// optional sign, `0x`/`0o`/`0b`/leading-`0` prefixes, `_` separators.
pub fn parse_int(input: &str) -> Result<i64, SyntaxError> {
    let invalid = || {
        SyntaxError::new(format!(
            "strconv.ParseInt: parsing {input:?}: invalid syntax"
        ))
    };
    let (negative, digits) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    let magnitude = parse_unsigned_digits(digits).ok_or_else(invalid)?;
    let value = if negative {
        0i128 - i128::from(magnitude)
    } else {
        i128::from(magnitude)
    };
    i64::try_from(value).map_err(|_| {
        SyntaxError::new(format!(
            "strconv.ParseInt: parsing {input:?}: value out of range"
        ))
    })
}

/// Parses an unsigned integer like Go's `strconv.ParseUint(s, 0, 64)`.
pub fn parse_uint(input: &str) -> Result<u64, SyntaxError> {
    parse_unsigned_digits(input).ok_or_else(|| {
        SyntaxError::new(format!(
            "strconv.ParseUint: parsing {input:?}: invalid syntax"
        ))
    })
}

fn parse_unsigned_digits(digits: &str) -> Option<u64> {
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    // Go allows `_` only between digits (and after a base prefix).
    if body.is_empty() || body.ends_with('_') || (radix == 10 && body.starts_with('_')) {
        return None;
    }
    if body.contains("__") {
        return None;
    }
    let cleaned: String = body.chars().filter(|c| *c != '_').collect();
    if cleaned.is_empty() {
        return None;
    }
    u64::from_str_radix(&cleaned, radix).ok()
}

/// Parses a floating-point number (Go's `strconv.ParseFloat`).
pub fn parse_float(input: &str) -> Result<f64, SyntaxError> {
    input.parse::<f64>().map_err(|_| {
        SyntaxError::new(format!(
            "strconv.ParseFloat: parsing {input:?}: invalid syntax"
        ))
    })
}

/// Splits one comma-separated record the way pflag's string slices do
/// (Go's `encoding/csv`): double quotes group text containing commas and
/// `""` inside quotes is a literal quote. An empty input is an empty list.
pub fn parse_csv(input: &str) -> Result<Vec<String>, SyntaxError> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = input.chars().peekable();
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        match c {
            '"' if at_field_start => {
                at_field_start = false;
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(other) => field.push(other),
                        None => {
                            return Err(SyntaxError::new(format!(
                                "extraneous or missing \" in quoted-field: {input:?}"
                            )))
                        }
                    }
                }
                if !matches!(chars.peek(), None | Some(',')) {
                    return Err(SyntaxError::new(format!(
                        "extraneous or missing \" in quoted-field: {input:?}"
                    )));
                }
            }
            '"' => {
                return Err(SyntaxError::new(format!(
                    "bare \" in non-quoted-field: {input:?}"
                )))
            }
            ',' => {
                fields.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            other => {
                at_field_start = false;
                field.push(other);
            }
        }
    }
    fields.push(field);
    Ok(fields)
}

/// Parses `key=value` pairs separated by commas into `map`. A pair without
/// `=` is an error unless `allow_bare_key`, in which case its value is empty.
/// Keys and values are trimmed; empty items are skipped.
pub fn parse_key_values_into(
    input: &str,
    allow_bare_key: bool,
    map: &mut BTreeMap<String, String>,
) -> Result<(), SyntaxError> {
    for item in input.split(',').filter(|item| !item.is_empty()) {
        match item.split_once('=') {
            Some((key, value)) => {
                map.insert(key.trim().to_string(), value.trim().to_string());
            }
            None if allow_bare_key => {
                map.insert(item.trim().to_string(), String::new());
            }
            None => return Err(SyntaxError::new("malformed pair, expect string=string")),
        }
    }
    Ok(())
}

/// Parses `key=true|false` pairs separated by commas (a feature-gate list).
pub fn parse_bool_map(input: &str) -> Result<BTreeMap<String, bool>, SyntaxError> {
    let mut map = BTreeMap::new();
    for item in input.split(',').filter(|item| !item.is_empty()) {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| SyntaxError::new(format!("missing bool value for {}", item.trim())))?;
        let (key, value) = (key.trim(), value.trim());
        let parsed = parse_bool(value).map_err(|err| {
            SyntaxError::new(format!("invalid value of {key}={value}, err: {err}"))
        })?;
        map.insert(key.to_string(), parsed);
    }
    Ok(map)
}

/// An IP network in CIDR notation, with host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    network: IpAddr,
    prefix_len: u8,
}

impl Cidr {
    /// The IPv4 network `address/prefix_len` (prefix capped at 32).
    pub fn from_v4(address: std::net::Ipv4Addr, prefix_len: u8) -> Cidr {
        let prefix_len = prefix_len.min(32);
        let mask = u32::MAX
            .checked_shl(32 - u32::from(prefix_len))
            .unwrap_or(0);
        Cidr {
            network: IpAddr::V4((u32::from(address) & mask).into()),
            prefix_len,
        }
    }

    /// The first address of the network.
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// The number of bits in an address of this family (32 or 128).
    pub fn address_bits(&self) -> u8 {
        match self.network {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        }
    }

    /// How many addresses the network holds, saturating at `u128::MAX`.
    pub fn size(&self) -> u128 {
        let host_bits = u32::from(self.address_bits() - self.prefix_len);
        1u128.checked_shl(host_bits).unwrap_or(u128::MAX)
    }

    /// The address at `index` within the network, if the network holds it.
    pub fn nth(&self, index: u128) -> Option<IpAddr> {
        if index >= self.size() {
            return None;
        }
        Some(match self.network {
            IpAddr::V4(v4) => {
                let offset = u32::try_from(index).ok()?;
                IpAddr::V4(u32::from(v4).checked_add(offset)?.into())
            }
            IpAddr::V6(v6) => IpAddr::V6(u128::from(v6).checked_add(index)?.into()),
        })
    }
}

impl FromStr for Cidr {
    type Err = SyntaxError;

    fn from_str(input: &str) -> Result<Self, SyntaxError> {
        let invalid = || SyntaxError::new(format!("invalid CIDR address: {input}"));
        let (address, prefix) = input.trim().split_once('/').ok_or_else(invalid)?;
        let address: IpAddr = address.parse().map_err(|_| invalid())?;
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let prefix_len: u8 = prefix.parse().map_err(|_| invalid())?;
        let network = match address {
            IpAddr::V4(v4) if prefix_len <= 32 => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(prefix_len))
                    .unwrap_or(0);
                IpAddr::V4((u32::from(v4) & mask).into())
            }
            IpAddr::V6(v6) if prefix_len <= 128 => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(prefix_len))
                    .unwrap_or(0);
                IpAddr::V6((u128::from(v6) & mask).into())
            }
            _ => return Err(invalid()),
        };
        Ok(Self {
            network,
            prefix_len,
        })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

/// An inclusive range of ports, written `N1-N2`, `N+offset` or `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortRange {
    /// The first port.
    pub base: u16,
    /// How many ports the range holds (0 for an empty range).
    pub size: u32,
}

impl PortRange {
    /// Whether `port` lies within the range.
    pub fn contains(self, port: u32) -> bool {
        let base = u32::from(self.base);
        port >= base && port < base + self.size
    }
}

impl FromStr for PortRange {
    type Err = SyntaxError;

    fn from_str(input: &str) -> Result<Self, SyntaxError> {
        let value = input.trim();
        if value.is_empty() {
            return Ok(Self { base: 0, size: 0 });
        }
        let number = |text: &str| {
            text.parse::<i64>().map_err(|_| {
                SyntaxError::new(format!("strconv.Atoi: parsing {text:?}: invalid syntax"))
            })
        };
        let (low, high) = match (value.find('-'), value.find('+')) {
            (None, None) => {
                let port = number(value)?;
                (port, port)
            }
            (Some(dash), None) => (number(&value[..dash])?, number(&value[dash + 1..])?),
            (None, Some(plus)) => {
                let low = number(&value[..plus])?;
                (low, low.saturating_add(number(&value[plus + 1..])?))
            }
            (Some(_), Some(_)) => {
                return Err(SyntaxError::new(format!(
                    "unable to parse port range: {value}"
                )))
            }
        };
        if low > 65535 || high > 65535 {
            return Err(SyntaxError::new(format!(
                "the port range cannot be greater than 65535: {value}"
            )));
        }
        if high < low {
            return Err(SyntaxError::new(format!(
                "end port cannot be less than start port: {value}"
            )));
        }
        let base = u16::try_from(low)
            .map_err(|_| SyntaxError::new(format!("invalid port range: {value}")))?;
        let size = u32::try_from(high - low + 1)
            .map_err(|_| SyntaxError::new(format!("invalid port range: {value}")))?;
        Ok(Self { base, size })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.size == 0 {
            return Ok(());
        }
        let last = u32::from(self.base) + self.size - 1;
        write!(f, "{}-{}", self.base, last)
    }
}

/// Checks a Kubernetes resource quantity such as `512`, `1k`, `2Ki`, `1.5Gi`
/// or `1e3` (the syntax of `resource.Quantity`).
pub fn check_quantity(input: &str) -> Result<(), SyntaxError> {
    const SUFFIXES: &[&str] = &[
        "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E",
    ];
    let invalid = || {
        SyntaxError::new("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    };
    let body = input.strip_prefix(['+', '-']).unwrap_or(input);
    let number_len = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_len);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return Err(invalid());
    }
    let exponent_ok = |rest: &str| {
        let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    let valid =
        SUFFIXES.contains(&suffix) || suffix.strip_prefix(['e', 'E']).is_some_and(exponent_ok);
    if valid {
        Ok(())
    } else {
        Err(invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bools_and_ints_follow_go() {
        assert_eq!(parse_bool("T"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert!(parse_bool("yes").is_err());
        assert_eq!(parse_int("6443"), Ok(6443));
        assert_eq!(parse_int("-1"), Ok(-1));
        assert_eq!(parse_int("0x10"), Ok(16));
        assert_eq!(parse_int("1_000"), Ok(1000));
        assert!(parse_int("12a").is_err());
        assert!(parse_int("").is_err());
        assert!(parse_int("99999999999999999999").is_err());
        assert_eq!(parse_uint("10"), Ok(10));
        assert!(parse_uint("-1").is_err());
        assert_eq!(parse_float("0.001"), Ok(0.001));
    }

    #[test]
    fn csv_lists_split_and_quote() {
        assert_eq!(parse_csv(""), Ok(Vec::new()));
        assert_eq!(parse_csv("a,b"), Ok(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(
            parse_csv(r#""a,b",c"#),
            Ok(vec!["a,b".to_string(), "c".to_string()])
        );
        assert_eq!(
            parse_csv(r#""say ""hi""""#),
            Ok(vec![r#"say "hi""#.to_string()])
        );
        assert_eq!(parse_csv("a,,b").map(|v| v.len()), Ok(3));
        assert!(parse_csv(r#"a"b"#).is_err());
        assert!(parse_csv(r#""open"#).is_err());
    }

    #[test]
    fn key_value_maps() {
        let mut map = BTreeMap::new();
        parse_key_values_into("apps/v1=true, api/beta = false,", false, &mut map).unwrap();
        assert_eq!(map.get("apps/v1").map(String::as_str), Some("true"));
        assert_eq!(map.get("api/beta").map(String::as_str), Some("false"));
        assert!(parse_key_values_into("novalue", false, &mut map).is_err());
        parse_key_values_into("batch/v1", true, &mut map).unwrap();
        assert_eq!(map.get("batch/v1").map(String::as_str), Some(""));
    }

    #[test]
    fn bool_maps() {
        let map = parse_bool_map("A=true,B=false").unwrap();
        assert_eq!(map.get("A"), Some(&true));
        assert_eq!(map.get("B"), Some(&false));
        assert_eq!(
            parse_bool_map("A").unwrap_err().to_string(),
            "missing bool value for A"
        );
        assert!(parse_bool_map("A=maybe")
            .unwrap_err()
            .to_string()
            .starts_with("invalid value of A=maybe"));
    }

    #[test]
    fn cidrs() {
        let cidr: Cidr = "10.0.0.7/24".parse().unwrap();
        assert_eq!(cidr.to_string(), "10.0.0.0/24");
        assert_eq!(cidr.size(), 256);
        assert_eq!(cidr.nth(1), Some("10.0.0.1".parse().unwrap()));
        assert_eq!(cidr.nth(256), None);
        let v6: Cidr = "fd00::/108".parse().unwrap();
        assert_eq!(v6.size(), 1 << 20);
        assert_eq!(v6.address_bits(), 128);
        for bad in ["10.0.0.0", "10.0.0.0/33", "10.0.0.0/", "x/8", "10.0.0.0/-1"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn port_ranges() {
        let range: PortRange = "30000-32767".parse().unwrap();
        assert_eq!(
            range,
            PortRange {
                base: 30000,
                size: 2768
            }
        );
        assert_eq!(range.to_string(), "30000-32767");
        assert!(range.contains(32767) && !range.contains(32768));
        assert_eq!("30000+2767".parse::<PortRange>(), Ok(range));
        assert_eq!(
            "80".parse::<PortRange>(),
            Ok(PortRange { base: 80, size: 1 })
        );
        assert!("2-1".parse::<PortRange>().is_err());
        assert!("1-70000".parse::<PortRange>().is_err());
        assert!("1-2+3".parse::<PortRange>().is_err());
        assert!("a-b".parse::<PortRange>().is_err());
    }

    #[test]
    fn quantities() {
        for good in ["0", "512", "1k", "2Ki", "1.5Gi", "1e3", "+3M", "100m"] {
            assert!(check_quantity(good).is_ok(), "{good}");
        }
        for bad in ["", "K", "1K", "1KB", "1..2", "e3"] {
            assert!(check_quantity(bad).is_err(), "{bad}");
        }
    }
}
