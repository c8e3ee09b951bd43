//! Kubernetes' IP and CIDR libraries: `ip()`, `isIP()`, `cidr()`,
//! `isCIDR()` and their accessors. As upstream, IPv4-mapped IPv6
//! addresses and zones are rejected.

use std::net::IpAddr;

use cel::common::types::{CelInt, Type, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};

use super::{arg, boolean, opaque_val, string, take, text};

const IP_TYPE: Type = Type::new_unspecified_type("net.IP");
static IP_TYPE_REF: Type = IP_TYPE;
const CIDR_TYPE: Type = Type::new_unspecified_type("net.CIDR");
static CIDR_TYPE_REF: Type = CIDR_TYPE;

/// An IP address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ip(IpAddr);

/// An address prefix, as written (not masked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

opaque_val!(Ip, IP_TYPE_REF);
opaque_val!(Cidr, CIDR_TYPE_REF);

/// Parses an address as upstream's `ip()` does.
fn parse_ip(s: &str) -> Result<IpAddr, String> {
    if s.contains('%') {
        return Err(format!("IP address with zone value is not allowed: {s:?}"));
    }
    let addr: IpAddr = s
        .parse()
        .map_err(|_| format!("IP Address {s:?} parse error during conversion from string"))?;
    if let IpAddr::V6(v6) = addr {
        if v6.to_ipv4_mapped().is_some() {
            return Err(format!("IPv4-mapped IPv6 address is not allowed: {s:?}"));
        }
    }
    Ok(addr)
}

fn parse_cidr(s: &str) -> Result<Cidr, String> {
    let invalid =
        || format!("network address parse error during conversion from string: invalid CIDR {s:?}");
    let (addr, prefix) = s.split_once('/').ok_or_else(invalid)?;
    let addr = parse_ip(addr)?;
    if prefix.is_empty() || prefix.starts_with('+') || (prefix.len() > 1 && prefix.starts_with('0'))
    {
        return Err(invalid());
    }
    let prefix: u8 = prefix.parse().map_err(|_| invalid())?;
    if prefix > max_prefix(addr) {
        return Err(invalid());
    }
    Ok(Cidr { addr, prefix })
}

fn max_prefix(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        32
    } else {
        128
    }
}

/// `addr` with all but its first `prefix` bits cleared.
fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((bits & mask).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((bits & mask).into())
        }
    }
}

impl Cidr {
    fn contains(&self, addr: IpAddr) -> bool {
        addr.is_ipv4() == self.addr.is_ipv4()
            && mask(addr, self.prefix) == mask(self.addr, self.prefix)
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(IP_TYPE)?;
    env.add_type(CIDR_TYPE)?;
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload("string", "ip_to_string", vec![IP_TYPE], ip_to_string)?;
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![CIDR_TYPE], cidr_to_string)?;
    let ip_methods: [(&str, cel::common::functions::Function); 6] = [
        ("family", family),
        ("isUnspecified", is_unspecified),
        ("isLoopback", is_loopback),
        ("isLinkLocalMulticast", is_link_local_multicast),
        ("isLinkLocalUnicast", is_link_local_unicast),
        ("isGlobalUnicast", is_global_unicast),
    ];
    for (name, op) in ip_methods {
        env.add_member_overload(name, &format!("ip_{name}"), IP_TYPE, vec![], op)?;
    }
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_ip",
        CIDR_TYPE,
        vec![IP_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        CIDR_TYPE,
        vec![STRING_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_cidr",
        CIDR_TYPE,
        vec![CIDR_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        CIDR_TYPE,
        vec![STRING_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", CIDR_TYPE, vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", CIDR_TYPE, vec![], masked)?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        CIDR_TYPE,
        vec![],
        prefix_length,
    )?;
    Ok(())
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    parse_ip(text(s.as_ref())?)
        .map(|a| CowVal::owned(Ip(a)))
        .map_err(|e| ExecutionError::function_error("ip", e))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    Ok(boolean(parse_ip(text(s.as_ref())?).is_ok()))
}

fn ip_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [ip] = take(args)?;
    Ok(string(arg::<Ip>(ip.as_ref())?.0.to_string()))
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    parse_cidr(text(s.as_ref())?)
        .map(CowVal::owned)
        .map_err(|e| ExecutionError::function_error("cidr", e))
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    Ok(boolean(parse_cidr(text(s.as_ref())?).is_ok()))
}

fn cidr_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [c] = take(args)?;
    Ok(string(arg::<Cidr>(c.as_ref())?.to_string()))
}

