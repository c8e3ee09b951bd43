//! The ResourceQuota plugin: a write that would take a namespace's usage of
//! a resource past a quota's `spec.hard` is refused with upstream's
//! "exceeded quota" answer. With no quota controller running, the plugin
//! also keeps `status.hard` and `status.used` current: usage is recounted
//! from the stored objects (upstream's quota evaluators) on every check, so
//! a write that failed after admission is not counted for long.

use std::collections::BTreeMap;

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use async_trait::async_trait;
use futures::FutureExt;
use serde_json::{json, Value};
use storage::Object;

use super::lookup::{text, Stores};
use super::resources::{self, from_milli, milli, parse_list};

/// Usage in milli-units per quota resource name.
type Usage = BTreeMap<String, i128>;

pub struct ResourceQuota {
    pub stores: Stores,
    /// `limitedResources` of the plugin's configuration: resources that
    /// may only be used under a quota that covers them.
    pub limited: Vec<LimitedResource>,
}

/// One `limitedResources` entry of a ResourceQuotaConfiguration.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitedResource {
    #[serde(default)]
    pub api_group: String,
    pub resource: String,
    #[serde(default)]
    pub match_contains: Vec<String>,
}

impl LimitedResource {
    /// The entries of a ResourceQuotaConfiguration document.
    pub fn from_config(doc: Option<&Value>) -> Vec<LimitedResource> {
        doc.and_then(|d| d.get("limitedResources"))
            .and_then(|l| serde_json::from_value(l.clone()).ok())
            .unwrap_or_default()
    }
}

impl Handler for ResourceQuota {
    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }
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
/// counts for everything).
fn usage(group: &str, resource: &str, obj: &Value) -> Usage {
    let mut u = Usage::new();
    u.insert(count_key(group, resource), 1000);
    if !group.is_empty() {
        return u;
    }
    match resource {
        "pods" => {
            let phase = text(obj, "/status/phase").unwrap_or_default();
            if phase == "Succeeded" || phase == "Failed" {
                return Usage::new();
            }
            u.insert("pods".into(), 1000);
            for (which, prefix) in [("requests", "requests."), ("limits", "limits.")] {
                for (name, m) in resources::pod_total(obj, which) {
                    if which == "requests" && (name == "cpu" || name == "memory") {
                        u.insert(name.clone(), m);
                    }
                    u.insert(format!("{prefix}{name}"), m);
                }
            }
        }
        "services" => {
            u.insert("services".into(), 1000);
            let kind = text(obj, "/spec/type").unwrap_or("ClusterIP");
            if kind == "LoadBalancer" {
                u.insert("services.loadbalancers".into(), 1000);
            }
            if kind == "NodePort" || kind == "LoadBalancer" {
                let ports = obj
                    .pointer("/spec/ports")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                u.insert(
                    "services.nodeports".into(),
                    i128::try_from(ports).unwrap_or(0) * 1000,
                );
            }
        }
        "persistentvolumeclaims" => {
            u.insert("persistentvolumeclaims".into(), 1000);
            let storage = parse_list(obj.pointer("/spec/resources/requests"))
                .get("storage")
                .map(milli)
                .unwrap_or(0);
            u.insert("requests.storage".into(), storage);
            if let Some(class) = text(obj, "/spec/storageClassName").filter(|c| !c.is_empty()) {
                let prefix = format!("{class}.storageclass.storage.k8s.io/");
                u.insert(format!("{prefix}persistentvolumeclaims"), 1000);
                u.insert(format!("{prefix}requests.storage"), storage);
            }
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            u.insert(resource.into(), 1000);
        }
        _ => {}
    }
    u
}

