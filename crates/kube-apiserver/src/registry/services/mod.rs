//! Services: ClusterIPs from `--service-cluster-ip-range` and NodePorts
//! from `--service-node-port-range` (upstream's service REST storage and
//! its allocators). Addresses are reserved after validation, given back
//! when the Service is deleted or not stored, and rebuilt from storage at
//! startup (the repair controller).

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::NameValidator;
use apiserver::registry::table::TableColumn;
use apiserver::registry::Strategy;
use serde_json::{json, Value};

use super::ResourceStrategy;
use crate::options::{Cidr, PortRange};

/// Free and used addresses of one range.
struct IpPool {
    range: Cidr,
    used: BTreeSet<u128>,
    /// Never handed out dynamically: the `kubernetes` Service's address.
    reserved: Option<u128>,
}

fn ip_to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

impl IpPool {
    fn base(&self) -> u128 {
        ip_to_u128(self.range.network())
    }

    /// Offset of `ip` in the range, if it is a usable address of it (not
    /// the network address, nor the broadcast address of an IPv4 range).
    fn offset(&self, ip: IpAddr) -> Option<u128> {
        if ip.is_ipv4() != self.range.network().is_ipv4() {
            return None;
        }
        let offset = ip_to_u128(ip).checked_sub(self.base())?;
        let last = self.range.size().saturating_sub(u128::from(ip.is_ipv4()));
        (offset >= 1 && offset < last).then_some(offset)
    }

    fn address(&self, offset: u128) -> IpAddr {
        let value = self.base() + offset;
        match self.range.network() {
            IpAddr::V4(_) => IpAddr::from(u32::try_from(value).unwrap_or(0).to_be_bytes()),
            IpAddr::V6(_) => IpAddr::from(value.to_be_bytes()),
        }
    }

    fn allocate(&mut self) -> Option<IpAddr> {
        let is_v4 = self.range.network().is_ipv4();
        let last = self.range.size().saturating_sub(u128::from(is_v4));
        let offset = (1..last).find(|o| !self.used.contains(o) && Some(*o) != self.reserved)?;
        self.used.insert(offset);
        Some(self.address(offset))
    }
}

struct PortPool {
    range: PortRange,
    used: BTreeSet<u16>,
}

impl PortPool {
    fn contains(&self, port: u16) -> bool {
        let base = u32::from(self.range.base);
        (base..base + self.range.size).contains(&u32::from(port))
    }

    fn allocate(&mut self) -> Option<u16> {
        let base = u32::from(self.range.base);
        let port = (base..base + self.range.size)
            .filter_map(|p| u16::try_from(p).ok())
            .find(|p| !self.used.contains(p))?;
        self.used.insert(port);
        Some(port)
    }
}

pub struct ServiceAllocator {
    ips: Mutex<IpPool>,
    ports: Mutex<PortPool>,
}

impl ServiceAllocator {
    /// `api_server_ip` (the `kubernetes` Service's address) is only given
    /// to a Service that asks for it.
    pub fn new(range: Cidr, ports: PortRange, api_server_ip: Option<IpAddr>) -> Arc<Self> {
        let mut pool = IpPool {
            range,
            used: BTreeSet::new(),
            reserved: None,
        };
        pool.reserved = api_server_ip.and_then(|ip| pool.offset(ip));
        Arc::new(ServiceAllocator {
            ips: Mutex::new(pool),
            ports: Mutex::new(PortPool {
                range: ports,
                used: BTreeSet::new(),
            }),
        })
    }

    /// Marks the addresses of a stored Service as used (repair at startup).
    pub fn mark_used(&self, svc: &Value) {
        if let Ok(mut ips) = self.ips.lock() {
            for ip in cluster_ips(svc) {
                if let Some(offset) = ips.offset(ip) {
                    ips.used.insert(offset);
                }
            }
        }
        if let Ok(mut ports) = self.ports.lock() {
            ports.used.extend(node_ports(svc));
        }
    }

    fn release(&self, svc: &Value) {
        if let Ok(mut ips) = self.ips.lock() {
            for ip in cluster_ips(svc) {
                if let Some(offset) = ips.offset(ip) {
                    ips.used.remove(&offset);
                }
            }
        }
        if let Ok(mut ports) = self.ports.lock() {
            for port in node_ports(svc) {
                ports.used.remove(&port);
            }
        }
    }

