//! Pod spec validation (upstream's `ValidatePodSpec`,
//! `validatePodMetadataAndSpec` and `ValidatePodTemplateSpec`): the
//! pod-level fields here, containers, volumes, probes, resources, security
//! contexts and scheduling fields in the sibling `pod_*` modules.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::inclusive_range_error;
use apimachinery::validation::ip::is_valid_ip;
use apimachinery::validation::object_meta::{validate_annotations, validate_labels};
use apimachinery::validation::{is_dns1123_subdomain, is_qualified_name, name_is_dns_subdomain};
use serde_json::Value;

use super::pod_claims::validate_pod_claims;
use super::pod_containers::{image_whitespace, validate_all_containers, PodContext};
use super::pod_level::validate_pod_resources;
use super::pod_os::{validate_host_process, validate_os_rules};
use super::pod_resources::{validate_resources, Level};
use super::pod_scheduling::{validate_affinity, validate_tolerations, validate_topology_spread};
pub use super::pod_security::set_allow_privileged;
use super::pod_security::validate_pod_security_context;
use super::pod_volumes::validate_volumes;
use super::{dns_label, enumerated, int, invalid_all, is_true, items, set, text};

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
pub(super) const PREEMPTION_POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];
const OS_NAMES: &[&str] = &["linux", "windows"];
const DEFAULT_GRACE_PERIOD: i64 = 30;
const MAX_DNS_NAMESERVERS: usize = 3;
const MAX_DNS_SEARCH_PATHS: usize = 32;
const MAX_DNS_SEARCH_CHARS: usize = 2048;
const MAX_INT32: i64 = i32::MAX as i64;
const HOST_USERS_FALSE: &str = "when `pod.Spec.HostUsers` is false";

/// Upstream's create-only rule: ephemeral containers are added through the
/// `ephemeralcontainers` subresource, never with the pod.
pub fn validate_pod_create(obj: &Value) -> Vec<FieldError> {
    match obj.pointer("/spec/ephemeralContainers") {
        Some(Value::Array(list)) if !list.is_empty() => vec![FieldError::forbidden(
            &Path::new("spec").child("ephemeralContainers"),
            "cannot be set on create",
        )],
        _ => Vec::new(),
    }
}

/// Validates a Pod object (on create, update and subresource writes).
pub fn validate_pod(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = validate_pod_spec(spec, &path, true);
    if text(spec, "serviceAccountName").is_empty() {
        projected_tokens_need_account(spec, &path, &mut errs);
    }
    for key in ["containers", "initContainers"] {
        for (i, c) in items(spec, key).iter().enumerate() {
            image_whitespace(c, &path.child(key).index(i), &mut errs);
        }
    }
    if !text(spec, "nodeName").is_empty() && !items(spec, "schedulingGates").is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("nodeName"),
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    errs
}

/// Validates a PodTemplate object (its `template`).
pub fn validate_pod_template(obj: &Value) -> Vec<FieldError> {
    let template = obj.get("template").unwrap_or(&Value::Null);
    validate_pod_template_spec(template, &Path::new("template"))
}

