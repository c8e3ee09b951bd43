//! The Service address allocator: which ClusterIPs and NodePorts are
//! taken, and the picks for new Services. The ranges are the
//! `--service-cluster-ip-range` one plus those of the other ready
//! ServiceCIDRs (upstream's MetaAllocator takes from any ready one); the
//! taken addresses are shared by all ranges, as IPAddress objects are.
//! One mutex per pool keeps concurrent creates collision-free.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use apimachinery::field_errors::{FieldError, Path};
use serde_json::{json, Value};

use super::pool::{IpRange, PortPool};
use super::{cluster_ips, node_ports};
use crate::options::{Cidr, PortRange};

struct IpState {
    /// The `--service-cluster-ip-range` range; `None` when it has no
    /// usable address.
    primary: Option<IpRange>,
    /// The ranges of other ready ServiceCIDRs, by object name.
    extra: BTreeMap<String, Vec<IpRange>>,
    used: HashSet<IpAddr>,
    /// Never handed out dynamically: the `kubernetes` Service's address.
    reserved: Option<IpAddr>,
}

impl IpState {
    /// The ranges a dynamic pick of the primary family may come from.
    fn ranges(&self) -> impl Iterator<Item = &IpRange> {
        let v4 = self.primary.as_ref().map(IpRange::is_ipv4);
        self.primary
            .iter()
            .chain(self.extra.values().flatten())
            .filter(move |r| Some(r.is_ipv4()) == v4)
    }

    fn in_range(&self, ip: IpAddr) -> bool {
        self.primary
            .iter()
            .chain(self.extra.values().flatten())
            .any(|r| r.contains(ip))
    }
}

/// What Services hold: ClusterIPs and NodePorts.
pub struct ServiceAllocator {
    ips: Mutex<IpState>,
    ports: Mutex<PortPool>,
}

/// Upstream's IP family names.
pub fn ip_family(ip: IpAddr) -> &'static str {
    if ip.is_ipv4() {
        "IPv4"
    } else {
        "IPv6"
    }
}

impl ServiceAllocator {
    /// `api_server_ip` (the `kubernetes` Service's address) is only given
    /// to a Service that asks for it.
    pub fn new(range: Cidr, ports: PortRange, api_server_ip: Option<IpAddr>) -> Arc<Self> {
        Arc::new(ServiceAllocator {
            ips: Mutex::new(IpState {
                primary: IpRange::new(range),
                extra: BTreeMap::new(),
                used: HashSet::new(),
                reserved: api_server_ip,
            }),
            ports: Mutex::new(PortPool::new(ports)),
        })
    }

    /// Marks the addresses of a stored Service as used (repair at startup).
    pub fn mark_used(&self, svc: &Value) {
        for ip in cluster_ips(svc) {
            self.mark_ip_used(ip);
        }
        if let Ok(mut ports) = self.ports.lock() {
            ports.used.extend(node_ports(svc));
        }
    }

    /// Marks an address as taken (an IPAddress object holds it).
    pub fn mark_ip_used(&self, ip: IpAddr) {
        if let Ok(mut ips) = self.ips.lock() {
            ips.used.insert(ip);
        }
    }

    /// Gives an address back (its IPAddress object is gone).
    pub fn release_ip(&self, ip: IpAddr) {
        if let Ok(mut ips) = self.ips.lock() {
            ips.used.remove(&ip);
        }
    }

    /// Sets the ranges a ServiceCIDR adds (`None` or empty: it adds none,
    /// being gone, not ready or being deleted).
    pub fn set_service_cidr(&self, name: &str, cidrs: Option<Vec<Cidr>>) {
        let Ok(mut ips) = self.ips.lock() else {
            return;
        };
        let ranges: Vec<IpRange> = cidrs
            .into_iter()
            .flatten()
            .filter_map(IpRange::new)
            .collect();
        if ranges.is_empty() {
            ips.extra.remove(name);
        } else {
            ips.extra.insert(name.to_owned(), ranges);
        }
    }

    pub(super) fn release_cluster_ips(&self, svc: &Value) {
        if let Ok(mut ips) = self.ips.lock() {
            for ip in cluster_ips(svc) {
                ips.used.remove(&ip);
            }
        }
    }

    pub(super) fn release(&self, svc: &Value) {
        self.release_cluster_ips(svc);
        if let Ok(mut ports) = self.ports.lock() {
            for port in node_ports(svc) {
                ports.used.remove(&port);
            }
        }
    }

