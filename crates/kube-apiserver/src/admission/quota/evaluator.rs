//! Quota evaluation shared by the ResourceQuota admission plugin and the
//! in-process quota controller (upstream's `pkg/quota/v1/evaluator/core`
//! and the generic object-count evaluator): what an object uses, which
//! quotas' scopes select it, which resource a quota key counts, and a
//! quota's `status` recomputed from the stored objects.

use std::collections::BTreeMap;
use std::fmt;

use apimachinery::quantity::Format;
use apimachinery::status::ApiError;
use apimachinery::Quantity;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::api::resource::{self, from_milli, milli, parse_list};
use apiserver::admission::initializer::{text, Stores};

/// An amount of one resource in milli-units, with the format upstream's
/// quantity arithmetic would keep (the first non-zero operand's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Amount {
    pub milli: i128,
    binary: bool,
}

impl Amount {
    /// `n` objects.
    pub fn count(n: i128) -> Self {
        Amount {
            milli: n * 1000,
            binary: false,
        }
    }

    pub fn of(q: &Quantity) -> Self {
        Amount {
            milli: milli(q),
            binary: q.format() == Format::BinarySI,
        }
    }

    pub fn add(&mut self, other: Amount) {
        if self.milli == 0 {
            self.binary = other.binary;
        }
        self.milli += other.milli;
    }

    pub fn sub(&mut self, other: Amount) {
        self.milli -= other.milli;
    }
}

impl fmt::Display for Amount {
    /// Upstream's canonical quantity text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.milli;
        let whole = m / 1000;
        // Binary amounts of a kibibyte or more keep binary suffixes.
        if self.binary && m % 1000 == 0 && whole.abs() >= 1024 {
            if whole % 1024 != 0 {
                return write!(f, "{whole}");
            }
            if let Ok(q) = Quantity::parse(&format!("{}Ki", whole / 1024)) {
                return f.write_str(&q.canonical());
            }
        }
        f.write_str(&from_milli(m))
    }
}

/// Amounts per quota resource name.
pub type Usage = BTreeMap<String, Amount>;

/// Adds `b` into `a`.
pub fn add_all(a: &mut Usage, b: Usage) {
    for (k, v) in b {
        a.entry(k).or_default().add(v);
    }
}

/// A quota's hard limits (`spec.hard`).
pub fn hard(quota: &Value) -> Usage {
    parse_list(quota.pointer("/spec/hard"))
        .iter()
        .map(|(k, v)| (k.clone(), Amount::of(v)))
        .collect()
}

/// A quota's recorded `status.used`.
pub fn parsed_used(quota: &Value) -> Usage {
    parse_list(quota.pointer("/status/used"))
        .iter()
        .map(|(k, v)| (k.clone(), Amount::of(v)))
        .collect()
}

/// `count/<resource>` or `count/<resource>.<group>`.
fn count_key(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// What one object uses (upstream's evaluators for the core types, object
/// counts for everything). `now` judges pods stuck terminating.
pub fn usage(group: &str, resource: &str, obj: &Value, now: DateTime<Utc>) -> Usage {
    let mut u = Usage::new();
    u.insert(count_key(group, resource), Amount::count(1));
    if !group.is_empty() {
        return u;
    }
    match resource {
        "pods" if pod_counts(obj, now) => pod_usage(obj, &mut u),
        "services" => service_usage(obj, &mut u),
        "persistentvolumeclaims" => claim_usage(obj, &mut u),
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            u.insert(resource.into(), Amount::count(1));
        }
        _ => {}
    }
    u
}

/// Whether a pod's compute resources are charged: not in a terminal phase
/// and not past its deletion grace period (upstream's `QuotaV1Pod`).
fn pod_counts(pod: &Value, now: DateTime<Utc>) -> bool {
    let phase = text(pod, "/status/phase").unwrap_or_default();
    if phase == "Succeeded" || phase == "Failed" {
        return false;
    }
    let deleted = text(pod, "/metadata/deletionTimestamp").and_then(|t| t.parse().ok());
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    match (deleted, grace) {
        (Some(at), Some(grace)) => {
            let at: DateTime<Utc> = at;
            chrono::Duration::try_seconds(grace)
                .and_then(|d| at.checked_add_signed(d))
                .is_none_or(|end| now <= end)
        }
        _ => true,
    }
}

