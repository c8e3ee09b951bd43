//! Completion: values derived from other options (advertise address,
//! service IP range, storage backend, authorization chain, feature gates),
//! as upstream's `Complete` fills them in.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, UdpSocket};
use std::path::PathBuf;

use super::feature_gates::{self, FeatureGates};
use super::syntax::Cidr;
use super::{OptionError, Options};

/// Concurrent HTTP/2 streams per connection when
/// `--http2-max-streams-per-connection` is 0 (upstream's serving default).
pub const DEFAULT_HTTP2_MAX_STREAMS: u32 = 100;

/// The authorizers used when neither `--authorization-mode` nor
/// `--authorization-config` is given: what kubeadm and k3s configure, so a
/// server started without flags is not open to every identity. Upstream's
/// own default is `AlwaysAllow`; pass it explicitly to get that.
pub const DEFAULT_AUTHORIZATION_MODES: &[&str] = &["Node", "RBAC"];

/// Where objects are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageBackend {
    /// The embedded store, kept in `dir` (under `--data-dir`).
    Embedded { dir: PathBuf },
    /// etcd at these endpoints (see [`super::EtcdOptions`] for TLS).
    Etcd { servers: Vec<String> },
}

/// The service cluster IP ranges and the IP of the `kubernetes` service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceIpRanges {
    pub primary: Cidr,
    /// The second range of a dual-stack cluster.
    pub secondary: Option<Cidr>,
    /// The first usable address of `primary`.
    pub api_server_service_ip: IpAddr,
}

/// A TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls10,
    Tls11,
    Tls12,
    Tls13,
}

impl TlsVersion {
    /// Parses upstream's names, `VersionTLS10` to `VersionTLS13`.
    pub fn from_flag(name: &str) -> Option<Self> {
        match name {
            "VersionTLS10" => Some(Self::Tls10),
            "VersionTLS11" => Some(Self::Tls11),
            "VersionTLS12" => Some(Self::Tls12),
            "VersionTLS13" => Some(Self::Tls13),
            _ => None,
        }
    }
}

/// Options with every derived value filled in. Values that could not be
/// derived from invalid input fall back to defaults; [`Self::validate`]
/// reports the invalid input, so check it before using them.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedOptions {
    pub options: Options,
    /// `--advertise-address`, else `--bind-address` if specific, else the
    /// address of the host's default route.
    pub advertise_address: IpAddr,
    /// `--external-hostname`, else the advertise address.
    pub external_hostname: String,
    pub storage: StorageBackend,
    pub service_ip_ranges: ServiceIpRanges,
    /// `--authorization-mode`, or [`DEFAULT_AUTHORIZATION_MODES`] when empty.
    pub authorization_modes: Vec<String>,
    /// `--runtime-config` with the core group's aliases (`v1`, `api/v1`)
    /// rewritten to `/v1` and `api/legacy` dropped.
    pub runtime_config: BTreeMap<String, String>,
    /// Every known feature gate and whether it is on.
    pub feature_gates: FeatureGates,
    /// `--tls-min-version`, `None` when not given.
    pub tls_min_version: Option<TlsVersion>,
    /// `--http2-max-streams-per-connection`, or 100 when it is 0.
    pub http2_max_concurrent_streams: u32,
    pub(super) feature_gate_errors: Vec<String>,
}

impl Options {
    /// Fills in the values upstream derives from other options.
    pub fn complete(self) -> CompletedOptions {
        let advertise_address = resolve_advertise_address(
            self.generic.advertise_address,
            self.secure_serving.bind_address,
        );
        let external_hostname = if self.generic.external_hostname.is_empty() {
            advertise_address.to_string()
        } else {
            self.generic.external_hostname.clone()
        };
        let storage = if self.etcd.servers.is_empty() {
            StorageBackend::Embedded {
                dir: self.data_dir.join("storage"),
            }
        } else {
            StorageBackend::Etcd {
                servers: self.etcd.servers.clone(),
            }
        };
        let service_ip_ranges =
            service_ip_ranges(&self.service_cluster_ip_range).unwrap_or_else(|_| default_ranges());
        let authorization_modes = if self.authorization_modes.is_empty() {
            DEFAULT_AUTHORIZATION_MODES
                .iter()
                .map(|mode| mode.to_string())
                .collect()
        } else {
            self.authorization_modes.clone()
        };
        let runtime_config = normalize_runtime_config(&self.runtime_config);
        let (feature_gates, feature_gate_errors) =
            feature_gates::resolve(&self.generic.feature_gates);
        let tls_min_version = TlsVersion::from_flag(&self.secure_serving.tls_min_version);
        let http2_max_concurrent_streams =
            u32::try_from(self.secure_serving.http2_max_streams_per_connection)
                .ok()
                .filter(|streams| *streams > 0)
                .unwrap_or(DEFAULT_HTTP2_MAX_STREAMS);
        CompletedOptions {
            options: self,
            advertise_address,
            external_hostname,
            storage,
            service_ip_ranges,
            authorization_modes,
            runtime_config,
            feature_gates,
            tls_min_version,
            http2_max_concurrent_streams,
            feature_gate_errors,
        }
    }
}

