//! Validation of the small cluster objects (upstream's
//! `pkg/apis/discovery/validation`, `pkg/apis/policy/validation`,
//! `pkg/apis/scheduling/validation`, `pkg/apis/coordination/validation` and
//! `pkg/apis/node/validation`): EndpointSlice addresses and ports,
//! PodDisruptionBudget budgets, PriorityClass values, Lease durations and
//! strategies, RuntimeClass handlers and scheduling.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::ip::{is_valid_ipv4_address, is_valid_ipv6_address};
use apimachinery::validation::object_meta::validate_labels;
use apimachinery::validation::selectors::{validate_label_selector, LabelSelectorOptions};
use apimachinery::validation::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};
use serde_json::Value;

use super::pod::PREEMPTION_POLICIES;
use super::pod_scheduling::validate_tolerations;
use super::update::{go_nullable, go_struct, invalid_typed};
use super::{dns_label, int, int_or_percent, invalid_all, items, set, text};

const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
/// The deprecated `IP` type is still accepted on update.
const ADDRESS_TYPES_ON_UPDATE: &[&str] = &["FQDN", "IP", "IPv4", "IPv6"];
const PORT_PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 100;
const MAX_TOPOLOGY_LABELS: usize = 16;
const EVICTION_POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;
/// Upstream's system priority classes: name and value (neither is a
/// global default).
const SYSTEM_PRIORITY_CLASSES: &[(&str, i64)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];
const LEASE_STRATEGIES: &[&str] = &["OldestEmulationVersion"];

/// Validates a created EndpointSlice (upstream's `ValidateEndpointSliceCreate`).
pub fn validate_endpoint_slice_create(obj: &Value) -> Vec<FieldError> {
    endpoint_slice(obj, ADDRESS_TYPES)
}

/// Validates an updated EndpointSlice: the new object, with the deprecated
/// `IP` address type allowed, then the fixed address type.
pub fn validate_endpoint_slice_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = endpoint_slice(new, ADDRESS_TYPES_ON_UPDATE);
    errs.extend(super::update_classes::validate_endpoint_slice_update(
        new, old,
    ));
    errs
}

fn endpoint_slice(obj: &Value, address_types: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let address_type = text(obj, "addressType");
    let type_path = Path::new("addressType");
    if address_type.is_empty() {
        errs.push(FieldError::required(&type_path, ""));
    } else if !address_types.contains(&address_type) {
        errs.push(FieldError::not_supported(
            &type_path,
            address_type,
            address_types,
        ));
    }
    let endpoints = items(obj, "endpoints");
    let path = Path::new("endpoints");
    if endpoints.len() > MAX_ENDPOINTS {
        errs.push(FieldError::too_many(
            &path,
            Some(endpoints.len()),
            Some(MAX_ENDPOINTS),
        ));
    } else {
        for (i, endpoint) in endpoints.iter().enumerate() {
            endpoint_entry(endpoint, address_type, &path.index(i), &mut errs);
        }
    }
    endpoint_ports(items(obj, "ports"), &Path::new("ports"), &mut errs);
    errs
}

