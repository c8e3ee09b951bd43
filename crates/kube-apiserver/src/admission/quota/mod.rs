//! The ResourceQuota plugin: a create or update that would take a
//! namespace's usage of a resource past a quota's `spec.hard` is refused
//! with upstream's "exceeded quota" answer, and pods must state the compute
//! resources a quota limits. Usage is recounted from the stored objects
//! (upstream's quota evaluators, in `evaluator`) on every check; the
//! admitted usage is written into the quota's status at once, and the
//! quota controller (`app::resource_quota`) keeps it current afterwards.

pub mod evaluator;

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use apiserver::registry::store::{Store, Target, WriteOptions};
use async_trait::async_trait;
use serde_json::Value;
use storage::Object;

use crate::api::resource;
use apiserver::admission::initializer::{text, Stores};
use evaluator::Usage;

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
        matches!(op, Operation::Create | Operation::Update)
    }
}

/// Whether the evaluator of a resource charges this write: objects on
/// create (pods through `resize` too), services and claims on update.
fn charged(group: &str, resource: &str, subresource: &str, op: Operation) -> bool {
    let core = group.is_empty();
    if !subresource.is_empty() {
        return core && resource == "pods" && subresource == "resize" && op == Operation::Update;
    }
    op == Operation::Create || (core && matches!(resource, "services" | "persistentvolumeclaims"))
}

