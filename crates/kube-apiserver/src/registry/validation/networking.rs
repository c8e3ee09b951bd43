//! networking.k8s.io validation (upstream's
//! `pkg/apis/networking/validation`): NetworkPolicy ports, peers and IP
//! blocks, Ingress backends, rules, paths and TLS hosts, IngressClass
//! controllers and parameters, ServiceCIDR ranges and IPAddress names and
//! parent references.

use std::net::IpAddr;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::{is_valid_port_name, is_valid_port_num};
use apimachinery::validation::ip::{
    cidr_sloppy, ip_sloppy, is_valid_cidr, is_valid_cidr_for_legacy_field, is_valid_ip,
};
use apimachinery::validation::selectors::{validate_label_selector, LabelSelectorOptions};
use apimachinery::validation::{
    is_dns1123_subdomain, is_wildcard_dns1123_subdomain, name_is_dns1035_label,
    name_is_dns_subdomain, regex_error,
};
use serde_json::Value;

use super::update::{go_struct, invalid_typed};
use super::{invalid_all, items, path_segment, protocol, set, text};

const POLICY_TYPES: &[&str] = &["Ingress", "Egress"];
const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];
const INVALID_PATH_SEQUENCES: &[&str] = &["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: &[&str] = &["/..", "/."];
const PARAMETER_SCOPES: &[&str] = &["Cluster", "Namespace"];
const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
const MAX_CONTROLLER_LEN: usize = 250;

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// Validates a NetworkPolicy (upstream's `ValidateNetworkPolicySpec`).
pub fn validate_network_policy(obj: &Value) -> Vec<FieldError> {
    let spec = spec(obj);
    let path = Path::new("spec");
    let opts = LabelSelectorOptions::default();
    let mut errs =
        validate_label_selector(spec.get("podSelector"), opts, &path.child("podSelector"));
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in items(spec, direction).iter().enumerate() {
            let rule_path = path.child(direction).index(i);
            for (j, port) in items(rule, "ports").iter().enumerate() {
                network_policy_port(port, &rule_path.child("ports").index(j), &mut errs);
            }
            for (j, peer) in items(rule, peers).iter().enumerate() {
                network_policy_peer(peer, &rule_path.child(peers).index(j), &mut errs);
            }
        }
    }
    let types = items(spec, "policyTypes");
    let types_path = path.child("policyTypes");
    if types.len() > POLICY_TYPES.len() {
        let msg = "may not specify more than two policyTypes";
        errs.push(FieldError::invalid(
            &types_path,
            Value::from(types.to_vec()),
            msg,
        ));
        return errs;
    }
    for (i, kind) in types.iter().enumerate() {
        let kind = kind.as_str().unwrap_or_default();
        if !POLICY_TYPES.contains(&kind) {
            errs.push(FieldError::not_supported(
                &types_path.index(i),
                kind,
                POLICY_TYPES,
            ));
        }
    }
    errs
}

fn network_policy_port(port: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    protocol(port, path, errs);
    let end = port.get("endPort").and_then(Value::as_i64);
    let end_path = path.child("endPort");
    match set(port, "port") {
        Some(Value::String(name)) => {
            if let Some(end) = end {
                let msg = "may not be specified when `port` is non-numeric";
                errs.push(FieldError::invalid(&end_path, end, msg));
            }
            invalid_all(&path.child("port"), name, is_valid_port_name(name), errs);
        }
        Some(number) => {
            let n = number.as_i64().unwrap_or_default();
            for msg in is_valid_port_num(n) {
                errs.push(FieldError::invalid(&path.child("port"), n, msg));
            }
            if let Some(end) = end {
                if end < n {
                    let msg = "must be greater than or equal to `port`";
                    errs.push(FieldError::invalid(&end_path, end, msg));
                }
                for msg in is_valid_port_num(end) {
                    errs.push(FieldError::invalid(&end_path, end, msg));
                }
            }
        }
        None => {
            if let Some(end) = end {
                let msg = "may not be specified when `port` is not specified";
                errs.push(FieldError::invalid(&end_path, end, msg));
            }
        }
    }
}

