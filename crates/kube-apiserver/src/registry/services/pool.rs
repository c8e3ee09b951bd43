//! The address pools behind Service allocation: ClusterIP ranges and the
//! NodePort range. Dynamic picks follow upstream's offset-based random
//! scan (KEP-3070 for ClusterIPs, KEP-3668 for NodePorts): each range is
//! split into a lower "static" band, left for addresses users ask for, and
//! the upper band; a pick starts at a random point of the upper band and
//! scans it circularly, and only when it is full does the lower band get
//! the same treatment.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::net::IpAddr;

use crate::options::{Cidr, PortRange};

/// A random number below `bound` (which must be positive). The standard
/// library's randomly keyed hasher is random enough for spreading picks,
/// and saves a dependency.
fn random_below(bound: u128) -> u128 {
    let state = std::collections::hash_map::RandomState::new();
    let high = u128::from(state.hash_one(0u8));
    let low = u128::from(state.hash_one(1u8));
    ((high << 64) | low) % bound.max(1)
}

/// Upstream's `min(max(min, size/step), max)` size of the static band, or
/// no band at all for ranges of at most `min` values.
fn static_band(size: u128, min: u128, max: u128, step: u128) -> u128 {
    if size <= min {
        return 0;
    }
    (size / step).clamp(min, max)
}

/// The first free value of `lo..=hi`, scanning circularly from a random
/// point; `None` when every value is taken.
fn scan(lo: u128, hi: u128, taken: impl Fn(u128) -> bool) -> Option<u128> {
    if hi < lo {
        return None;
    }
    let span = hi - lo;
    let start = random_below(span.saturating_add(1));
    let mut step = 0u128;
    loop {
        // Wraps to `lo` past `hi` without overflowing on huge IPv6 ranges.
        let offset = if step <= span - start {
            start + step
        } else {
            step - (span - start) - 1
        };
        let candidate = lo + offset;
        if !taken(candidate) {
            return Some(candidate);
        }
        if step == span {
            return None;
        }
        step += 1;
    }
}

/// Picks from the upper band of `first..=last` first, then the lower one.
fn pick(first: u128, last: u128, band: u128, taken: impl Fn(u128) -> bool) -> Option<u128> {
    let split = first.saturating_add(band);
    scan(split, last, &taken)
        .or_else(|| (band > 0).then(|| scan(first, split - 1, &taken)).flatten())
}

fn ip_value(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn ip_from(value: u128, v4: bool) -> Option<IpAddr> {
    if v4 {
        u32::try_from(value)
            .ok()
            .map(|v| IpAddr::from(v.to_be_bytes()))
    } else {
        Some(IpAddr::from(value.to_be_bytes()))
    }
}

/// The usable addresses of one Service CIDR: not the network address, nor
/// the broadcast address of an IPv4 range (IPv6 ranges keep their last).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    pub cidr: Cidr,
    first: u128,
    last: u128,
    band: u128,
}

impl IpRange {
    /// `None` for a range without usable addresses (an IPv4 /31 or /32).
    pub fn new(cidr: Cidr) -> Option<IpRange> {
        let v4 = cidr.network().is_ipv4();
        let base = ip_value(cidr.network());
        let first = base.checked_add(1)?;
        let last = base.checked_add(cidr.size().checked_sub(1 + u128::from(v4))?)?;
        (first <= last).then_some(IpRange {
            cidr,
            first,
            last,
            band: static_band(cidr.size(), 16, 256, 16),
        })
    }

    pub fn is_ipv4(&self) -> bool {
        self.cidr.network().is_ipv4()
    }

    /// Whether `ip` is one of the range's usable addresses.
    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.is_ipv4() && (self.first..=self.last).contains(&ip_value(ip))
    }

    /// A free address (upper band first), or `None` when the range is full.
    pub fn pick(&self, used: &HashSet<IpAddr>, reserved: Option<IpAddr>) -> Option<IpAddr> {
        let v4 = self.is_ipv4();
        let taken = |value: u128| {
            ip_from(value, v4).is_none_or(|ip| used.contains(&ip) || Some(ip) == reserved)
        };
        pick(self.first, self.last, self.band, taken).and_then(|value| ip_from(value, v4))
    }
}

/// The NodePort range and the ports taken from it.
pub struct PortPool {
    pub range: PortRange,
    pub used: HashSet<u16>,
}

impl PortPool {
    pub fn new(range: PortRange) -> PortPool {
        PortPool {
            range,
            used: HashSet::new(),
        }
    }

    pub fn contains(&self, port: u16) -> bool {
        self.range.contains(u32::from(port))
    }

    /// `N-M`, as upstream's error messages print the range.
    pub fn describe(&self) -> String {
        let last = u32::from(self.range.base) + self.range.size.saturating_sub(1);
        format!("{}-{last}", self.range.base)
    }

    /// Takes a free port (upper band first); `None` when the range is full.
    pub fn allocate(&mut self) -> Option<u16> {
        let size = u128::from(self.range.size);
        let first = u128::from(self.range.base);
        let last = (first + size).checked_sub(1)?;
        let used = &self.used;
        let taken = |value: u128| u16::try_from(value).map_or(true, |p| used.contains(&p));
        let port = pick(first, last, static_band(size, 16, 128, 32), taken)?;
        let port = u16::try_from(port).ok()?;
        self.used.insert(port);
        Some(port)
    }
}