/// Requests and limits as quota names them (upstream's
/// `podComputeUsageHelper`).
/// A pod's requests or limits with its overhead (limits take the overhead
/// only where they are set), as upstream's `PodRequests`/`PodLimits`.
fn pod_total(pod: &Value, which: &str) -> BTreeMap<String, i128> {
    let mut total = resource::pod_total(pod, which);
    for (k, v) in parse_list(pod.pointer("/spec/overhead")) {
        if which == "requests" || total.contains_key(&k) {
            *total.entry(k).or_default() += milli(&v);
        }
    }
    total
}

fn pod_usage(pod: &Value, u: &mut Usage) {
    u.insert("pods".into(), Amount::count(1));
    let compute = |n: &str| {
        matches!(n, "cpu" | "memory" | "ephemeral-storage") || n.starts_with("hugepages-")
    };
    for (name, m) in pod_total(pod, "requests") {
        let a = amount(pod, "requests", &name, m);
        if compute(&name) {
            u.insert(name.clone(), a);
        }
        if compute(&name) || is_extended(&name) {
            u.insert(format!("requests.{name}"), a);
        }
    }
    for (name, m) in pod_total(pod, "limits") {
        if compute(&name) {
            u.insert(format!("limits.{name}"), amount(pod, "limits", &name, m));
        }
    }
}

/// `m` milli-units of a pod resource, in the format of the first quantity
/// the pod states for it.
fn amount(pod: &Value, which: &str, name: &str, m: i128) -> Amount {
    let pointer = format!("/resources/{which}/{name}");
    let stated = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| resource::containers(pod, list))
        .chain(pod.pointer("/spec"))
        .find_map(|c| c.pointer(&pointer).and_then(Value::as_str));
    let binary = stated
        .and_then(|s| Quantity::parse(s).ok())
        .is_some_and(|q| q.format() == Format::BinarySI);
    Amount { milli: m, binary }
}

/// An extended resource: a domain-qualified name outside
/// `kubernetes.io`, not `requests.`-prefixed (upstream's
/// `IsExtendedResourceName`).
fn is_extended(name: &str) -> bool {
    let Some((domain, _)) = name.split_once('/') else {
        return false;
    };
    let native = domain == "kubernetes.io" || domain.ends_with(".kubernetes.io");
    !native && !name.starts_with("requests.")
}

fn service_usage(svc: &Value, u: &mut Usage) {
    u.insert("services".into(), Amount::count(1));
    let ports = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let ports = Amount::count(i128::try_from(ports).unwrap_or(0));
    match text(svc, "/spec/type").unwrap_or("ClusterIP") {
        "NodePort" => {
            u.insert("services.nodeports".into(), ports);
        }
        "LoadBalancer" => {
            let allocate = svc
                .pointer("/spec/allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            if allocate {
                u.insert("services.nodeports".into(), ports);
            }
            u.insert("services.loadbalancers".into(), Amount::count(1));
        }
        _ => {}
    }
}

/// The class a claim names: the beta annotation first, as upstream's
/// `GetPersistentVolumeClaimClass`.
fn claim_class(pvc: &Value) -> Option<&str> {
    text(
        pvc,
        "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
    )
    .or_else(|| text(pvc, "/spec/storageClassName"))
    .filter(|c| !c.is_empty())
}

