//! IP address and CIDR validation with upstream's messages
//! (`k8s.io/apimachinery/pkg/util/validation/ip.go`): the lenient parse
//! older fields accept (IPv4 octets with leading zeros) and the strict,
//! canonical form newer fields require.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::field_errors::{ErrorList, FieldError, Path};

/// An address as upstream's lenient parser reads it.
struct Parsed {
    addr: IpAddr,
    /// Some IPv4 octet had a leading zero (rejected by the strict parser).
    leading_zeros: bool,
}

/// Parses dotted IPv4, allowing leading zeros as Go's old parser did.
fn parse_ipv4_sloppy(s: &str) -> Option<(Ipv4Addr, bool)> {
    let mut octets = [0u8; 4];
    let mut leading_zeros = false;
    let mut fields = s.split('.');
    for octet in &mut octets {
        let field = fields.next()?;
        if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        leading_zeros |= field.len() > 1 && field.starts_with('0');
        let trimmed = field.trim_start_matches('0');
        if trimmed.len() > 3 {
            return None;
        }
        *octet = if trimmed.is_empty() {
            0
        } else {
            trimmed.parse().ok()?
        };
    }
    if fields.next().is_some() {
        return None;
    }
    Some((Ipv4Addr::from(octets), leading_zeros))
}

fn parse_ip_sloppy(s: &str) -> Option<Parsed> {
    if !s.contains(':') {
        let (v4, leading_zeros) = parse_ipv4_sloppy(s)?;
        return Some(Parsed {
            addr: IpAddr::V4(v4),
            leading_zeros,
        });
    }
    // An embedded IPv4 tail (`::ffff:1.2.3.4`) is parsed leniently too.
    let (head, tail) = s.rsplit_once(':')?;
    let (normalized, leading_zeros) = if tail.contains('.') {
        let (v4, lz) = parse_ipv4_sloppy(tail)?;
        let [a, b, c, d] = v4.octets();
        let groups = format!(
            "{head}:{:x}:{:x}",
            u16::from_be_bytes([a, b]),
            u16::from_be_bytes([c, d])
        );
        (groups, lz)
    } else {
        (s.to_owned(), false)
    };
    let v6: Ipv6Addr = normalized.parse().ok()?;
    Some(Parsed {
        addr: IpAddr::V6(v6),
        leading_zeros,
    })
}

/// Go's `net.IP.String()`: IPv4-mapped addresses print as IPv4.
fn go_ip_string(addr: IpAddr) -> String {
    match addr {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.to_string(),
        },
        IpAddr::V4(v4) => v4.to_string(),
    }
}

