//! Scheduling plugins: PodNodeSelector (namespace and cluster node
//! selectors merged into new pods, with per-namespace whitelists),
//! LimitPodHardAntiAffinityTopology (required anti-affinity only per host)
//! and PodTopologyLabels (a bound pod carries its node's zone and region).

use std::collections::BTreeMap;

use apimachinery::status::{ApiError, StatusReason};
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::service_account::object_mut;
use apiserver::admission::initializer::{text, Stores};

const NODE_SELECTOR_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/node-selector";
const CLUSTER_DEFAULT: &str = "clusterDefaultNodeSelector";
const HOSTNAME: &str = "kubernetes.io/hostname";
/// The node labels PodTopologyLabels copies.
const TOPOLOGY_LABELS: [&str; 2] = ["topology.k8s.io/zone", "topology.k8s.io/region"];

type Labels = BTreeMap<String, String>;

fn is_pod(a: &Attributes) -> bool {
    a.is("", "pods") && a.subresource.is_empty() && a.object.is_some()
}

/// Plain errors answer 500, as upstream's non-status errors do.
fn plain_error(message: impl Into<String>) -> ApiError {
    ApiError::new(500, StatusReason::Unknown, message)
}

/// Upstream's `ConvertSelectorToLabelsMap`: `k=v,k2=v2` into a map.
fn parse_selector(selector: &str) -> Result<Labels, ApiError> {
    let mut labels = Labels::new();
    if selector.is_empty() {
        return Ok(labels);
    }
    for item in selector.split(',') {
        let parts: Vec<&str> = item.split('=').collect();
        let [key, value] = parts[..] else {
            return Err(plain_error(format!(
                "invalid selector: [{}]",
                parts.join(" ")
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        let key_errors = apimachinery::validation::is_qualified_name(key);
        if !key_errors.is_empty() {
            return Err(plain_error(format!(
                ": Invalid value: {key:?}: {}",
                key_errors.join("; ")
            )));
        }
        let value_errors = apimachinery::validation::is_label_value(value);
        if !value_errors.is_empty() {
            return Err(plain_error(format!(
                ": Invalid value: {value:?}: {}",
                value_errors.join("; ")
            )));
        }
        labels.insert(key.to_owned(), value.to_owned());
    }
    Ok(labels)
}

/// Whether two label sets give one key different values.
fn conflicts(a: &Labels, b: &Labels) -> bool {
    a.iter().any(|(k, v)| b.get(k).is_some_and(|w| w != v))
}

fn node_selector(pod: &Value) -> Labels {
    pod.pointer("/spec/nodeSelector")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_default()
}

/// PodNodeSelector's configuration: `podNodeSelectorPluginConfig` maps
/// `clusterDefaultNodeSelector` and namespace names to selectors.
/// Unreadable documents are ignored, as upstream ignores them.
pub fn node_selector_config(doc: Option<&Value>) -> BTreeMap<String, String> {
    doc.and_then(Value::as_object)
        .and_then(|m| {
            m.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("podNodeSelectorPluginConfig"))
        })
        .and_then(|(_, v)| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

pub struct PodNodeSelector {
    pub stores: Stores,
    /// Selectors by namespace, and the cluster default.
    pub cluster: BTreeMap<String, String>,
}

impl Handler for PodNodeSelector {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

impl PodNodeSelector {
    /// The namespace's annotated selector, else the cluster default.
    async fn namespace_selector(&self, namespace: &str) -> Result<Labels, ApiError> {
        let Some(ns) = self.stores.get("", "namespaces", None, namespace).await? else {
            return Err(ApiError::not_found("", "namespaces", namespace));
        };
        let annotated = ns
            .pointer("/metadata/annotations")
            .and_then(|m| m.get(NODE_SELECTOR_ANNOTATION))
            .and_then(Value::as_str);
        match annotated {
            Some(selector) => parse_selector(selector),
            None => parse_selector(self.cluster_entry(CLUSTER_DEFAULT)),
        }
    }

    fn cluster_entry(&self, key: &str) -> &str {
        self.cluster
            .get(key)
            .map(String::as_str)
            .unwrap_or_default()
    }

    fn conflict(a: &Attributes) -> ApiError {
        a.forbidden("pod node label selector conflicts with its namespace node label selector")
    }
}

#[async_trait]
impl MutationInterface for PodNodeSelector {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod(a) {
            return Ok(());
        }
        let namespace = self.namespace_selector(&a.namespace).await?;
        let pod = node_selector(a.object.as_ref().unwrap_or(&Value::Null));
        if conflicts(&namespace, &pod) {
            return Err(Self::conflict(a));
        }
        let mut merged = namespace;
        merged.extend(pod);
        if !merged.is_empty() {
            if let Some(spec) = a.object.as_mut().and_then(|p| object_mut(p, "spec")) {
                spec.insert("nodeSelector".into(), json!(merged));
            }
        }
        self.validate(a).await
    }
}

#[async_trait]
impl ValidationInterface for PodNodeSelector {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_pod(a) {
            return Ok(());
        }
        let namespace = self.namespace_selector(&a.namespace).await?;
        let pod = node_selector(a.object.as_ref().unwrap_or(&Value::Null));
        if conflicts(&namespace, &pod) {
            return Err(Self::conflict(a));
        }
        let whitelist = parse_selector(self.cluster_entry(&a.namespace))?;
        let allowed = whitelist.is_empty()
            || pod
                .iter()
                .all(|(k, v)| whitelist.get(k).is_some_and(|w| w == v));
        if !allowed {
            return Err(a.forbidden(
                "pod node label selector labels conflict with its namespace whitelist",
            ));
        }
        Ok(())
    }
}

/// LimitPodHardAntiAffinityTopology: required pod anti-affinity may only
/// spread pods per host.
pub struct LimitPodHardAntiAffinityTopology;

impl Handler for LimitPodHardAntiAffinityTopology {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

#[async_trait]
impl ValidationInterface for LimitPodHardAntiAffinityTopology {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_pod(a) {
            return Ok(());
        }
        let terms = a
            .object
            .as_ref()
            .and_then(|p| {
                p.pointer(
                    "/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution",
                )
            })
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for term in terms {
            let key = text(term, "/topologyKey").unwrap_or_default();
            if key != HOSTNAME {
                return Err(a.forbidden(format!(
                    "affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey {key} but only key {HOSTNAME} is allowed"
                )));
            }
        }
        Ok(())
    }
}

/// PodTopologyLabels: pods created on a node, and bindings of pods to a
/// node, get the node's zone and region labels (existing ones are kept).
pub struct PodTopologyLabels {
    pub stores: Stores,
    /// The `PodTopologyLabelsAdmission` feature gate.
    pub enabled: bool,
}

impl Handler for PodTopologyLabels {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

#[async_trait]
impl MutationInterface for PodTopologyLabels {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !self.enabled || !a.is("", "pods") {
            return Ok(());
        }
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        let node = match a.subresource.as_str() {
            "" => text(obj, "/spec/nodeName"),
            "binding" if text(obj, "/target/kind") == Some("Node") => text(obj, "/target/name"),
            _ => None,
        };
        let Some(node) = node.filter(|n| !n.is_empty()).map(str::to_owned) else {
            return Ok(());
        };
        let Some(stored) = self.stores.get("", "nodes", None, &node).await? else {
            return Ok(());
        };
        let copied: Vec<(&str, Value)> = TOPOLOGY_LABELS
            .iter()
            .filter_map(|key| {
                let value = stored.pointer("/metadata/labels")?.get(*key)?;
                Some((*key, value.clone()))
            })
            .collect();
        if copied.is_empty() {
            return Ok(());
        }
        let labels = a
            .object
            .as_mut()
            .and_then(|o| object_mut(o, "metadata"))
            .and_then(|m| {
                m.entry("labels")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
            });
        if let Some(labels) = labels {
            for (key, value) in copied {
                labels.entry(key).or_insert(value);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
