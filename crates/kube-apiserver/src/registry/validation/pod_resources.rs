//! Resource requirements of containers and of the whole pod (upstream's
//! `validateResourceRequirements` with its container and pod-level name
//! rules): resource names, non-negative quantities, requests no larger than
//! limits, the rules for resources that cannot be overcommitted (hugepages,
//! extended resources), claim references, and containers' `resizePolicy`.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::quantity::Quantity;
use apimachinery::validation::is_qualified_name;
use apimachinery::validation::object_meta::IS_NEGATIVE_ERROR_MSG;
use serde_json::{Map, Value};

use super::pod_claims::{validate_claim_refs, ClaimNames};
use super::pod_volumes::quantity;
use super::{items, text};

const CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];
/// Upstream's standard resource names (`helper.IsStandardResourceName`).
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];
const HUGEPAGES: &str = "hugepages-";
/// Upstream's `SupportedPodLevelResources`, sorted (hugepages by prefix).
const POD_LEVEL_RESOURCES: &[&str] = &["cpu", HUGEPAGES, "memory"];
const RESIZE_RESOURCES: &[&str] = &["cpu", "memory"];
const RESIZE_POLICIES: &[&str] = &["NotRequired", "RestartContainer"];

/// Whose requirements are checked: the names allowed differ.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Container,
    Pod,
}

/// `resources` of a container or pod: `limits` first, then `requests`,
/// then the claims.
pub(super) fn validate_resources(
    resources: &Value,
    claims: &ClaimNames<'_>,
    path: &Path,
    level: Level,
    errs: &mut Vec<FieldError>,
) {
    let empty = Map::new();
    let list = |key: &str| {
        resources
            .get(key)
            .and_then(Value::as_object)
            .unwrap_or(&empty)
    };
    let (limits, requests) = (list("limits"), list("requests"));
    let (lim_path, req_path) = (path.child("limits"), path.child("requests"));
    let mut cpu_or_memory = false;
    let mut huge_pages = false;
    for (name, value) in limits {
        let p = lim_path.key(name);
        check_entry(name, value, &p, level, errs);
        huge_pages |= name.starts_with(HUGEPAGES);
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    for (name, value) in requests {
        let p = req_path.key(name);
        let request = check_entry(name, value, &p, level, errs);
        let limit = limits.get(name).and_then(quantity);
        match (request, limit) {
            (Some(request), Some(limit)) => {
                request_within_limit(name, &request, &limit, &req_path, errs)
            }
            (_, None) if !limits.contains_key(name) && !overcommit_allowed(name) => {
                errs.push(FieldError::required(
                    &lim_path,
                    "Limit must be set for non overcommitable resources",
                ));
            }
            _ => {}
        }
        huge_pages |= name.starts_with(HUGEPAGES);
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    if huge_pages && !cpu_or_memory {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    validate_claim_refs(resources, claims, &path.child("claims"), errs);
}

fn request_within_limit(
    name: &str,
    request: &Quantity,
    limit: &Quantity,
    req_path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let detail = if request != limit && !overcommit_allowed(name) {
        format!("must be equal to {name} limit of {limit}")
    } else if request > limit {
        format!("must be less than or equal to {name} limit of {limit}")
    } else {
        return;
    };
    errs.push(FieldError::invalid(req_path, request.to_string(), detail));
}

/// The name and quantity of one entry; returns the parsed quantity.
fn check_entry(
    name: &str,
    value: &Value,
    path: &Path,
    level: Level,
    errs: &mut Vec<FieldError>,
) -> Option<Quantity> {
    match level {
        Level::Container => resource_name(name, path, errs),
        Level::Pod => pod_resource_name(name, path, errs),
    }
    let q = quantity(value)?;
    if q.is_negative() {
        errs.push(FieldError::invalid(
            path,
            q.to_string(),
            IS_NEGATIVE_ERROR_MSG,
        ));
    }
    if is_integer_resource(name) && q.milli_value().is_some_and(|m| m % 1000 != 0) {
        errs.push(FieldError::invalid(
            path,
            q.to_string(),
            "must be an integer",
        ));
    }
    if let Some(msg) = huge_page_value(name, &q) {
        errs.push(FieldError::invalid(path, q.to_string(), msg));
    }
    Some(q)
}

/// Upstream's `ValidateContainerResourceName` (also of an HPA's
/// container resource metrics).
pub(super) fn resource_name(name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let msgs = is_qualified_name(name);
    if !msgs.is_empty() {
        for msg in msgs {
            errs.push(FieldError::invalid(path, name, msg));
        }
        return;
    }
    if !name.contains('/') {
        if !is_standard(name) {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource type or fully qualified",
            ));
        }
        if !CONTAINER_RESOURCES.contains(&name) && !name.starts_with(HUGEPAGES) {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
}

/// Upstream's `validatePodResourceName`: a valid resource name that
/// pod-level resources support.
fn pod_resource_name(name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let before = errs.len();
    for msg in is_qualified_name(name) {
        errs.push(FieldError::invalid(path, name, msg));
    }
    if errs.len() == before && !name.contains('/') && !is_standard(name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
    let supported = name == "cpu" || name == "memory" || name.starts_with(HUGEPAGES);
    if errs.len() == before && !supported {
        errs.push(FieldError::not_supported(path, name, POD_LEVEL_RESOURCES));
    }
}

/// Upstream's `validateResizePolicy` for the container `c`.
pub(super) fn validate_resize_policy(
    c: &Value,
    pod_restart_policy: &str,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let mut seen = std::collections::HashSet::new();
    for (i, policy) in items(c, "resizePolicy").iter().enumerate() {
        let resource = text(policy, "resourceName");
        if !seen.insert(resource) {
            errs.push(FieldError::duplicate(&path.index(i), resource));
        }
        for (value, supported) in [
            (resource, RESIZE_RESOURCES),
            (text(policy, "restartPolicy"), RESIZE_POLICIES),
        ] {
            if value.is_empty() {
                errs.push(FieldError::required(path, ""));
            } else if !supported.contains(&value) {
                errs.push(FieldError::not_supported(path, value, supported));
            }
        }
        let restart = text(policy, "restartPolicy");
        if pod_restart_policy == "Never" && restart != "NotRequired" {
            errs.push(FieldError::invalid(
                path,
                restart,
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
}

fn is_standard(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name)
        || name.starts_with(HUGEPAGES)
        || name.starts_with("requests.hugepages-")
}

/// Unprefixed names and names in the `kubernetes.io` domain.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Upstream's `IsExtendedResourceName`.
fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

fn is_integer_resource(name: &str) -> bool {
    is_extended(name)
}

/// Native resources other than hugepages may be overcommitted.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !name.starts_with(HUGEPAGES)
}

/// A hugepages quantity must be a whole multiple of the page size.
fn huge_page_value(name: &str, q: &Quantity) -> Option<String> {
    let size = Quantity::parse(name.strip_prefix(HUGEPAGES)?)
        .ok()?
        .value()?;
    let value = q.value()?;
    (size <= 0 || value % size != 0)
        .then(|| format!("{q} is not positive integer multiple of {name}"))
}