/// Applies `f` to the receiving address.
fn ip_test<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: fn(IpAddr) -> bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [ip] = take(args)?;
    Ok(boolean(f(arg::<Ip>(ip.as_ref())?.0)))
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [ip] = take(args)?;
    let family = if arg::<Ip>(ip.as_ref())?.0.is_ipv4() {
        4
    } else {
        6
    };
    Ok(CowVal::owned(CelInt::from(family)))
}

fn is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_test(args, |a| a.is_unspecified())
}

fn is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_test(args, |a| a.is_loopback())
}

fn link_local_multicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn link_local_unicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_multicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_test(args, link_local_multicast)
}

fn is_link_local_unicast<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_test(args, link_local_unicast)
}

/// Go's `IsGlobalUnicast`: private ranges count, special ones don't.
fn global_unicast(a: IpAddr) -> bool {
    let broadcast = matches!(a, IpAddr::V4(v4) if v4.is_broadcast());
    !(a.is_unspecified()
        || a.is_loopback()
        || a.is_multicast()
        || link_local_unicast(a)
        || broadcast)
}

fn is_global_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ip_test(args, global_unicast)
}

/// The receiving CIDR and the other argument.
fn cidr_and<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<(Cidr, CowVal<'b, 'v>), ExecutionError> {
    let [c, other] = take(args)?;
    Ok((*arg::<Cidr>(c.as_ref())?, other))
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (cidr, other) = cidr_and(args)?;
    let addr = match other.downcast_ref::<Ip>() {
        Some(ip) => ip.0,
        None => parse_ip(text(other.as_ref())?)
            .map_err(|e| ExecutionError::function_error("containsIP", e))?,
    };
    Ok(boolean(cidr.contains(addr)))
}

fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (cidr, other) = cidr_and(args)?;
    let inner = match other.downcast_ref::<Cidr>() {
        Some(c) => *c,
        None => parse_cidr(text(other.as_ref())?)
            .map_err(|e| ExecutionError::function_error("containsCIDR", e))?,
    };
    Ok(boolean(
        inner.prefix >= cidr.prefix && cidr.contains(inner.addr),
    ))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [c] = take(args)?;
    Ok(CowVal::owned(Ip(arg::<Cidr>(c.as_ref())?.addr)))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [c] = take(args)?;
    let cidr = arg::<Cidr>(c.as_ref())?;
    Ok(CowVal::owned(Cidr {
        addr: mask(cidr.addr, cidr.prefix),
        prefix: cidr.prefix,
    }))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [c] = take(args)?;
    Ok(CowVal::owned(CelInt::from(i64::from(
        arg::<Cidr>(c.as_ref())?.prefix,
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_upstream() {
        assert!(parse_ip("10.0.0.1").is_ok());
        assert!(parse_ip("::ffff:10.0.0.1").is_err());
        assert!(parse_ip("fe80::1%eth0").is_err());
        assert!(parse_ip("010.0.0.1").is_err());
        assert!(parse_cidr("10.0.0.0/8").is_ok());
        assert!(parse_cidr("10.0.0.0/33").is_err());
        assert!(parse_cidr("10.0.0.0").is_err());
        assert!(parse_cidr("10.0.0.0/08").is_err());
    }

    #[test]
    fn masks_and_contains() {
        let cidr = parse_cidr("10.1.2.3/8").unwrap_or(Cidr {
            addr: IpAddr::from([0, 0, 0, 0]),
            prefix: 0,
        });
        assert_eq!(mask(cidr.addr, cidr.prefix), IpAddr::from([10, 0, 0, 0]));
        assert!(cidr.contains(IpAddr::from([10, 255, 0, 1])));
        assert!(!cidr.contains(IpAddr::from([11, 0, 0, 1])));
        assert_eq!(
            mask(IpAddr::from([1, 2, 3, 4]), 0),
            IpAddr::from([0, 0, 0, 0])
        );
    }
}
