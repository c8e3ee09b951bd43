//! Services: ClusterIPs from the Service CIDRs (`--service-cluster-ip-range`
//! and any other ready ServiceCIDR) and NodePorts from
//! `--service-node-port-range` (upstream's service REST storage and its
//! allocators). Addresses are reserved after validation, given back when
//! the Service is deleted or not stored, recorded as IPAddress objects,
//! and rebuilt from storage at startup (the repair controllers).

mod allocator;
pub mod ipallocator;
mod pool;
#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::sync::Arc;

use apimachinery::field_errors::FieldError;
use apimachinery::validation::NameValidator;
use apiserver::registry::rest::{BeginCreate, CreateStrategy, UpdateStrategy};
use apiserver::registry::store::Strategies;
use serde_json::Value;

use super::ResourceStrategy;
pub use allocator::{ip_family, ServiceAllocator};

/// The ClusterIPs a Service holds.
pub fn cluster_ips(svc: &Value) -> Vec<IpAddr> {
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

impl ServiceStrategy {
    /// The store's strategies: create, update and the address reservation
    /// are the Service's own, the rest `base`'s; a delete answers with the
    /// Service (upstream's `ReturnDeletedObject`).
    pub fn into_strategies(self) -> Strategies {
        let base = self.base.clone().into_strategies();
        let s = Arc::new(self);
        Strategies {
            create: s.clone(),
            begin_create: s.clone(),
            update: s,
            return_deleted_object: true,
            ..base
        }
    }
}

impl CreateStrategy for ServiceStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        self.base.prepare_for_create(obj)
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        self.base.validate(obj)
    }
    fn name_validator(&self) -> NameValidator {
        apimachinery::validation::name_is_dns1035_label
    }
}

impl UpdateStrategy for ServiceStrategy {
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
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.base.validate_update(new, old)
    }
}

impl BeginCreate for ServiceStrategy {
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
                self.allocator.release_cluster_ips(svc);
                return Err(vec![e]);
            }
            return Ok(true);
        }
        Ok(ip)
    }
    fn release(&self, svc: &Value) {
        self.allocator.release(svc)
    }
}