fn resolve_advertise_address(advertise: Option<IpAddr>, bind: IpAddr) -> IpAddr {
    if let Some(ip) = advertise.filter(|ip| !ip.is_unspecified()) {
        return ip;
    }
    if !bind.is_unspecified() {
        return bind;
    }
    let loopback = match bind {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    };
    default_route_address(bind).unwrap_or(loopback)
}

/// The local address the kernel picks for the default route. Connecting a
/// UDP socket sends nothing; it only consults the routing table.
fn default_route_address(bind: IpAddr) -> Option<IpAddr> {
    let probe = |local: IpAddr, remote: IpAddr| {
        let socket = UdpSocket::bind((local, 0)).ok()?;
        socket.connect((remote, 53)).ok()?;
        let address = socket.local_addr().ok()?.ip();
        (!address.is_unspecified() && !address.is_loopback()).then_some(address)
    };
    // Documentation addresses (RFC 5737, RFC 3849): routed by default, never contacted.
    let v4 = || {
        probe(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        )
    };
    let v6 = || {
        probe(
            IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        )
    };
    // Like upstream, an unspecified IPv6 bind address still prefers IPv4.
    match bind {
        IpAddr::V4(_) => v4(),
        IpAddr::V6(_) => v4().or_else(v6),
    }
}

fn default_ranges() -> ServiceIpRanges {
    let primary: Cidr = Cidr::default_service_range();
    ServiceIpRanges {
        primary,
        secondary: None,
        api_server_service_ip: primary.nth(1).unwrap_or(primary.network()),
    }
}

/// Parses `--service-cluster-ip-range` (empty: the default range). Errors
/// name the flag as upstream's validation does.
pub(super) fn service_ip_ranges(flag: &str) -> Result<ServiceIpRanges, Vec<OptionError>> {
    const FLAG: &str = "service-cluster-ip-range";
    if flag.trim().is_empty() {
        return Ok(default_ranges());
    }
    let entries: Vec<&str> = flag.split(',').collect();
    let mut errors = Vec::new();
    if entries.len() > 2 {
        errors.push(OptionError::new(
            FLAG,
            "must not contain more than two entries",
        ));
    }
    let mut cidrs = Vec::new();
    for (index, entry) in entries.iter().take(2).enumerate() {
        match entry.parse::<Cidr>() {
            Ok(cidr) if cidr.size() < 8 => errors.push(OptionError::new(
                FLAG,
                format!("{cidr} is too small; the service cluster IP range must hold at least 8 IP addresses"),
            )),
            Ok(cidr) => cidrs.push(cidr),
            Err(_) => errors.push(OptionError::new(
                FLAG,
                format!("entry [{index}] {:?} is not a valid CIDR", entry.trim()),
            )),
        }
    }
    if let [first, second] = cidrs.as_slice() {
        if first.address_bits() == second.address_bits() {
            errors.push(OptionError::new(
                FLAG,
                "[0] and [1] must be of different IP families",
            ));
        }
    }
    let primary = match cidrs.first() {
        Some(primary) if errors.is_empty() => *primary,
        _ => return Err(errors),
    };
    Ok(ServiceIpRanges {
        primary,
        secondary: cidrs.get(1).copied(),
        api_server_service_ip: primary.nth(1).unwrap_or(primary.network()),
    })
}

fn normalize_runtime_config(config: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut normalized = BTreeMap::new();
    for (key, value) in config {
        let core =
            key == "v1" || key.starts_with("v1/") || key == "api/v1" || key.starts_with("api/v1/");
        if core {
            normalized.insert("/v1".to_string(), value.clone());
        } else if key != "api/legacy" {
            normalized.insert(key.clone(), value.clone());
        }
    }
    normalized
}

impl Cidr {
    /// `10.0.0.0/24`, upstream's default service range.
    pub fn default_service_range() -> Cidr {
        Cidr::from_v4(Ipv4Addr::new(10, 0, 0, 0), 24)
    }
}