/// Upstream's `ValidatePodTemplateSpec`: the template's labels,
/// annotations and pod spec; templates may not hold ephemeral containers.
pub(super) fn validate_pod_template_spec(template: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let meta = template.get("metadata").unwrap_or(&Value::Null);
    let meta_path = path.child("metadata");
    validate_labels(meta.get("labels"), &meta_path.child("labels"), &mut errs);
    validate_annotations(
        meta.get("annotations"),
        &meta_path.child("annotations"),
        &mut errs,
    );
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let spec_path = path.child("spec");
    errs.extend(validate_pod_spec(spec, &spec_path, false));
    if !items(spec, "ephemeralContainers").is_empty() {
        errs.push(FieldError::forbidden(
            &spec_path.child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// Validates a pod spec found at `path`; `is_pod` is false for templates.
pub(super) fn validate_pod_spec(spec: &Value, path: &Path, is_pod: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let volumes = validate_volumes(spec, &path.child("volumes"), is_pod, &mut errs);
    let ctx = PodContext {
        volumes,
        grace_period: int(spec, "terminationGracePeriodSeconds").unwrap_or(DEFAULT_GRACE_PERIOD),
        host_users: spec
            .get("hostUsers")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        claims: validate_pod_claims(spec, &path.child("resourceClaims"), &mut errs),
        restart_policy: spec
            .get("restartPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Always"),
    };
    validate_all_containers(spec, path, &ctx, &mut errs);
    validate_pod_resources(spec, &ctx.claims, &path.child("resources"), &mut errs);
    host_network_ports(spec, path, &mut errs);
    enumerated(spec, "restartPolicy", path, RESTART_POLICIES, &mut errs);
    enumerated(spec, "dnsPolicy", path, DNS_POLICIES, &mut errs);
    validate_labels(
        spec.get("nodeSelector"),
        &path.child("nodeSelector"),
        &mut errs,
    );
    validate_pod_security_context(spec, &path.child("securityContext"), &mut errs);
    image_pull_secrets(spec, &path.child("imagePullSecrets"), &mut errs);
    if let Some(affinity) = set(spec, "affinity") {
        validate_affinity(affinity, &path.child("affinity"), &mut errs);
    }
    dns_config(spec, &path.child("dnsConfig"), &mut errs);
    gates(spec, path, &mut errs);
    validate_topology_spread(spec, &path.child("topologySpreadConstraints"), &mut errs);
    validate_host_process(spec, path, &mut errs);
    host_users(spec, path, ctx.host_users, &mut errs);
    names(spec, path, &mut errs);
    validate_tolerations(spec, &path.child("tolerations"), &mut errs);
    host_aliases(spec, &path.child("hostAliases"), &mut errs);
    if let Some(class) = set(spec, "runtimeClassName").and_then(Value::as_str) {
        let p = path.child("runtimeClassName");
        invalid_all(&p, class, name_is_dns_subdomain(class, false), &mut errs);
    }
    enumerated(
        spec,
        "preemptionPolicy",
        path,
        PREEMPTION_POLICIES,
        &mut errs,
    );
    if let Some(overhead) = set(spec, "overhead") {
        // Checked as a container's limits, under upstream's path.
        let limits = serde_json::json!({ "limits": overhead });
        let p = path.child("overhead");
        validate_resources(&limits, &ctx.claims, &p, Level::Container, &mut errs);
    }
    if let Some(os) = pod_os(spec, &path.child("os"), &mut errs) {
        validate_os_rules(spec, os, path, &mut errs);
    }
    errs
}

/// With `hostNetwork`, a host port must equal its container port (an
/// unset host port is defaulted to it).
fn host_network_ports(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if !is_true(spec, "hostNetwork") {
        return;
    }
    for (i, c) in items(spec, "containers").iter().enumerate() {
        for (j, port) in items(c, "ports").iter().enumerate() {
            let host = int(port, "hostPort").unwrap_or(0);
            if host != 0 && Some(host) != int(port, "containerPort") {
                let p = path.child("containers").index(i).child("ports").index(j);
                errs.push(FieldError::invalid(
                    &p.child("hostPort"),
                    host,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
}

fn image_pull_secrets(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for (i, secret) in items(spec, "imagePullSecrets").iter().enumerate() {
        let only_name = secret
            .as_object()
            .is_some_and(|m| m.keys().all(|k| k == "name"));
        if !only_name {
            errs.push(FieldError::invalid(
                &path.index(i),
                secret.clone(),
                "only name may be set",
            ));
        }
    }
}

fn dns_config(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let config = set(spec, "dnsConfig");
    let nameservers = config.map(|c| items(c, "nameservers")).unwrap_or_default();
    if text(spec, "dnsPolicy") == "None" {
        if config.is_none() {
            errs.push(FieldError::required(
                path,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ));
            return;
        }
        if nameservers.is_empty() {
            errs.push(FieldError::required(
                &path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return;
        }
    }
    let Some(config) = config else {
        return;
    };
    if nameservers.len() > MAX_DNS_NAMESERVERS {
        let msg = format!("must not have more than {MAX_DNS_NAMESERVERS} nameservers");
        errs.push(FieldError::invalid(
            &path.child("nameservers"),
            nameservers.to_vec(),
            msg,
        ));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        let ns = ns.as_str().unwrap_or_default();
        errs.extend(is_valid_ip(&path.child("nameservers").index(i), ns));
    }
    dns_searches(config, &path.child("searches"), errs);
    for (i, option) in items(config, "options").iter().enumerate() {
        if text(option, "name").is_empty() {
            errs.push(FieldError::required(
                &path.child("options").index(i),
                "must not be empty",
            ));
        }
    }
}

fn dns_searches(config: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let searches: Vec<&str> = items(config, "searches")
        .iter()
        .map(|s| s.as_str().unwrap_or_default())
        .collect();
    if searches.len() > MAX_DNS_SEARCH_PATHS {
        let msg = format!("must not have more than {MAX_DNS_SEARCH_PATHS} search paths");
        errs.push(FieldError::invalid(path, searches.clone(), msg));
    }
    if searches.join(" ").len() > MAX_DNS_SEARCH_CHARS {
        let msg = format!(
            "must not have more than {MAX_DNS_SEARCH_CHARS} characters (including spaces) in the search list"
        );
        errs.push(FieldError::invalid(path, searches.clone(), msg));
    }
    for (i, search) in searches.iter().enumerate() {
        // The relaxed rule: "." alone, and underscores, are accepted.
        if *search == "." {
            continue;
        }
        let trimmed = search.strip_suffix('.').unwrap_or(search);
        let checked = trimmed.replace('_', "-");
        invalid_all(
            &path.index(i),
            trimmed,
            is_dns1123_subdomain(&checked),
            errs,
        );
    }
}

fn gates(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for (i, gate) in items(spec, "readinessGates").iter().enumerate() {
        let p = path.child("readinessGates").index(i).child("conditionType");
        let condition = text(gate, "conditionType");
        invalid_all(&p, condition, is_qualified_name(condition), errs);
    }
    let mut seen = std::collections::HashSet::new();
    for (i, gate) in items(spec, "schedulingGates").iter().enumerate() {
        let p = path.child("schedulingGates").index(i);
        let name = text(gate, "name");
        invalid_all(&p, name, is_qualified_name(name), errs);
        if !seen.insert(name) {
            errs.push(FieldError::duplicate(&p, name));
        }
    }
}

/// Without the host's user namespace, no other host namespace.
fn host_users(spec: &Value, path: &Path, host_users: bool, errs: &mut Vec<FieldError>) {
    if host_users {
        return;
    }
    for (key, reported) in [
        ("hostNetwork", "hostNetwork"),
        ("hostPID", "HostPID"),
        ("hostIPC", "HostIPC"),
    ] {
        if is_true(spec, key) {
            errs.push(FieldError::forbidden(
                &path.child(reported),
                HOST_USERS_FALSE,
            ));
        }
    }
}

/// Names and numbers of the pod: service account, node, deadline,
/// hostname, subdomain and priority class.
fn names(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for key in ["serviceAccountName", "nodeName"] {
        let value = text(spec, key);
        if !value.is_empty() {
            invalid_all(
                &path.child(key),
                value,
                name_is_dns_subdomain(value, false),
                errs,
            );
        }
    }
    if let Some(deadline) = int(spec, "activeDeadlineSeconds") {
        if !(1..=MAX_INT32).contains(&deadline) {
            errs.push(FieldError::invalid(
                &path.child("activeDeadlineSeconds"),
                deadline,
                inclusive_range_error(1, MAX_INT32),
            ));
        }
    }
    for key in ["hostname", "subdomain"] {
        let value = text(spec, key);
        if !value.is_empty() {
            dns_label(&path.child(key), value, errs);
        }
    }
    let class = text(spec, "priorityClassName");
    if !class.is_empty() {
        let p = path.child("priorityClassName");
        invalid_all(&p, class, name_is_dns_subdomain(class, false), errs);
    }
}

fn host_aliases(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for (i, alias) in items(spec, "hostAliases").iter().enumerate() {
        let idx = path.index(i);
        errs.extend(is_valid_ip(&idx.child("ip"), text(alias, "ip")));
        for (j, hostname) in items(alias, "hostnames").iter().enumerate() {
            let hostname = hostname.as_str().unwrap_or_default();
            let p = idx.child("hostnames").index(j);
            invalid_all(&p, hostname, is_dns1123_subdomain(hostname), errs);
        }
    }
}

/// `spec.os`; returns its name when it is a valid one.
fn pod_os<'a>(spec: &'a Value, path: &Path, errs: &mut Vec<FieldError>) -> Option<&'a str> {
    let os = set(spec, "os")?;
    let name = text(os, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), "cannot be empty"));
    } else if !OS_NAMES.contains(&name) {
        errs.push(FieldError::not_supported(path, name, OS_NAMES));
    } else {
        return Some(name);
    }
    None
}

/// A pod without a service account may not project its token.
fn projected_tokens_need_account(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for (vi, volume) in items(spec, "volumes").iter().enumerate() {
        let Some(projected) = set(volume, "projected") else {
            continue;
        };
        for (si, source) in items(projected, "sources").iter().enumerate() {
            if set(source, "serviceAccountToken").is_some() {
                let p = path
                    .child("volumes")
                    .index(vi)
                    .child("projected")
                    .child("sources")
                    .index(si)
                    .child("serviceAccountToken");
                errs.push(FieldError::forbidden(
                    &p,
                    "must not be specified when serviceAccountName is not set",
                ));
            }
        }
    }
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "pod_spec_tests.rs"]
mod spec_tests;
