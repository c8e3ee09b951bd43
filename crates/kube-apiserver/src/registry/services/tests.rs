//! Tests of the Service address allocator and strategy.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use apiserver::registry::rest::BeginCreate;
use serde_json::{json, Value};

use super::pool::IpRange;
use super::{ServiceAllocator, ServiceStrategy};
use crate::options::{Cidr, PortRange};

fn allocator(prefix: u8, ports: u32) -> Arc<ServiceAllocator> {
    ServiceAllocator::new(
        Cidr::from_v4(Ipv4Addr::new(10, 0, 0, 0), prefix),
        PortRange {
            base: 30000,
            size: ports,
        },
        Some(IpAddr::from([10, 0, 0, 1])),
    )
}

fn strategy_with(allocator: Arc<ServiceAllocator>) -> ServiceStrategy {
    ServiceStrategy {
        base: super::super::core::services(),
        allocator,
    }
}

fn strategy() -> ServiceStrategy {
    strategy_with(allocator(29, 3))
}

fn ip_of(svc: &Value) -> IpAddr {
    let ip = svc["spec"]["clusterIP"].as_str().unwrap_or("");
    ip.parse()
        .unwrap_or_else(|_| panic!("no clusterIP in {svc}"))
}

fn last_octet(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(v4) => v4.octets()[3],
        IpAddr::V6(_) => panic!("not IPv4: {ip}"),
    }
}

fn create(s: &ServiceStrategy, spec: Value) -> Result<Value, String> {
    let mut svc = json!({ "spec": spec });
    s.before_create(&mut svc).map(|_| svc).map_err(|e| {
        e.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

#[test]
fn cluster_ips_are_unique_released_and_bounded() {
    let s = strategy();
    let mut svcs = Vec::new();
    for _ in 0..5 {
        let svc = create(&s, json!({"type": "ClusterIP", "ports": [{"port": 80}]}));
        svcs.push(svc.unwrap_or_else(|e| panic!("{e}")));
    }
    let ips: BTreeSet<u8> = svcs.iter().map(|s| last_octet(ip_of(s))).collect();
    // .0 and .7 are the network and broadcast addresses; .1 is reserved
    // for the `kubernetes` Service.
    assert_eq!(ips, BTreeSet::from([2, 3, 4, 5, 6]));
    let err = create(&s, json!({"type": "ClusterIP"})).expect_err("full");
    assert!(
        err.contains("failed to allocate a serviceIP: range is full"),
        "{err}"
    );
    s.release(&svcs[0]);
    let again = create(&s, json!({"type": "ClusterIP"})).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ip_of(&again), ip_of(&svcs[0]));
}

#[test]
fn requested_addresses_are_checked() {
    let s = strategy();
    let api = create(&s, json!({"clusterIP": "10.0.0.1"})).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(api["spec"]["clusterIPs"], json!(["10.0.0.1"]));
    assert_eq!(api["spec"]["ipFamilies"], json!(["IPv4"]));
    assert!(create(&s, json!({"clusterIPs": ["10.0.0.3"]})).is_ok());
    let err = create(
        &s,
        json!({"clusterIP": "10.0.0.3", "clusterIPs": ["10.0.0.3"]}),
    )
    .expect_err("duplicate");
    assert_eq!(
        err,
        "spec.clusterIPs: Invalid value: [\"10.0.0.3\"]: failed to allocate IP 10.0.0.3: provided IP is already allocated"
    );
    let err = create(&s, json!({"clusterIP": "192.168.0.1"})).expect_err("outside");
    assert!(
        err.contains("failed to allocate IP 192.168.0.1: the provided network does not match the current range"),
        "{err}"
    );
    let headless = create(&s, json!({"clusterIP": "None"})).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
}

#[test]
fn dynamic_cluster_ips_are_random_and_leave_the_static_band_for_last() {
    // A /24 holds 254 addresses; its static band is the lowest 16.
    let s = strategy_with(allocator(24, 3));
    let mut picks = Vec::new();
    for _ in 0..238 {
        let svc = create(&s, json!({})).unwrap_or_else(|e| panic!("{e}"));
        picks.push(last_octet(ip_of(&svc)));
    }
    assert!(picks.iter().all(|o| (17..=254).contains(o)), "{picks:?}");
    let unique: BTreeSet<u8> = picks.iter().copied().collect();
    assert_eq!(unique.len(), 238);
    let lowest_first: Vec<u8> = (17..=254).collect();
    assert_ne!(picks, lowest_first, "picks are not random");
    // Then the static band, but never the reserved .1.
    let mut low = BTreeSet::new();
    for _ in 0..15 {
        let svc = create(&s, json!({})).unwrap_or_else(|e| panic!("{e}"));
        low.insert(last_octet(ip_of(&svc)));
    }
    assert_eq!(low, (2..=16).collect());
    assert!(create(&s, json!({})).is_err());
}

#[test]
fn node_ports_allocate_and_conflict() {
    let s = strategy();
    let np = create(
        &s,
        json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30002}]}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let first = np["spec"]["ports"][0]["nodePort"].as_u64().unwrap_or(0);
    assert!((30000..30002).contains(&first), "{np}");
    let clash = json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30002}]});
    let err = create(&s, clash).expect_err("clash");
    assert!(err.contains("provided port is already allocated"), "{err}");
    let outside = json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 31000}]});
    let err = create(&s, outside).expect_err("outside");
    assert!(
        err.contains(
            "provided port is not in the valid range. The range of valid ports is 30000-30002"
        ),
        "{err}"
    );
    // The failed creates kept nothing: one port is left, then none.
    assert!(create(&s, json!({"type": "NodePort", "ports": [{"port": 1}]})).is_ok());
    let err = create(&s, json!({"type": "NodePort", "ports": [{"port": 1}]})).expect_err("full");
    assert!(
        err.contains("failed to allocate a nodePort: range is full"),
        "{err}"
    );
    // The ClusterIPs of Services whose NodePorts failed were given back:
    // of the five, the two stored Services hold two.
    let ips = (0..5)
        .map(|_| create(&s, json!({})))
        .filter(Result::is_ok)
        .count();
    assert_eq!(ips, 3);
}