fn is_4in6(addr: IpAddr) -> bool {
    matches!(addr, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

fn parse_ip(path: &Path, value: &str, strict: bool) -> (Option<IpAddr>, ErrorList) {
    let Some(parsed) = parse_ip_sloppy(value) else {
        let msg = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
        return (None, vec![FieldError::invalid(path, value, msg)]);
    };
    let mut errs = ErrorList::new();
    if strict {
        if parsed.leading_zeros {
            errs.push(FieldError::invalid(path, value, "must not have leading 0s"));
        }
        if is_4in6(parsed.addr) {
            errs.push(FieldError::invalid(
                path,
                value,
                "must not be an IPv4-mapped IPv6 address",
            ));
        }
    }
    (Some(parsed.addr), errs)
}

/// Validates an IP address in a field that has always accepted lenient
/// forms; values in `valid_old` (the stored object's) are always accepted.
pub fn is_valid_ip_for_legacy_field(
    path: &Path,
    value: &str,
    strict: bool,
    valid_old: &[&str],
) -> ErrorList {
    if valid_old.contains(&value) {
        return ErrorList::new();
    }
    parse_ip(path, value, strict).1
}

/// Validates an IP address that must be strict and canonical.
pub fn is_valid_ip(path: &Path, value: &str) -> ErrorList {
    let (addr, mut errs) = parse_ip(path, value, true);
    if let (Some(addr), true) = (addr, errs.is_empty()) {
        let canonical = go_ip_string(addr);
        if canonical != value {
            errs.push(FieldError::invalid(
                path,
                value,
                format!("must be in canonical form (\"{canonical}\")"),
            ));
        }
    }
    errs
}

/// A parsed CIDR: address, prefix length, and strictness findings.
struct ParsedCidr {
    addr: IpAddr,
    prefix: u8,
    leading_zeros: bool,
}

fn parse_cidr_sloppy(value: &str) -> Option<ParsedCidr> {
    let (ip, len) = value.split_once('/')?;
    let parsed = parse_ip_sloppy(ip)?;
    if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) || len.len() > 3 {
        return None;
    }
    let prefix: u8 = len.parse().ok()?;
    let max = if parsed.addr.is_ipv4() { 32 } else { 128 };
    (prefix <= max).then_some(ParsedCidr {
        addr: parsed.addr,
        prefix,
        leading_zeros: parsed.leading_zeros || (len.len() > 1 && len.starts_with('0')),
    })
}

/// The network address of `addr/prefix`.
fn masked(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

fn parse_cidr(path: &Path, value: &str, strict: bool) -> (Option<String>, ErrorList) {
    let Some(cidr) = parse_cidr_sloppy(value) else {
        let msg = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
        return (None, vec![FieldError::invalid(path, value, msg)]);
    };
    let network = masked(cidr.addr, cidr.prefix);
    let mut errs = ErrorList::new();
    if strict {
        let msg = if cidr.leading_zeros {
            Some("must not have leading 0s in IP or prefix length")
        } else if is_4in6(cidr.addr) {
            Some("must not have an IPv4-mapped IPv6 address")
        } else if network != cidr.addr {
            Some("must not have bits set beyond the prefix length")
        } else {
            None
        };
        errs.extend(msg.map(|m| FieldError::invalid(path, value, m)));
    }
    // Only consulted once strict checks pass, so never for 4-in-6 values.
    let canonical = format!("{}/{}", go_ip_string(network), cidr.prefix);
    (Some(canonical), errs)
}

/// Validates a CIDR in a field that has always accepted lenient forms;
/// values in `valid_old` are always accepted.
pub fn is_valid_cidr_for_legacy_field(
    path: &Path,
    value: &str,
    strict: bool,
    valid_old: &[&str],
) -> ErrorList {
    if valid_old.contains(&value) {
        return ErrorList::new();
    }
    parse_cidr(path, value, strict).1
}

/// Validates a CIDR that must be strict and canonical.
pub fn is_valid_cidr(path: &Path, value: &str) -> ErrorList {
    let (canonical, mut errs) = parse_cidr(path, value, true);
    if let (Some(canonical), true) = (canonical, errs.is_empty()) {
        if canonical != value {
            errs.push(FieldError::invalid(
                path,
                value,
                format!("must be in canonical form (\"{canonical}\")"),
            ));
        }
    }
    errs
}

/// Go's `netutils.ParseIPSloppy`: the address, or `None` when unparsable.
pub fn ip_sloppy(value: &str) -> Option<IpAddr> {
    parse_ip_sloppy(value).map(|p| p.addr)
}

/// Go's `netutils.ParseCIDRSloppy`: the network address and prefix
/// length, or `None` when unparsable.
pub fn cidr_sloppy(value: &str) -> Option<(IpAddr, u8)> {
    parse_cidr_sloppy(value).map(|c| (masked(c.addr, c.prefix), c.prefix))
}

/// Upstream's `IsValidIPv4Address` (IPv4-mapped IPv6 counts as IPv4).
pub fn is_valid_ipv4_address(path: &Path, value: &str) -> ErrorList {
    match ip_sloppy(value).map(|ip| ip.to_canonical()) {
        Some(IpAddr::V4(_)) => ErrorList::new(),
        _ => vec![FieldError::invalid(
            path,
            value,
            "must be a valid IPv4 address",
        )],
    }
}

/// Upstream's `IsValidIPv6Address`.
pub fn is_valid_ipv6_address(path: &Path, value: &str) -> ErrorList {
    match ip_sloppy(value).map(|ip| ip.to_canonical()) {
        Some(IpAddr::V6(_)) => ErrorList::new(),
        _ => vec![FieldError::invalid(
            path,
            value,
            "must be a valid IPv6 address",
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(|e| e.detail.clone()).collect()
    }

    fn p() -> Path {
        Path::new("spec").child("clusterIP")
    }

    #[test]
    fn strict_ips() {
        for ok in [
            "10.9.8.7",
            "0.0.0.0",
            "2001:db8::ffff",
            "::",
            "::1",
            "fe80::1:2",
        ] {
            assert!(is_valid_ip(&p(), ok).is_empty(), "{ok}");
        }
        let bad = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
        for s in [
            "",
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "a.b.c.d",
            "1.2.3.4 ",
            "fe80::1%eth0",
            "::g",
        ] {
            assert_eq!(msgs(is_valid_ip(&p(), s)), [bad], "{s:?}");
        }
        assert_eq!(
            msgs(is_valid_ip(&p(), "010.1.1.1")),
            ["must not have leading 0s"]
        );
        assert_eq!(
            msgs(is_valid_ip(&p(), "::ffff:1.2.3.4")),
            ["must not be an IPv4-mapped IPv6 address"]
        );
        assert_eq!(
            msgs(is_valid_ip(&p(), "2001:DB8::1")),
            ["must be in canonical form (\"2001:db8::1\")"]
        );
        assert_eq!(
            msgs(is_valid_ip(&p(), "2001:db8:0:0:0:0:0:1")),
            ["must be in canonical form (\"2001:db8::1\")"]
        );
        assert_eq!(
            is_valid_ip(&p(), "1.2.3").first().map(ToString::to_string),
            Some("spec.clusterIP: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".to_owned())
        );
    }

    #[test]
    fn legacy_ips() {
        assert!(is_valid_ip_for_legacy_field(&p(), "010.1.1.1", false, &[]).is_empty());
        assert!(is_valid_ip_for_legacy_field(&p(), "::ffff:010.1.1.1", false, &[]).is_empty());
        assert_eq!(
            msgs(is_valid_ip_for_legacy_field(&p(), "010.1.1.1", true, &[])),
            ["must not have leading 0s"]
        );
        assert!(is_valid_ip_for_legacy_field(&p(), "010.1.1.1", true, &["010.1.1.1"]).is_empty());
        assert!(is_valid_ip_for_legacy_field(&p(), "2001:DB8::1", true, &[]).is_empty());
    }

    #[test]
    fn cidrs() {
        for ok in [
            "10.0.0.0/8",
            "0.0.0.0/0",
            "2001:db8::/64",
            "::/0",
            "1.2.3.4/32",
        ] {
            assert!(is_valid_cidr(&p(), ok).is_empty(), "{ok}");
        }
        let bad = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
        for s in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/",
            "::/129",
            "x/8",
            "10.0.0.0/-1",
        ] {
            assert_eq!(msgs(is_valid_cidr(&p(), s)), [bad], "{s:?}");
        }
        assert_eq!(
            msgs(is_valid_cidr(&p(), "10.0.0.1/8")),
            ["must not have bits set beyond the prefix length"]
        );
        assert_eq!(
            msgs(is_valid_cidr(&p(), "010.0.0.0/8")),
            ["must not have leading 0s in IP or prefix length"]
        );
        assert_eq!(
            msgs(is_valid_cidr(&p(), "10.0.0.0/08")),
            ["must not have leading 0s in IP or prefix length"]
        );
        assert_eq!(
            msgs(is_valid_cidr(&p(), "::ffff:1.2.3.0/120")),
            ["must not have an IPv4-mapped IPv6 address"]
        );
        assert_eq!(
            msgs(is_valid_cidr(&p(), "2001:DB8::/64")),
            ["must be in canonical form (\"2001:db8::/64\")"]
        );
        assert!(is_valid_cidr_for_legacy_field(&p(), "10.0.0.1/8", false, &[]).is_empty());
        assert!(
            is_valid_cidr_for_legacy_field(&p(), "10.0.0.1/8", true, &["10.0.0.1/8"]).is_empty()
        );
    }
}