    /// Takes the Service's ClusterIP: the one asked for, or a dynamic pick.
    /// Returns whether one was taken (not for headless Services).
    // One call per Service create; the error is only built on failure.
    #[allow(clippy::result_large_err)]
    pub(super) fn assign_cluster_ip(&self, svc: &mut Value) -> Result<bool, FieldError> {
        let path = Path::new("spec").child("clusterIPs");
        let requested = svc
            .pointer("/spec/clusterIPs/0")
            .or_else(|| svc.pointer("/spec/clusterIP"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if requested == "None" {
            svc["spec"]["clusterIP"] = json!("None");
            svc["spec"]["clusterIPs"] = json!(["None"]);
            return Ok(false);
        }
        let Ok(mut ips) = self.ips.lock() else {
            return Err(FieldError::internal(&path, "allocator unavailable"));
        };
        let ip = if requested.is_empty() {
            let (used, reserved) = (&ips.used, ips.reserved);
            let ip = ips.ranges().find_map(|r| r.pick(used, reserved));
            let ip = ip.ok_or_else(|| {
                FieldError::internal(&path, "failed to allocate a serviceIP: range is full")
            })?;
            ips.used.insert(ip);
            ip
        } else {
            let listed = svc.pointer("/spec/clusterIPs").cloned();
            let shown = listed.unwrap_or_else(|| json!([requested]));
            let failed = |why: &str| {
                let message = format!("failed to allocate IP {requested}: {why}");
                FieldError::invalid(&path, shown.clone(), message)
            };
            let ip: IpAddr = requested
                .parse()
                .map_err(|_| failed("must be a valid IP address"))?;
            if !ips.in_range(ip) {
                return Err(failed(
                    "the provided network does not match the current range",
                ));
            }
            if !ips.used.insert(ip) {
                return Err(failed("provided IP is already allocated"));
            }
            ip
        };
        drop(ips);
        let spec = &mut svc["spec"];
        spec["clusterIP"] = json!(ip.to_string());
        spec["clusterIPs"] = json!([ip.to_string()]);
        spec["ipFamilies"] = json!([ip_family(ip)]);
        if spec.get("ipFamilyPolicy").is_none() {
            spec["ipFamilyPolicy"] = json!("SingleStack");
        }
        Ok(true)
    }

    /// Takes every port's NodePort: the one asked for, or a dynamic pick.
    #[allow(clippy::result_large_err)]
    pub(super) fn assign_node_ports(&self, svc: &mut Value) -> Result<bool, FieldError> {
        let Ok(mut pool) = self.ports.lock() else {
            return Err(FieldError::internal(
                &Path::new("spec"),
                "allocator unavailable",
            ));
        };
        let requested: Vec<u64> = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| p.get("nodePort").and_then(Value::as_u64).unwrap_or(0))
            .collect();
        // Ports asked for are taken before the dynamic picks could be.
        let order = (0..requested.len())
            .filter(|i| requested[*i] != 0)
            .chain((0..requested.len()).filter(|i| requested[*i] == 0));
        let mut taken = Vec::with_capacity(requested.len());
        let mut result = Ok(());
        for i in order {
            let path = Path::new("spec").child("ports").index(i).child("nodePort");
            let assigned = match requested[i] {
                0 => pool.allocate().ok_or_else(|| {
                    FieldError::internal(&path, "failed to allocate a nodePort: range is full")
                }),
                asked => {
                    let p = u16::try_from(asked).unwrap_or(0);
                    if !pool.contains(p) {
                        let range = pool.describe();
                        Err(FieldError::invalid(&path, json!(asked), format!("provided port is not in the valid range. The range of valid ports is {range}")))
                    } else if !pool.used.insert(p) {
                        Err(FieldError::invalid(
                            &path,
                            json!(asked),
                            "provided port is already allocated",
                        ))
                    } else {
                        Ok(p)
                    }
                }
            };
            match assigned {
                Ok(p) => {
                    svc["spec"]["ports"][i]["nodePort"] = json!(p);
                    taken.push(p);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if let Err(e) = result {
            // Ports of this Service taken before the failure go back.
            for p in taken {
                pool.used.remove(&p);
            }
            return Err(e);
        }
        Ok(!taken.is_empty())
    }
}