#[test]
fn node_ports_prefer_the_upper_band_and_run_out() {
    // 100 ports: the static band is the lowest 16.
    let s = strategy_with(allocator(16, 100));
    let port = |svc: &Value| svc["spec"]["ports"][0]["nodePort"].as_u64().unwrap_or(0);
    let spec = json!({"type": "NodePort", "ports": [{"port": 80}]});
    let upper: Vec<u64> = (0..84)
        .map(|_| create(&s, spec.clone()).map(|svc| port(&svc)))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        upper.iter().all(|p| (30016..30100).contains(p)),
        "{upper:?}"
    );
    assert_ne!(upper, (30016..30100).collect::<Vec<_>>(), "not random");
    let lower: BTreeSet<u64> = (0..16)
        .map(|_| create(&s, spec.clone()).map(|svc| port(&svc)))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lower, (30000..30016).collect());
    let err = create(&s, spec).expect_err("full");
    assert!(err.contains("range is full"), "{err}");
}

#[test]
fn concurrent_creates_never_share_an_address() {
    let s = Arc::new(strategy_with(allocator(24, 2768)));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                (0..30)
                    .map(|_| {
                        let spec = json!({"type": "NodePort", "ports": [{"port": 80}]});
                        let svc = create(&s, spec).unwrap_or_else(|e| panic!("{e}"));
                        let port = svc["spec"]["ports"][0]["nodePort"].as_u64().unwrap_or(0);
                        (ip_of(&svc), port)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let all: Vec<(IpAddr, u64)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap_or_default())
        .collect();
    assert_eq!(all.len(), 240);
    let ips: BTreeSet<IpAddr> = all.iter().map(|(ip, _)| *ip).collect();
    let ports: BTreeSet<u64> = all.iter().map(|(_, p)| *p).collect();
    assert_eq!((ips.len(), ports.len()), (240, 240));
}

#[test]
fn other_service_cidrs_extend_the_ranges() {
    let alloc = allocator(30, 3);
    let s = strategy_with(alloc.clone());
    // 10.0.0.0/30 holds .1 (reserved) and .2.
    assert!(create(&s, json!({})).is_ok());
    assert!(create(&s, json!({})).is_err());
    let extra: Cidr = "10.1.0.0/30".parse().unwrap_or_else(|e| panic!("{e}"));
    alloc.set_service_cidr("extra", Some(vec![extra]));
    let svc = create(&s, json!({})).unwrap_or_else(|e| panic!("{e}"));
    assert!(ip_of(&svc).to_string().starts_with("10.1.0."), "{svc}");
    let taken = ip_of(&svc).to_string();
    let err = create(&s, json!({ "clusterIP": taken })).expect_err("taken");
    assert!(err.contains("provided IP is already allocated"), "{err}");
    alloc.set_service_cidr("extra", None);
    let err = create(&s, json!({"clusterIP": "10.1.0.2"})).expect_err("gone");
    assert!(err.contains("does not match the current range"), "{err}");
}

#[test]
fn ipv6_ranges_keep_their_last_address() {
    let cidr: Cidr = "fd00::/126".parse().unwrap_or_else(|e| panic!("{e}"));
    let range = IpRange::new(cidr).unwrap_or_else(|| panic!("no range"));
    let mut used = std::collections::HashSet::new();
    while let Some(ip) = range.pick(&used, None) {
        used.insert(ip);
    }
    let names: BTreeSet<String> = used.iter().map(ToString::to_string).collect();
    assert_eq!(
        names,
        BTreeSet::from(["fd00::1".into(), "fd00::2".into(), "fd00::3".into()])
    );
    let v4 = Cidr::from_v4(Ipv4Addr::new(10, 0, 0, 0), 31);
    assert!(IpRange::new(v4).is_none());
    // A huge range still picks at once.
    let huge: Cidr = "fd00::/64".parse().unwrap_or_else(|e| panic!("{e}"));
    let huge = IpRange::new(huge).unwrap_or_else(|| panic!("no range"));
    assert!(huge.pick(&used, None).is_some_and(|ip| huge.contains(ip)));
}