    // One call per Service create; the error is only built on failure.
    #[allow(clippy::result_large_err)]
    fn assign_cluster_ip(&self, svc: &mut Value) -> Result<bool, FieldError> {
        let path = Path::new("spec").child("clusterIPs").index(0);
        let requested = svc
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("");
        if requested == "None" {
            svc["spec"]["clusterIPs"] = json!(["None"]);
            return Ok(false);
        }
        let Ok(mut ips) = self.ips.lock() else {
            return Err(FieldError::internal(&path, "allocator unavailable"));
        };
        let ip = if requested.is_empty() {
            ips.allocate().ok_or_else(|| {
                FieldError::internal(&path, "failed to allocate a serviceIP: range is full")
            })?
        } else {
            let ip: IpAddr = requested.parse().map_err(|_| {
                FieldError::invalid(&path, json!(requested), "must be a valid IP address")
            })?;
            let range = ips.range.to_string();
            let offset = ips.offset(ip).ok_or_else(|| {
                FieldError::invalid(&path, json!(requested), format!("failed to allocate IP {requested}: provided IP is not in the valid range. The range of valid IPs is {range}"))
            })?;
            if !ips.used.insert(offset) {
                return Err(FieldError::invalid(
                    &path,
                    json!(requested),
                    format!("failed to allocate IP {requested}: provided IP is already allocated"),
                ));
            }
            ip
        };
        let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
        let spec = &mut svc["spec"];
        spec["clusterIP"] = json!(ip.to_string());
        spec["clusterIPs"] = json!([ip.to_string()]);
        spec["ipFamilies"] = json!([family]);
        if spec.get("ipFamilyPolicy").is_none() {
            spec["ipFamilyPolicy"] = json!("SingleStack");
        }
        Ok(true)
    }

    #[allow(clippy::result_large_err)]
    fn assign_node_ports(&self, svc: &mut Value) -> Result<bool, FieldError> {
        let Ok(mut pool) = self.ports.lock() else {
            return Err(FieldError::internal(
                &Path::new("spec"),
                "allocator unavailable",
            ));
        };
        let mut reserved = false;
        let count = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        for i in 0..count {
            let path = Path::new("spec").child("ports").index(i).child("nodePort");
            let port = &mut svc["spec"]["ports"][i];
            let requested = port.get("nodePort").and_then(Value::as_u64).unwrap_or(0);
            let assigned = if requested == 0 {
                pool.allocate()
                    .ok_or_else(|| FieldError::internal(&path, "range is full"))?
            } else {
                let p = u16::try_from(requested).unwrap_or(0);
                if !pool.contains(p) {
                    let r = &pool.range;
                    let last = u32::from(r.base) + r.size.saturating_sub(1);
                    return Err(FieldError::invalid(&path, json!(requested), format!("provided port is not in the valid range. The range of valid ports is {}-{last}", r.base)));
                }
                if !pool.used.insert(p) {
                    return Err(FieldError::invalid(
                        &path,
                        json!(requested),
                        "provided port is already allocated",
                    ));
                }
                p
            };
            port["nodePort"] = json!(assigned);
            reserved = true;
        }
        Ok(reserved)
    }
}

fn cluster_ips(svc: &Value) -> Vec<IpAddr> {
    let list = svc.pointer("/spec/clusterIPs").and_then(Value::as_array);
    let mut ips: Vec<IpAddr> = list
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str()?.parse().ok())
        .collect();
    if ips.is_empty() {
        ips.extend(
            svc.pointer("/spec/clusterIP")
                .and_then(|v| v.as_str()?.parse::<IpAddr>().ok()),
        );
    }
    ips
}

fn node_ports(svc: &Value) -> Vec<u16> {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| u16::try_from(p.get("nodePort")?.as_u64()?).ok())
        .filter(|p| *p != 0)
        .collect()
}

/// The Service strategy: the common behaviour plus address allocation.
pub struct ServiceStrategy {
    pub base: ResourceStrategy,
    pub allocator: Arc<ServiceAllocator>,
}