fn claim_usage(pvc: &Value, u: &mut Usage) {
    u.insert("persistentvolumeclaims".into(), Amount::count(1));
    let requested = parse_list(pvc.pointer("/spec/resources/requests"));
    let allocated = parse_list(pvc.pointer("/status/allocatedResources"));
    // The larger of the request and what expansion already allocated.
    let storage = [requested.get("storage"), allocated.get("storage")]
        .into_iter()
        .flatten()
        .map(Amount::of)
        .max_by_key(|a| a.milli);
    let class = claim_class(pvc);
    if let Some(class) = class {
        let key = format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims");
        u.insert(key, Amount::count(1));
    }
    if let Some(storage) = storage {
        u.insert("requests.storage".into(), storage);
        if let Some(class) = class {
            let key = format!("{class}.storageclass.storage.k8s.io/requests.storage");
            u.insert(key, storage);
        }
    }
}

/// The resource whose objects a quota key counts (the evaluator that
/// matches it).
pub fn counted_resource(key: &str) -> Option<(String, String)> {
    let core = |r: &str| Some((String::new(), r.to_owned()));
    if let Some(counted) = key.strip_prefix("count/") {
        return Some(match counted.split_once('.') {
            Some((resource, group)) => (group.to_owned(), resource.to_owned()),
            None => (String::new(), counted.to_owned()),
        });
    }
    if key.contains(".storageclass.storage.k8s.io/") {
        return core("persistentvolumeclaims");
    }
    let compute = |n: &str| {
        matches!(n, "cpu" | "memory" | "ephemeral-storage") || n.starts_with("hugepages-")
    };
    match key {
        "pods" => core("pods"),
        k if compute(k) => core("pods"),
        "requests.storage" | "persistentvolumeclaims" => core("persistentvolumeclaims"),
        k if k
            .strip_prefix("requests.")
            .is_some_and(|n| compute(n) || is_extended(n)) =>
        {
            core("pods")
        }
        k if k.strip_prefix("limits.").is_some_and(compute) => core("pods"),
        "services" | "services.loadbalancers" | "services.nodeports" => core("services"),
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => core(key),
        _ => None,
    }
}

/// A quota's scope selectors: `spec.scopes` (as Exists) and
/// `spec.scopeSelector.matchExpressions`.
fn selectors(quota: &Value) -> Vec<(&str, &str, Vec<&str>)> {
    let scopes = quota.pointer("/spec/scopes").and_then(Value::as_array);
    let exprs = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array);
    let mut out: Vec<(&str, &str, Vec<&str>)> = scopes
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| (s, "Exists", Vec::new()))
        .collect();
    for e in exprs.into_iter().flatten() {
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        out.push((
            text(e, "/scopeName").unwrap_or_default(),
            text(e, "/operator").unwrap_or_default(),
            values,
        ));
    }
    out
}

/// Whether the quota tracks this object: some hard key counts its
/// resource, and every scope selects it (upstream's `Matches`; resources
/// without scope support are never selected by a scoped quota).
pub fn matches(quota: &Value, group: &str, resource: &str, obj: &Value) -> bool {
    let tracked = quota
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .is_some_and(|h| {
            h.keys()
                .any(|k| counted_resource(k).is_some_and(|(g, r)| g == group && r == resource))
        });
    tracked
        && selectors(quota).iter().all(|(scope, op, values)| {
            if !group.is_empty() {
                return false;
            }
            match resource {
                "pods" => pod_in_scope(obj, scope, op, values),
                "persistentvolumeclaims" => claim_in_scope(obj, scope, op, values),
                _ => false,
            }
        })
}

fn pod_in_scope(pod: &Value, scope: &str, op: &str, values: &[&str]) -> bool {
    let terminating = pod
        .pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0);
    match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort(pod),
        "NotBestEffort" => !best_effort(pod),
        "PriorityClass" => {
            let class = text(pod, "/spec/priorityClassName").unwrap_or_default();
            match op {
                "Exists" => !class.is_empty(),
                "In" => values.contains(&class),
                "NotIn" => !values.contains(&class),
                // A pod without a class has no PriorityClass label.
                "DoesNotExist" => class.is_empty(),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => cross_namespace_affinity(pod),
        _ => false,
    }
}