fn endpoint_entry(endpoint: &Value, address_type: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let addresses = items(endpoint, "addresses");
    let addresses_path = path.child("addresses");
    if addresses.is_empty() {
        errs.push(FieldError::required(
            &addresses_path,
            "must contain at least 1 address",
        ));
    } else if addresses.len() > MAX_ADDRESSES {
        let n = addresses.len();
        errs.push(FieldError::too_many(
            &addresses_path,
            Some(n),
            Some(MAX_ADDRESSES),
        ));
    }
    for (i, address) in addresses.iter().enumerate() {
        let address = address.as_str().unwrap_or_default();
        let p = addresses_path.index(i);
        match address_type {
            "IP" => {
                let msgs = apimachinery::validation::ip::is_valid_ip_for_legacy_field(
                    &p,
                    address,
                    false,
                    &[],
                );
                errs.extend(msgs);
            }
            "IPv4" => {
                errs.extend(is_valid_ipv4_address(&p, address));
            }
            "IPv6" => {
                errs.extend(is_valid_ipv6_address(&p, address));
            }
            "FQDN" => fully_qualified_domain_name(&p, address, errs),
            _ => {}
        }
    }
    let topology_path = path.child("topology");
    let topology = set(endpoint, "deprecatedTopology");
    let labels = topology.and_then(Value::as_object).map_or(0, |t| t.len());
    if labels > MAX_TOPOLOGY_LABELS {
        errs.push(FieldError::too_many(
            &topology_path,
            Some(labels),
            Some(MAX_TOPOLOGY_LABELS),
        ));
    }
    validate_labels(topology, &topology_path, errs);
    if let Some(hostname) = endpoint.get("hostname").and_then(Value::as_str) {
        dns_label(&path.child("hostname"), hostname, errs);
    }
}

/// Upstream's `IsFullyQualifiedDomainName`: at least two DNS labels, a
/// trailing dot allowed.
fn fully_qualified_domain_name(path: &Path, value: &str, errs: &mut Vec<FieldError>) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let name = value.strip_suffix('.').unwrap_or(value);
    let msgs = is_dns1123_subdomain(name);
    if !msgs.is_empty() {
        errs.push(FieldError::invalid(path, name, msgs.join(",")));
        return;
    }
    if !name.contains('.') {
        let msg = "should be a domain with at least two segments separated by dots";
        errs.push(FieldError::invalid(path, name, msg));
        return;
    }
    for label in name.split('.') {
        let msgs = is_dns1123_label(label);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(path, label, msgs.join(",")));
            return;
        }
    }
}

fn endpoint_ports(ports: &[Value], path: &Path, errs: &mut Vec<FieldError>) {
    if ports.len() > MAX_PORTS {
        errs.push(FieldError::too_many(
            path,
            Some(ports.len()),
            Some(MAX_PORTS),
        ));
        return;
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        let name = text(port, "name");
        if !name.is_empty() {
            dns_label(&p.child("name"), name, errs);
        }
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        }
        match port.get("protocol").and_then(Value::as_str) {
            None => errs.push(FieldError::required(&p.child("protocol"), "")),
            Some(protocol) if !PORT_PROTOCOLS.contains(&protocol) => {
                errs.push(FieldError::not_supported(
                    &p.child("protocol"),
                    protocol,
                    PORT_PROTOCOLS,
                ));
            }
            Some(_) => {}
        }
        if let Some(app) = port.get("appProtocol").and_then(Value::as_str) {
            invalid_all(&p.child("appProtocol"), app, is_qualified_name(app), errs);
        }
    }
}

/// Validates a PodDisruptionBudget (upstream's
/// `ValidatePodDisruptionBudgetSpec`).
pub fn validate_pod_disruption_budget(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let min = set(spec, "minAvailable");
    let max = set(spec, "maxUnavailable");
    if min.is_some() && max.is_some() {
        let mut selector = go_nullable(spec, "selector");
        if !selector.is_null() {
            let kind = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector";
            go_json::normalize_as(kind, &mut selector);
        }
        let shown = go_struct(&[
            ("MinAvailable", go_nullable(spec, "minAvailable")),
            ("Selector", selector),
            ("MaxUnavailable", go_nullable(spec, "maxUnavailable")),
            (
                "UnhealthyPodEvictionPolicy",
                go_nullable(spec, "unhealthyPodEvictionPolicy"),
            ),
        ]);
        let msg = "minAvailable and maxUnavailable cannot be both set";
        errs.push(invalid_typed(&path, &shown, msg));
    }
    for (key, value) in [("minAvailable", min), ("maxUnavailable", max)] {
        if let Some(value) = value {
            int_or_percent(value, &path.child(key), &mut errs);
        }
    }
    let opts = LabelSelectorOptions::default();
    errs.extend(validate_label_selector(
        spec.get("selector"),
        opts,
        &path.child("selector"),
    ));
    let policy = spec
        .get("unhealthyPodEvictionPolicy")
        .and_then(Value::as_str);
    if let Some(policy) = policy.filter(|p| !EVICTION_POLICIES.contains(p)) {
        let policy_path = path.child("unhealthyPodEvictionPolicy");
        errs.push(FieldError::not_supported(
            &policy_path,
            policy,
            EVICTION_POLICIES,
        ));
    }
    errs
}