/// Whether a quota's scopes select this object (unknown scopes select
/// nothing, so a quota never blocks what it cannot judge).
fn in_scope(quota: &Value, resource: &str, obj: &Value) -> bool {
    let scopes = quota.pointer("/spec/scopes").and_then(Value::as_array);
    scopes.into_iter().flatten().all(|scope| {
        let best_effort = resource == "pods"
            && resources::pod_total(obj, "requests").is_empty()
            && resources::pod_total(obj, "limits").is_empty();
        let terminating = obj.pointer("/spec/activeDeadlineSeconds").is_some();
        match scope.as_str().unwrap_or_default() {
            "BestEffort" => best_effort,
            "NotBestEffort" => resource == "pods" && !best_effort,
            "Terminating" => resource == "pods" && terminating,
            "NotTerminating" => resource == "pods" && !terminating,
            _ => false,
        }
    }) && quota.pointer("/spec/scopeSelector").is_none()
}

/// `a=1,b=2`, sorted by name, as upstream prints resource lists.
fn pretty(u: &Usage, keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("{k}={}", from_milli(u.get(k).copied().unwrap_or(0))))
        .collect::<Vec<_>>()
        .join(",")
}

/// Pods must state every compute resource a quota limits.
fn missing_compute(pod: &Value, hard: &Usage) -> Option<String> {
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for key in hard.keys() {
        let (which, name) = match key.as_str() {
            "cpu" | "memory" => ("requests", key.as_str()),
            k => match k.split_once('.') {
                Some((w @ ("requests" | "limits"), n)) if n == "cpu" || n == "memory" => (w, n),
                _ => continue,
            },
        };
        for list in ["containers", "initContainers"] {
            for c in resources::containers(pod, list) {
                if c.pointer(&format!("/resources/{which}/{name}")).is_none() {
                    let cname = text(c, "/name").unwrap_or_default().to_owned();
                    let names = missing.entry(key.clone()).or_default();
                    if !names.contains(&cname) {
                        names.push(cname);
                    }
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .into_iter()
        .map(|(k, mut names)| {
            names.sort();
            format!("{k} for: {}", names.join(","))
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// What the namespace's stored objects of one resource use now.
async fn recount(
    stores: &Stores,
    namespace: &str,
    (group, resource): (&str, &str),
    quota: &Value,
) -> Result<Usage, ApiError> {
    let mut total = Usage::new();
    for obj in stores.list(group, resource, Some(namespace)).await? {
        if in_scope(quota, resource, &obj) {
            for (k, v) in usage(group, resource, &obj) {
                *total.entry(k).or_default() += v;
            }
        }
    }
    Ok(total)
}

/// The resource whose objects a quota key counts.
fn counted_resource(key: &str) -> Option<(String, String)> {
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
    match key {
        "pods" | "cpu" | "memory" | "ephemeral-storage" => core("pods"),
        k if k.starts_with("requests.") && k != "requests.storage" => core("pods"),
        k if k.starts_with("limits.") => core("pods"),
        "requests.storage" | "persistentvolumeclaims" => core("persistentvolumeclaims"),
        k if k.starts_with("services") => core("services"),
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => core(key),
        _ => None,
    }
}

/// Fills a new or changed quota's status from what the namespace holds (the
/// quota controller's first sync), once the quota is stored.
fn sync_later(stores: Stores, namespace: String, name: String) {
    tokio::spawn(async move {
        for _ in 0..SYNC_ATTEMPTS {
            tokio::time::sleep(SYNC_INTERVAL).await;
            let Ok(Some(quota)) = stores
                .get("", "resourcequotas", Some(&namespace), &name)
                .await
            else {
                continue;
            };
            let hard: Usage = parse_list(quota.pointer("/spec/hard"))
                .iter()
                .map(|(k, v)| (k.clone(), milli(v)))
                .collect();
            let mut resources: Vec<(String, String)> =
                hard.keys().filter_map(|k| counted_resource(k)).collect();
            resources.sort();
            resources.dedup();
            let mut used = Usage::new();
            for (group, resource) in &resources {
                let Ok(u) = recount(&stores, &namespace, (group, resource), &quota).await else {
                    return;
                };
                for (k, v) in u {
                    *used.entry(k).or_default() += v;
                }
            }
            for k in hard.keys() {
                used.entry(k.clone()).or_default();
            }
            if let Err(e) = record(&stores, &quota, &hard, &used).await {
                tracing::warn!(quota = %name, error = %e, "quota status not recorded");
            }
            return;
        }
    });
}

/// How often, and how long, a quota's first sync waits for it to be stored.
const SYNC_ATTEMPTS: u32 = 20;
const SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Writes the quota's status: hard from spec, `used` for the hard keys.
async fn record(
    stores: &Stores,
    quota: &Object,
    hard: &Usage,
    used: &Usage,
) -> Result<(), ApiError> {
    let Some(store) = stores.store("", "resourcequotas") else {
        return Ok(());
    };
    let key = store.object_key(
        apiserver::registry::object_meta::namespace(quota),
        apiserver::registry::object_meta::name(quota),
    );
    let hard: BTreeMap<String, String> = hard
        .iter()
        .map(|(k, v)| (k.clone(), from_milli(*v)))
        .collect();
    let used: BTreeMap<String, String> = used
        .iter()
        .filter(|(k, _)| hard.contains_key(*k))
        .map(|(k, v)| (k.clone(), from_milli((*v).max(0))))
        .collect();
    let update = move |current: Option<Object>| {
        let result = match current {
            Some(cur) => {
                let mut obj = (*cur).clone();
                let status = json!({"hard": hard, "used": used});
                if let Some(map) = obj.as_object_mut() {
                    let mut merged = map.get("status").cloned().unwrap_or_else(|| json!({}));
                    if let (Some(m), Some(s)) = (merged.as_object_mut(), status.as_object()) {
                        m.extend(s.clone());
                    }
                    map.insert("status".into(), merged);
                }
                Ok(obj)
            }
            None => Err(storage::StorageError::NotFound { key: String::new() }),
        };
        async move { result }.boxed()
    };
    match store
        .storage()
        .guaranteed_update(&key, false, None, &update)
        .await
    {
        Ok(_) | Err(storage::StorageError::NotFound { .. }) => Ok(()),
        Err(e) => Err(ApiError::internal_error(e)),
    }
}

impl ResourceQuota {
    /// A limited resource must be covered by some quota's hard limits.
    fn check_limited(
        &self,
        a: &Attributes,
        quotas: &[Object],
        used: &Usage,
    ) -> Result<(), ApiError> {
        let mut uncovered: Vec<String> = Vec::new();
        for limit in self
            .limited
            .iter()
            .filter(|l| l.api_group == a.resource.group && l.resource == a.resource.resource)
        {
            for name in used
                .keys()
                .filter(|k| limit.match_contains.iter().any(|m| k.contains(m.as_str())))
            {
                let covered = quotas
                    .iter()
                    .any(|q| q.pointer("/spec/hard").and_then(|h| h.get(name)).is_some());
                if !covered && !uncovered.contains(name) {
                    uncovered.push(name.clone());
                }
            }
        }
        if uncovered.is_empty() {
            return Ok(());
        }
        uncovered.sort();
        Err(a.forbidden(format!(
            "insufficient quota to consume: {}",
            uncovered.join(",")
        )))
    }
}

/// A quota's hard limits and the usage it will record.
struct Charge {
    quota: Object,
    hard: Usage,
    used: Usage,
}

impl ResourceQuota {
    /// Checks one quota against the change `delta` makes; returns what to
    /// record, or None when the quota does not track the change.
    async fn charge(
        &self,
        a: &Attributes,
        quota: Object,
        delta: &Usage,
    ) -> Result<Option<Charge>, ApiError> {
        let resource = a.resource.resource.as_str();
        let hard: Usage = parse_list(quota.pointer("/spec/hard"))
            .iter()
            .map(|(k, v)| (k.clone(), milli(v)))
            .collect();
        let subject = a.object.as_ref().or(a.old_object.as_deref());
        if !subject.is_some_and(|o| in_scope(&quota, resource, o)) {
            return Ok(None);
        }
        let change = |k: &String| delta.get(k).copied().unwrap_or(0);
        let affected: Vec<String> = hard.keys().filter(|k| change(k) != 0).cloned().collect();
        if affected.is_empty() {
            return Ok(None);
        }
        let name = text(&quota, "/metadata/name").unwrap_or_default();
        if a.operation != Operation::Delete && a.is("", "pods") {
            if let Some(msg) = a.object.as_ref().and_then(|p| missing_compute(p, &hard)) {
                return Err(a.forbidden(format!("failed quota: {name}: {msg}")));
            }
        }
        // The stored objects; on update and delete they include the old one.
        let resource_key = (a.resource.group.as_str(), resource);
        let mut used = recount(&self.stores, &a.namespace, resource_key, &quota).await?;
        let limit = |k: &String| hard.get(k).copied().unwrap_or(0);
        let exceeded: Vec<String> = affected
            .iter()
            .filter(|k| change(k) > 0 && used.get(*k).copied().unwrap_or(0) + change(k) > limit(k))
            .cloned()
            .collect();
        if a.operation != Operation::Delete && !exceeded.is_empty() {
            return Err(a.forbidden(format!(
                "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                pretty(delta, &exceeded),
                pretty(&used, &exceeded),
                pretty(&hard, &exceeded),
            )));
        }
        for k in &affected {
            *used.entry(k.clone()).or_default() += change(k);
        }
        Ok(Some(Charge { quota, hard, used }))
    }
}

#[async_trait]
impl ValidationInterface for ResourceQuota {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if a.namespace.is_empty() || !a.subresource.is_empty() {
            return Ok(());
        }
        if a.is("", "resourcequotas") && a.operation != Operation::Delete && !a.dry_run {
            sync_later(self.stores.clone(), a.namespace.clone(), a.name.clone());
        }
        let quotas = self
            .stores
            .list("", "resourcequotas", Some(&a.namespace))
            .await?;
        let (group, resource) = (a.resource.group.as_str(), a.resource.resource.as_str());
        let of = |o: Option<&Value>| o.map(|o| usage(group, resource, o)).unwrap_or_default();
        let mut delta = of(a.object.as_ref());
        if a.operation == Operation::Create {
            self.check_limited(a, &quotas, &delta)?;
        }
        for (k, v) in of(a.old_object.as_deref()) {
            *delta.entry(k).or_default() -= v;
        }
        let mut charges = Vec::new();
        for quota in quotas {
            if let Some(charge) = self.charge(a, quota, &delta).await? {
                charges.push(charge);
            }
        }
        if a.dry_run {
            return Ok(());
        }
        for c in charges {
            record(&self.stores, &c.quota, &c.hard, &c.used).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_use_counts_and_compute() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}
        ]}});
        let u = usage("", "pods", &pod);
        assert_eq!(u["pods"], 1000);
        assert_eq!(u["count/pods"], 1000);
        assert_eq!(u["requests.cpu"], 500);
        assert_eq!(u["cpu"], 500);
        assert_eq!(u["limits.cpu"], 1000);
        assert_eq!(u["requests.memory"], 1_073_741_824_000);
        assert_eq!(
            missing_compute(&pod, &Usage::from([("limits.cpu".to_string(), 2000)])),
            Some("must specify limits.cpu for: b".into())
        );
    }

    #[test]
    fn quota_keys_name_the_resource_they_count() {
        let of = |k| counted_resource(k);
        let core = |r: &str| Some((String::new(), r.to_string()));
        assert_eq!(of("requests.cpu"), core("pods"));
        assert_eq!(of("limits.memory"), core("pods"));
        assert_eq!(of("requests.storage"), core("persistentvolumeclaims"));
        assert_eq!(
            of("gold.storageclass.storage.k8s.io/requests.storage"),
            core("persistentvolumeclaims")
        );
        assert_eq!(of("services.nodeports"), core("services"));
        assert_eq!(
            of("count/deployments.apps"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(of("count/configmaps"), core("configmaps"));
        assert_eq!(of("example.com/gpu"), None);
    }

    #[test]
    fn deployments_count_by_group() {
        assert_eq!(
            usage("apps", "deployments", &json!({})),
            Usage::from([("count/deployments.apps".to_string(), 1000)])
        );
    }
}