/// Whether a pod's QoS class is BestEffort: its recorded class, or no
/// positive cpu or memory request or limit anywhere.
fn best_effort(pod: &Value) -> bool {
    if let Some(class) = text(pod, "/status/qosClass").filter(|c| !c.is_empty()) {
        return class == "BestEffort";
    }
    ["requests", "limits"].iter().all(|which| {
        resource::pod_total(pod, which)
            .iter()
            .all(|(k, m)| !(k == "cpu" || k == "memory") || *m <= 0)
    })
}

/// Pod (anti-)affinity terms naming other namespaces or a namespace
/// selector.
fn cross_namespace_affinity(pod: &Value) -> bool {
    let mut terms = Vec::new();
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(a) = pod.pointer(&format!("/spec/affinity/{kind}")) else {
            continue;
        };
        let required = a.get("requiredDuringSchedulingIgnoredDuringExecution");
        terms.extend(required.and_then(Value::as_array).into_iter().flatten());
        let preferred = a.get("preferredDuringSchedulingIgnoredDuringExecution");
        let weighted = preferred.and_then(Value::as_array).into_iter().flatten();
        terms.extend(weighted.filter_map(|w| w.get("podAffinityTerm")));
    }
    terms.iter().any(|t| {
        let named = t
            .get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty());
        named || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
    })
}

fn claim_in_scope(pvc: &Value, scope: &str, op: &str, values: &[&str]) -> bool {
    if scope != "VolumeAttributesClass" {
        return false;
    }
    let classes: Vec<&str> = [
        "/spec/volumeAttributesClassName",
        "/status/currentVolumeAttributesClassName",
        "/status/modifyVolumeStatus/targetVolumeAttributesClassName",
    ]
    .iter()
    .filter_map(|p| text(pvc, p))
    .filter(|c| !c.is_empty())
    .collect();
    match op {
        "Exists" => !classes.is_empty(),
        "DoesNotExist" => classes.is_empty(),
        "In" => classes.iter().any(|c| values.contains(c)),
        "NotIn" => classes.iter().all(|c| !values.contains(c)),
        _ => false,
    }
}

/// What the namespace's stored objects of one resource that the quota
/// tracks use now.
pub async fn recount(
    stores: &Stores,
    namespace: &str,
    (group, resource): (&str, &str),
    quota: &Value,
) -> Result<Usage, ApiError> {
    let now = Utc::now();
    let mut total = Usage::new();
    for obj in stores.list(group, resource, Some(namespace)).await? {
        if matches(quota, group, resource, &obj) {
            add_all(&mut total, usage(group, resource, &obj, now));
        }
    }
    Ok(total)
}

/// A quota's status computed from the namespace's objects: `hard` from
/// the spec, `used` for every hard resource (zero when unused).
pub async fn status(stores: &Stores, quota: &Value) -> Result<Value, ApiError> {
    let namespace = text(quota, "/metadata/namespace").unwrap_or_default();
    let hard = hard(quota);
    let mut counted: Vec<(String, String)> =
        hard.keys().filter_map(|k| counted_resource(k)).collect();
    counted.sort();
    counted.dedup();
    let mut used = Usage::new();
    for (group, resource) in &counted {
        add_all(
            &mut used,
            recount(stores, namespace, (group, resource), quota).await?,
        );
    }
    Ok(status_of(&hard, &used))
}

/// `{"hard": …, "used": …}` with `used` limited to the hard resources.
pub fn status_of(hard: &Usage, used: &Usage) -> Value {
    let show = |a: &Amount| a.to_string();
    let hard_out: BTreeMap<&String, String> = hard.iter().map(|(k, v)| (k, show(v))).collect();
    let used_out: BTreeMap<&String, String> = hard
        .keys()
        .map(|k| {
            let mut a = used.get(k).copied().unwrap_or_default();
            a.milli = a.milli.max(0);
            (k, show(&a))
        })
        .collect();
    json!({"hard": hard_out, "used": used_out})
}

#[cfg(test)]
#[path = "evaluator_tests.rs"]
mod tests;