impl Strategy for ServiceStrategy {
    fn apply_defaults(&self, obj: &mut Value) {
        self.base.apply_defaults(obj)
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj)
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(new, old);
        // Allocated addresses stay with the Service unless the user sets them.
        for field in ["clusterIP", "clusterIPs", "ipFamilies"] {
            if new.pointer(&format!("/spec/{field}")).is_none() {
                if let Some(v) = old.pointer(&format!("/spec/{field}")) {
                    new["spec"][field] = v.clone();
                }
            }
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        self.base.validate(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.base.validate_update(new, old)
    }
    fn name_validator(&self) -> NameValidator {
        apimachinery::validation::name_is_dns1035_label
    }
    fn before_create(&self, svc: &mut Value) -> Result<bool, Vec<FieldError>> {
        let service_type = svc
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_owned();
        if service_type == "ExternalName" {
            return Ok(false);
        }
        let ip = self.allocator.assign_cluster_ip(svc).map_err(|e| vec![e])?;
        if matches!(service_type.as_str(), "NodePort" | "LoadBalancer") {
            if let Err(e) = self.allocator.assign_node_ports(svc) {
                self.allocator.release(svc);
                return Err(vec![e]);
            }
            return Ok(true);
        }
        Ok(ip)
    }
    fn release(&self, svc: &Value) {
        self.allocator.release(svc)
    }
    fn returns_deleted_object(&self) -> bool {
        true
    }
    fn table_columns(&self) -> Vec<TableColumn> {
        self.base.table_columns()
    }
    fn table_row(&self, obj: &Value) -> Vec<Value> {
        self.base.table_row(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn allocator() -> Arc<ServiceAllocator> {
        ServiceAllocator::new(
            Cidr::from_v4(Ipv4Addr::new(10, 0, 0, 0), 29),
            PortRange {
                base: 30000,
                size: 3,
            },
            Some(IpAddr::from([10, 0, 0, 1])),
        )
    }

    fn strategy() -> ServiceStrategy {
        ServiceStrategy {
            base: super::super::core::services(),
            allocator: allocator(),
        }
    }

    #[test]
    fn cluster_ips_are_unique_released_and_bounded() {
        let s = strategy();
        let mut svcs = Vec::new();
        for _ in 0..5 {
            let mut svc = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
            assert_eq!(s.before_create(&mut svc), Ok(true));
            svcs.push(svc);
        }
        let ips: BTreeSet<String> = svcs
            .iter()
            .map(|s| s["spec"]["clusterIP"].as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(ips.len(), 5);
        assert!(!ips.contains("10.0.0.0") && !ips.contains("10.0.0.7"));
        // The reserved address is handed out only on request.
        assert!(!ips.contains("10.0.0.1"));
        let mut full = json!({"spec": {"type": "ClusterIP"}});
        assert!(s.before_create(&mut full).is_err());
        s.release(&svcs[0]);
        let mut again = json!({"spec": {"type": "ClusterIP"}});
        assert_eq!(s.before_create(&mut again), Ok(true));
        assert_eq!(again["spec"]["clusterIP"], svcs[0]["spec"]["clusterIP"]);
    }

    #[test]
    fn requested_addresses_are_checked() {
        let s = strategy();
        let mut api = json!({"spec": {"clusterIP": "10.0.0.1"}});
        assert_eq!(s.before_create(&mut api), Ok(true));
        let mut a = json!({"spec": {"clusterIP": "10.0.0.3"}});
        assert_eq!(s.before_create(&mut a), Ok(true));
        let mut dup = json!({"spec": {"clusterIP": "10.0.0.3"}});
        let err = s.before_create(&mut dup).expect_err("duplicate");
        assert!(
            err[0]
                .to_string()
                .contains("provided IP is already allocated"),
            "{err:?}"
        );
        let mut outside = json!({"spec": {"clusterIP": "192.168.0.1"}});
        let err = s.before_create(&mut outside).expect_err("outside");
        assert!(
            err[0].to_string().contains("not in the valid range"),
            "{err:?}"
        );
    }

    #[test]
    fn node_ports_allocate_and_conflict() {
        let s = strategy();
        let mut np = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81, "nodePort": 30002}]}});
        assert_eq!(s.before_create(&mut np), Ok(true));
        assert_eq!(np["spec"]["ports"][0]["nodePort"], 30000);
        let mut clash =
            json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30002}]}});
        let err = s.before_create(&mut clash).expect_err("clash");
        assert!(
            err[0]
                .to_string()
                .contains("provided port is already allocated"),
            "{err:?}"
        );
        let mut headless = json!({"spec": {"clusterIP": "None"}});
        assert_eq!(s.before_create(&mut headless), Ok(false));
    }
}