/// `a=1,b=2`, sorted by name, as upstream prints resource lists.
fn pretty(u: &Usage, keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("{k}={}", u.get(k).copied().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(",")
}

/// Pods must state every cpu and memory resource a quota limits, in every
/// container (upstream's pod evaluator `Constraints`).
fn missing_compute(pod: &Value, hard: &Usage) -> Option<String> {
    let mut missing: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for key in hard.keys() {
        let (which, name) = match key.as_str() {
            "cpu" | "memory" => ("requests", key.as_str()),
            k => match k.split_once('.') {
                Some((w @ ("requests" | "limits"), n)) if n == "cpu" || n == "memory" => (w, n),
                _ => continue,
            },
        };
        let pointer = format!("/resources/{which}/{name}");
        for list in ["containers", "initContainers"] {
            for c in resource::containers(pod, list) {
                if c.pointer(&pointer).is_none() {
                    let names = missing.entry(key.as_str()).or_default();
                    let cname = text(c, "/name").unwrap_or_default();
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
            names.sort_unstable();
            format!("{k} for: {}", names.join(","))
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// Writes `status` (hard and used) into a quota through its status
/// subresource. With `expected`, only over that resourceVersion (a
/// conflict otherwise), so a status computed from older state is retried.
pub async fn write_status(
    store: &Store,
    quota: &Value,
    status: Value,
    expected: Option<String>,
) -> Result<(), ApiError> {
    let namespace = text(quota, "/metadata/namespace").map(str::to_owned);
    let name = text(quota, "/metadata/name").unwrap_or_default().to_owned();
    let for_error = name.clone();
    let mutate = Arc::new(move |current: Option<&Value>| {
        let Some(current) = current else {
            return Err(ApiError::not_found("", "resourcequotas", &for_error));
        };
        let version = text(current, "/metadata/resourceVersion");
        if expected.as_deref().is_some_and(|e| Some(e) != version) {
            let msg = "the object has been modified; please apply your changes to the latest version and try again";
            return Err(ApiError::conflict("", "resourcequotas", &for_error, msg));
        }
        let mut next = current.clone();
        let merged = next.as_object_mut().map(|m| {
            m.entry("status")
                .or_insert_with(|| Value::Object(Default::default()))
        });
        if let (Some(Value::Object(target)), Value::Object(new)) = (merged, &status) {
            target.extend(new.clone());
        }
        Ok(next)
    });
    let opts = WriteOptions::default();
    store
        .update(namespace.as_deref(), &name, Target::Status, mutate, &opts)
        .await
        .map(|_| ())
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
    /// record, or None when the quota limits nothing the change uses.
    async fn charge(
        &self,
        a: &Attributes,
        quota: Object,
        delta: &Usage,
    ) -> Result<Option<Charge>, ApiError> {
        let hard = evaluator::hard(&quota);
        let requested: Vec<String> = delta
            .keys()
            .filter(|k| hard.contains_key(*k))
            .cloned()
            .collect();
        if requested.is_empty() {
            return Ok(None);
        }
        let resource = (a.resource.group.as_str(), a.resource.resource.as_str());
        // The stored objects; on update they include the old one.
        let now = evaluator::recount(&self.stores, &a.namespace, resource, &quota).await?;
        let mut used = evaluator::parsed_used(&quota);
        for k in &requested {
            let mut total = now.get(k).copied().unwrap_or_default();
            total.add(delta.get(k).copied().unwrap_or_default());
            used.insert(k.clone(), total);
        }
        let over = |k: &&String| {
            let limit = hard.get(*k).map_or(0, |h| h.milli);
            used.get(*k).is_some_and(|u| u.milli > limit)
        };
        let exceeded: Vec<String> = requested.iter().filter(over).cloned().collect();
        if !exceeded.is_empty() {
            let name = text(&quota, "/metadata/name").unwrap_or_default();
            return Err(a.forbidden(format!(
                "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                pretty(delta, &exceeded),
                pretty(&now, &exceeded),
                pretty(&hard, &exceeded),
            )));
        }
        Ok(Some(Charge { quota, hard, used }))
    }

    /// The quotas that track the object, after checking that a pod states
    /// what they need (upstream's `Constraints`).
    fn interesting(
        &self,
        a: &Attributes,
        quotas: Vec<Object>,
        obj: &Value,
    ) -> Result<Vec<Object>, ApiError> {
        let (group, resource) = (a.resource.group.as_str(), a.resource.resource.as_str());
        let mut out = Vec::new();
        for quota in quotas {
            if !evaluator::matches(&quota, group, resource, obj) {
                continue;
            }
            if a.is("", "pods") {
                if let Some(msg) = missing_compute(obj, &evaluator::hard(&quota)) {
                    let name = text(&quota, "/metadata/name").unwrap_or_default();
                    return Err(a.forbidden(format!("failed quota: {name}: {msg}")));
                }
            }
            out.push(quota);
        }
        Ok(out)
    }
}

#[async_trait]
impl ValidationInterface for ResourceQuota {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let (group, resource) = (a.resource.group.as_str(), a.resource.resource.as_str());
        if a.namespace.is_empty() || !charged(group, resource, &a.subresource, a.operation) {
            return Ok(());
        }
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        let quotas = self
            .stores
            .list("", "resourcequotas", Some(&a.namespace))
            .await?;
        let now = chrono::Utc::now();
        let mut delta = evaluator::usage(group, resource, obj, now);
        if a.operation == Operation::Create {
            self.check_limited(a, &quotas, &delta)?;
        }
        let quotas = self.interesting(a, quotas, obj)?;
        if let Some(old) = a.old_object.as_deref() {
            // Only growth is charged on update.
            for (k, v) in evaluator::usage(group, resource, old, now) {
                if let Some(d) = delta.get_mut(&k) {
                    d.sub(v);
                    d.milli = d.milli.max(0);
                }
            }
        }
        if quotas.is_empty() || delta.values().all(|d| d.milli == 0) {
            return Ok(());
        }
        let mut charges = Vec::new();
        for quota in quotas {
            if let Some(charge) = self.charge(a, quota, &delta).await? {
                charges.push(charge);
            }
        }
        let store = self.stores.store("", "resourcequotas");
        let (Some(store), false) = (store, a.dry_run) else {
            return Ok(());
        };
        for c in charges {
            let status = evaluator::status_of(&c.hard, &c.used);
            write_status(store, &c.quota, status, None).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evaluator::Amount;
    use serde_json::json;

    fn usage_of(pairs: &[(&str, i128)]) -> Usage {
        pairs
            .iter()
            .map(|(k, m)| (k.to_string(), Amount::count(*m)))
            .collect()
    }

    #[test]
    fn pods_must_state_the_compute_resources_a_quota_limits() {
        let pod = json!({"spec": {
        "initContainers": [{"name": "init"}],
        "containers": [
            {"name": "b", "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1"}}},
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}
        ]}});
        let hard = usage_of(&[("limits.cpu", 2), ("memory", 1), ("pods", 3)]);
        assert_eq!(
            missing_compute(&pod, &hard).as_deref(),
            Some("must specify limits.cpu for: a,init; memory for: b,init")
        );
        assert_eq!(missing_compute(&pod, &usage_of(&[("pods", 1)])), None);
    }

    #[test]
    fn resource_lists_print_sorted_with_quantities() {
        let u = usage_of(&[("pods", 2), ("count/pods", 3)]);
        let keys = vec!["count/pods".to_string(), "pods".to_string()];
        assert_eq!(pretty(&u, &keys), "count/pods=3,pods=2");
    }

    #[test]
    fn only_services_and_claims_are_charged_on_update() {
        assert!(charged("", "services", "", Operation::Update));
        assert!(charged("", "persistentvolumeclaims", "", Operation::Update));
        assert!(!charged("", "pods", "", Operation::Update));
        assert!(charged("", "pods", "resize", Operation::Update));
        assert!(!charged("", "pods", "status", Operation::Update));
        assert!(!charged("", "configmaps", "", Operation::Update));
        assert!(charged("apps", "deployments", "", Operation::Create));
    }
}