fn network_policy_peer(peer: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let opts = LabelSelectorOptions::default();
    let mut peers = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(selector) = set(peer, key) {
            peers += 1;
            errs.extend(validate_label_selector(
                Some(selector),
                opts,
                &path.child(key),
            ));
        }
    }
    let block = set(peer, "ipBlock");
    if let Some(block) = block {
        peers += 1;
        ip_block(block, &path.child("ipBlock"), errs);
    }
    if peers == 0 {
        errs.push(FieldError::required(path, "must specify a peer"));
    } else if peers > 1 && block.is_some() {
        errs.push(FieldError::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
}

/// Upstream's `ValidateIPBlock`: a legacy (lenient) CIDR and exceptions
/// strictly inside it.
fn ip_block(block: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let cidr = text(block, "cidr");
    let cidr_path = path.child("cidr");
    if cidr.is_empty() {
        errs.push(FieldError::required(&cidr_path, ""));
        return;
    }
    errs.extend(is_valid_cidr_for_legacy_field(&cidr_path, cidr, false, &[]));
    let Some((network, prefix)) = cidr_sloppy(cidr) else {
        return;
    };
    for (i, except) in items(block, "except").iter().enumerate() {
        let except = except.as_str().unwrap_or_default();
        let except_path = path.child("except").index(i);
        errs.extend(is_valid_cidr_for_legacy_field(
            &except_path,
            except,
            false,
            &[],
        ));
        let Some((inner, inner_prefix)) = cidr_sloppy(except) else {
            continue;
        };
        if !contains(network, prefix, inner) || prefix >= inner_prefix {
            errs.push(FieldError::invalid(
                &except_path,
                except,
                "must be a strict subset of `cidr`",
            ));
        }
    }
}

/// Whether `network/prefix` contains `ip` (Go's `IPNet.Contains`).
fn contains(network: IpAddr, prefix: u8, ip: IpAddr) -> bool {
    match (network, ip.to_canonical()) {
        (IpAddr::V4(n), IpAddr::V4(i)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

/// Validates an Ingress on create and update (upstream's
/// `ValidateIngressSpec`).
pub fn validate_ingress(obj: &Value) -> Vec<FieldError> {
    let spec = spec(obj);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let rules = items(spec, "rules");
    let default_backend = set(spec, "defaultBackend");
    if rules.is_empty() && default_backend.is_none() {
        let shown = spec.get("rules").cloned().unwrap_or(Value::Null);
        let msg = "either `defaultBackend` or `rules` must be specified";
        errs.push(FieldError::invalid(&path, shown, msg));
    }
    if let Some(backend) = default_backend {
        ingress_backend(backend, &path.child("defaultBackend"), &mut errs);
    }
    for (i, rule) in rules.iter().enumerate() {
        ingress_rule(rule, &path.child("rules").index(i), &mut errs);
    }
    for (i, tls) in items(spec, "tls").iter().enumerate() {
        let tls_path = path.child("tls").index(i);
        for (j, host) in items(tls, "hosts").iter().enumerate() {
            let host = host.as_str().unwrap_or_default();
            invalid_all(
                &tls_path.child("hosts").index(j),
                host,
                host_check(host),
                &mut errs,
            );
        }
        let secret = text(tls, "secretName");
        if !secret.is_empty() {
            let msgs = name_is_dns_subdomain(secret, false);
            invalid_all(&tls_path.child("secretName"), secret, msgs, &mut errs);
        }
    }
    if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
        let msgs = name_is_dns_subdomain(class, false);
        invalid_all(&path.child("ingressClassName"), class, msgs, &mut errs);
    }
    errs
}

/// The create-only rule of an Ingress: the legacy class annotation agrees
/// with `ingressClassName`.
pub fn validate_ingress_create(obj: &Value) -> Vec<FieldError> {
    let annotation = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(INGRESS_CLASS_ANNOTATION))
        .and_then(Value::as_str);
    let class = spec(obj).get("ingressClassName").and_then(Value::as_str);
    match (annotation, class) {
        (Some(annotation), Some(class)) if annotation != class => {
            let path = Path::new("annotations").child(INGRESS_CLASS_ANNOTATION);
            let msg = "must match `ingressClassName` when both are specified";
            vec![FieldError::invalid(&path, annotation, msg)]
        }
        _ => Vec::new(),
    }
}

/// A TLS or rule host: a wildcard or plain DNS subdomain.
fn host_check(host: &str) -> Vec<String> {
    if host.contains('*') {
        is_wildcard_dns1123_subdomain(host)
    } else {
        is_dns1123_subdomain(host)
    }
}

fn ingress_rule(rule: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let host = text(rule, "host");
    if !host.is_empty() {
        let host_path = path.child("host");
        if ip_sloppy(host).is_some() {
            errs.push(FieldError::invalid(
                &host_path,
                host,
                "must be a DNS name, not an IP address",
            ));
        }
        invalid_all(&host_path, host, host_check(host), errs);
    }
    let Some(http) = set(rule, "http") else {
        return;
    };
    let http_path = path.child("http");
    let paths = items(http, "paths");
    if paths.is_empty() {
        errs.push(FieldError::required(&http_path.child("paths"), ""));
    }
    for (i, p) in paths.iter().enumerate() {
        ingress_path(p, &http_path.child("paths").index(i), errs);
    }
}

fn ingress_path(entry: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(kind) = set(entry, "pathType").map(|k| k.as_str().unwrap_or_default()) else {
        errs.push(FieldError::required(
            &path.child("pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let value = text(entry, "path");
    let value_path = path.child("path");
    let absolute = |errs: &mut Vec<FieldError>| {
        if !value.starts_with('/') {
            errs.push(FieldError::invalid(
                &value_path,
                value,
                "must be an absolute path",
            ));
        }
    };
    match kind {
        "Exact" | "Prefix" => {
            absolute(errs);
            for seq in INVALID_PATH_SEQUENCES.iter().filter(|s| value.contains(*s)) {
                let msg = format!("must not contain '{seq}'");
                errs.push(FieldError::invalid(&value_path, value, msg));
            }
            for suffix in INVALID_PATH_SUFFIXES.iter().filter(|s| value.ends_with(*s)) {
                let msg = format!("cannot end with '{suffix}'");
                errs.push(FieldError::invalid(&value_path, value, msg));
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() {
                absolute(errs);
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("pathType"),
            other,
            PATH_TYPES,
        )),
    }
    let backend = entry.get("backend").unwrap_or(&Value::Null);
    ingress_backend(backend, &path.child("backend"), errs);
}

fn ingress_backend(backend: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    match (set(backend, "resource"), set(backend, "service")) {
        (Some(_), Some(_)) => {
            let msg = "cannot set both resource and service backends";
            errs.push(FieldError::invalid(path, "", msg));
        }
        (Some(resource), None) => {
            let resource_path = path.child("resource");
            if let Some(group) = resource.get("apiGroup").and_then(Value::as_str) {
                let msgs = is_dns1123_subdomain(group);
                invalid_all(&resource_path.child("apiGroup"), group, msgs, errs);
            }
            path_segment(resource, "kind", &resource_path, errs);
            path_segment(resource, "name", &resource_path, errs);
        }
        (None, Some(service)) => service_backend(service, path, errs),
        (None, None) => {
            let msg = "resource or service backend is required";
            errs.push(FieldError::invalid(path, "", msg));
        }
    }
}

fn service_backend(service: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let service_path = path.child("service");
    let name = text(service, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&service_path.child("name"), ""));
    } else {
        let msgs = name_is_dns1035_label(name, false);
        invalid_all(&service_path.child("name"), name, msgs, errs);
    }
    let port = service.get("port").unwrap_or(&Value::Null);
    let port_name = text(port, "name");
    let number = port
        .get("number")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    let port_path = service_path.child("port");
    match (port_name.is_empty(), number == 0) {
        (false, false) => {
            let msg = "cannot set both port name & port number";
            errs.push(FieldError::invalid(path, "", msg));
        }
        (false, true) => {
            let msgs = is_valid_port_name(port_name);
            invalid_all(&port_path.child("name"), port_name, msgs, errs);
        }
        (true, false) => {
            for msg in is_valid_port_num(number) {
                errs.push(FieldError::invalid(&port_path.child("number"), number, msg));
            }
        }
        (true, true) => errs.push(FieldError::required(
            path,
            "port name or number is required",
        )),
    }
}

/// Validates an IngressClass (upstream's `validateIngressClassSpec`).
pub fn validate_ingress_class(obj: &Value) -> Vec<FieldError> {
    let spec = spec(obj);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let controller = text(spec, "controller");
    let controller_path = path.child("controller");
    if controller.is_empty() {
        errs.push(FieldError::required(&controller_path, ""));
    } else {
        if controller.len() > MAX_CONTROLLER_LEN {
            errs.push(FieldError::too_long(
                &controller_path,
                Some(MAX_CONTROLLER_LEN),
            ));
        }
        domain_prefixed_path(&controller_path, controller, &mut errs);
    }
    if let Some(params) = set(spec, "parameters") {
        class_parameters(params, &path.child("parameters"), &mut errs);
    }
    errs
}

/// Upstream's `IsDomainPrefixedPath` (e.g. `acme.io/foo`).
fn domain_prefixed_path(path: &Path, value: &str, errs: &mut Vec<FieldError>) {
    let Some((host, rest)) = value
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        let msg = "must be a domain-prefixed path (such as \"acme.io/foo\")";
        errs.push(FieldError::invalid(path, value, msg));
        return;
    };
    invalid_all(path, host, is_dns1123_subdomain(host), errs);
    let http_path = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !rest.chars().all(http_path) {
        let msg = regex_error("Invalid path", "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+", &[]);
        errs.push(FieldError::invalid(path, rest, msg));
    }
}

fn class_parameters(params: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(group) = params.get("apiGroup").and_then(Value::as_str) {
        invalid_all(
            &path.child("apiGroup"),
            group,
            is_dns1123_subdomain(group),
            errs,
        );
    }
    path_segment(params, "kind", path, errs);
    path_segment(params, "name", path, errs);
    let Some(scope) = params.get("scope").and_then(Value::as_str) else {
        errs.push(FieldError::required(&path.child("scope"), ""));
        return;
    };
    let namespace = params.get("namespace").and_then(Value::as_str);
    let ns_path = path.child("namespace");
    match (scope, namespace) {
        ("Namespace", None) => {
            let msg = "`parameters.scope` is set to 'Namespace'";
            errs.push(FieldError::required(&ns_path, msg));
        }
        ("Namespace", Some(ns)) => {
            invalid_all(
                &ns_path,
                ns,
                apimachinery::validation::name_is_dns_label(ns, false),
                errs,
            );
        }
        ("Cluster", Some(_)) => {
            let msg = "`parameters.scope` is set to 'Cluster'";
            errs.push(FieldError::forbidden(&ns_path, msg));
        }
        ("Cluster", None) => {}
        (other, _) => errs.push(FieldError::not_supported(
            &path.child("scope"),
            other,
            PARAMETER_SCOPES,
        )),
    }
}

/// The ServiceCIDR spec rules (upstream's `validateServiceCIDRSpec`): one
/// or two canonical CIDRs, of different families when two. Checked on
/// create and, on update, only when a single range gains a second.
pub fn validate_service_cidr_spec(obj: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("cidrs");
    let cidrs = items(spec(obj), "cidrs");
    if cidrs.is_empty() {
        return vec![FieldError::required(&path, "at least one CIDR required")];
    }
    if cidrs.len() > 2 {
        let shown = go_struct(&[("CIDRs", Value::from(cidrs.to_vec()))]);
        return vec![invalid_typed(&path, &shown, "may only hold up to 2 values")];
    }
    let mut errs = Vec::new();
    for (i, cidr) in cidrs.iter().enumerate() {
        errs.extend(is_valid_cidr(
            &path.index(i),
            cidr.as_str().unwrap_or_default(),
        ));
    }
    let family =
        |c: &Value| cidr_sloppy(c.as_str().unwrap_or_default()).map(|(ip, _)| ip.is_ipv4());
    if let [a, b] = cidrs {
        if family(a).is_some() && family(a) == family(b) {
            let msg = "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64";
            errs.push(FieldError::invalid(&path, Value::from(cidrs.to_vec()), msg));
        }
    }
    errs
}

/// Upstream's `ValidateIPAddressName`: the name is a canonical IP.
pub fn ip_address_name(name: &str, _prefix: bool) -> Vec<String> {
    is_valid_ip(&Path::new(""), name)
        .into_iter()
        .map(|e| e.detail)
        .collect()
}

/// Validates an IPAddress (upstream's `validateIPAddressParentReference`).
pub fn validate_ip_address(obj: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("parentRef");
    let Some(parent) = set(spec(obj), "parentRef") else {
        return vec![FieldError::required(&path, "")];
    };
    let mut errs = Vec::new();
    let group = text(parent, "group");
    if !group.is_empty() {
        invalid_all(
            &path.child("group"),
            group,
            is_dns1123_subdomain(group),
            &mut errs,
        );
    }
    path_segment(parent, "resource", &path, &mut errs);
    path_segment(parent, "name", &path, &mut errs);
    let namespace = text(parent, "namespace");
    if !namespace.is_empty() {
        let msgs = apimachinery::validation::is_path_segment_name(namespace);
        invalid_all(&path.child("namespace"), namespace, msgs, &mut errs);
    }
    errs
}

#[cfg(test)]
#[path = "networking_tests.rs"]
mod tests;
