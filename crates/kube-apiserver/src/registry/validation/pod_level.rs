//! Pod-level resources (upstream's `validatePodResources` and
//! `validatePodResourceConsistency`): `spec.resources` names only what
//! pod-level resources support, its requests cover what the containers
//! request together, and no container's limit exceeds the pod's.
//!
//! Containers' requests are read as upstream's defaulting leaves them: a
//! resource with a limit and no request requests its limit.

use std::collections::BTreeMap;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::quantity::{Format, Quantity};
use serde_json::Value;

use super::pod_claims::ClaimNames;
use super::pod_resources::{validate_resources, Level};
use super::pod_volumes::quantity;
use super::{items, set, text};

const HUGEPAGES: &str = "hugepages-";

/// Quantities by resource name, sorted for a stable error order.
type ResourceList<'a> = BTreeMap<&'a str, Quantity>;

/// Validates `spec.resources` when set.
pub(super) fn validate_pod_resources(
    spec: &Value,
    claims: &ClaimNames<'_>,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let Some(resources) = set(spec, "resources") else {
        return;
    };
    if spec.get("os").map(|os| text(os, "name")) == Some("windows") {
        errs.push(FieldError::forbidden(
            path,
            "may not be set for a windows pod",
        ));
        return;
    }
    if set(resources, "claims").is_some() {
        errs.push(FieldError::forbidden(
            &path.child("claims"),
            "claims cannot be set for Resources at pod-level",
        ));
    }
    validate_resources(resources, claims, path, Level::Pod, errs);
    consistency(spec, resources, path, errs);
}

fn consistency(spec: &Value, resources: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let pod_requests = list(resources.get("requests"));
    let pod_limits = list(resources.get("limits"));
    for (name, total) in aggregate(spec, true) {
        match pod_requests.get(name) {
            Some(requested) if total > *requested => errs.push(FieldError::invalid(
                &path.child("requests").key(name),
                requested.to_string(),
                format!(
                    "must be greater than or equal to aggregate container requests of {}",
                    total.canonical()
                ),
            )),
            _ => {}
        }
    }
    for (name, total) in aggregate(spec, false) {
        if !name.starts_with(HUGEPAGES) {
            continue;
        }
        match pod_limits.get(name) {
            Some(limit) if total > *limit => errs.push(FieldError::invalid(
                &path.child("limits").key(name),
                limit.to_string(),
                format!(
                    "must be greater than or equal to aggregate container limits of {}",
                    total.canonical()
                ),
            )),
            _ => {}
        }
    }
    for (i, c) in items(spec, "containers").iter().enumerate() {
        let limits = list(c.get("resources").and_then(|r| r.get("limits")));
        for (name, limit) in limits {
            match pod_limits.get(name) {
                // Upstream builds this path under the pod-level resources.
                Some(pod_limit) if limit > *pod_limit => errs.push(FieldError::invalid(
                    &path.child("containers").index(i).key(name).child("limits"),
                    limit.to_string(),
                    format!("must be less than or equal to pod limits of {pod_limit}"),
                )),
                _ => {}
            }
        }
    }
}

/// The parseable entries of a resource list.
fn list(value: Option<&Value>) -> ResourceList<'_> {
    value
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, q)| Some((name.as_str(), quantity(q)?)))
        .collect()
}

/// A container's requests (`requests`, with limits standing in for
/// missing requests) or limits.
fn container_list(c: &Value, requests: bool) -> ResourceList<'_> {
    let resources = c.get("resources");
    let limits = list(resources.and_then(|r| r.get("limits")));
    if !requests {
        return limits;
    }
    let mut out = list(resources.and_then(|r| r.get("requests")));
    for (name, limit) in limits {
        out.entry(name).or_insert(limit);
    }
    out
}

/// Upstream's `AggregateContainerRequests` / `AggregateContainerLimits`:
/// the regular and sidecar containers together, or the largest need of an
/// init container (with the sidecars started before it), whichever is more.
fn aggregate(spec: &Value, requests: bool) -> ResourceList<'_> {
    let mut total = ResourceList::new();
    for c in items(spec, "containers") {
        add(&mut total, &container_list(c, requests));
    }
    let mut sidecars = ResourceList::new();
    let mut init_peak = ResourceList::new();
    for c in items(spec, "initContainers") {
        let own = container_list(c, requests);
        let need = if text(c, "restartPolicy") == "Always" {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut need = own;
            add(&mut need, &sidecars);
            need
        };
        max(&mut init_peak, need);
    }
    max(&mut total, init_peak);
    total
}

fn add<'a>(into: &mut ResourceList<'a>, other: &ResourceList<'a>) {
    for (name, q) in other {
        let sum = match into.get(name) {
            Some(current) => sum(current, q),
            None => Some(q.clone()),
        };
        if let Some(sum) = sum {
            into.insert(name, sum);
        }
    }
}

fn max<'a>(into: &mut ResourceList<'a>, other: ResourceList<'a>) {
    for (name, q) in other {
        if into.get(name).is_none_or(|current| q > *current) {
            into.insert(name, q);
        }
    }
}

/// What the containers request together (upstream's
/// `AggregateContainerRequests`), by resource name.
pub(crate) fn aggregate_container_requests(spec: &Value) -> Vec<(String, Quantity)> {
    aggregate(spec, true)
        .into_iter()
        .map(|(name, q)| (name.to_owned(), q))
        .collect()
}

/// `a + b` in the format of `a`, as Go's `Quantity.Add` keeps it.
fn sum(a: &Quantity, b: &Quantity) -> Option<Quantity> {
    let milli = a.milli_value()?.checked_add(b.milli_value()?)?;
    let text = if a.format() == Format::BinarySI && milli % 1000 == 0 && (milli / 1000) % 1024 == 0
    {
        format!("{}Ki", milli / 1000 / 1024)
    } else {
        format!("{milli}m")
    };
    Quantity::parse(&text).ok()
}