/// Validates a PriorityClass (upstream's `ValidatePriorityClass`): names
/// with the `system-` prefix are the built-in classes, others stay at or
/// below the highest user-definable value.
pub fn validate_priority_class(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let value = int(obj, "value").unwrap_or_default();
    if name.starts_with("system-") {
        let global_default = super::is_true(obj, "globalDefault");
        let problem = match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((n, v)) if *v != value => Some(format!("value of {n} PriorityClass must be {v}")),
            Some((n, _)) if global_default => {
                Some(format!("globalDefault of {n} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            let msg = format!(
                "priority class names with 'system-' prefix are reserved for system use only. error: {problem}"
            );
            errs.push(FieldError::forbidden(
                &Path::new("metadata").child("name"),
                msg,
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        let msg =
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}");
        errs.push(FieldError::forbidden(&Path::new("value"), msg));
    }
    if let Some(policy) = obj.get("preemptionPolicy").and_then(Value::as_str) {
        let path = Path::new("preemptionPolicy");
        if policy.is_empty() {
            errs.push(FieldError::required(&path, ""));
        } else if !PREEMPTION_POLICIES.contains(&policy) {
            errs.push(FieldError::not_supported(
                &path,
                policy,
                PREEMPTION_POLICIES,
            ));
        }
    }
    errs
}

/// Validates a Lease (upstream's `ValidateLeaseSpec`).
pub fn validate_lease(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    if let Some(n) = int(spec, "leaseDurationSeconds").filter(|n| *n <= 0) {
        let p = path.child("leaseDurationSeconds");
        errs.push(FieldError::invalid(&p, n, "must be greater than 0"));
    }
    if let Some(n) = int(spec, "leaseTransitions").filter(|n| *n < 0) {
        let p = path.child("leaseTransitions");
        errs.push(FieldError::invalid(
            &p,
            n,
            "must be greater than or equal to 0",
        ));
    }
    let strategy = spec.get("strategy").and_then(Value::as_str);
    if let Some(strategy) = strategy {
        // Upstream names the field twice (`spec.strategy.strategy`).
        let p = path.child("strategy").child("strategy");
        if !strategy.contains('/') {
            if !LEASE_STRATEGIES.contains(&strategy) {
                errs.push(FieldError::not_supported(&p, strategy, LEASE_STRATEGIES));
            }
        } else {
            invalid_all(&p, strategy, is_qualified_name(strategy), &mut errs);
        }
    }
    let preferred = text(spec, "preferredHolder");
    if !preferred.is_empty() && strategy.unwrap_or_default().is_empty() {
        let msg = "may only be specified if `strategy` is defined";
        errs.push(FieldError::forbidden(&path.child("preferredHolder"), msg));
    }
    errs
}

/// Validates a RuntimeClass (upstream's `ValidateRuntimeClass`): the
/// handler is a DNS label; scheduling has valid node labels and
/// tolerations.
pub fn validate_runtime_class(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    dns_label(&Path::new("handler"), text(obj, "handler"), &mut errs);
    if let Some(scheduling) = set(obj, "scheduling") {
        let path = Path::new("scheduling");
        validate_labels(
            scheduling.get("nodeSelector"),
            &path.child("nodeSelector"),
            &mut errs,
        );
        validate_tolerations(scheduling, &path.child("tolerations"), &mut errs);
    }
    errs
}

#[cfg(test)]
#[path = "cluster_objects_tests.rs"]
mod tests;
