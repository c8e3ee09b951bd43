//! Toleration plugins: PodTolerationRestriction (namespace or cluster
//! default tolerations merged into new pods, and a whitelist pods'
//! tolerations must fit) and ExtendedResourceToleration (pods requesting an
//! extended resource tolerate the taint of nodes that offer it). Toleration
//! merging and covering follow upstream's `tolerations` helpers.

use std::collections::BTreeSet;

use apimachinery::status::{ApiError, StatusReason};
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::ConfigError;
use crate::api::resource::containers;
use apiserver::admission::initializer::Stores;

const DEFAULT_TOLERATIONS: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";
const TOLERATIONS_WHITELIST: &str = "scheduler.alpha.kubernetes.io/tolerationsWhitelist";
const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";

/// One toleration, with upstream's empty-string defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Toleration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operator: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub effect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

impl Toleration {
    /// Whether `self` tolerates everything `t` does.
    fn covers(&self, t: &Toleration) -> bool {
        if self == t {
            return true;
        }
        // An empty key with Exists matches every key.
        if t.key != self.key && (!self.key.is_empty() || self.operator != "Exists") {
            return false;
        }
        if t.effect != self.effect && !self.effect.is_empty() {
            return false;
        }
        if self.effect == "NoExecute" {
            if let Some(limit) = self.toleration_seconds {
                if t.toleration_seconds.is_none_or(|s| s > limit) {
                    return false;
                }
            }
        }
        match self.operator.as_str() {
            "Equal" | "" => t.operator == "Equal" && t.value == self.value,
            "Exists" => true,
            _ => false,
        }
    }
}

/// `first` then `second`, without tolerations another one covers
/// (between equal ones the first is kept).
pub fn merge(first: &[Toleration], second: &[Toleration]) -> Vec<Toleration> {
    let all: Vec<&Toleration> = first.iter().chain(second).collect();
    let mut merged: Vec<Toleration> = Vec::with_capacity(all.len());
    for (i, t) in all.iter().enumerate() {
        let redundant = merged.iter().any(|m| m.covers(t))
            || all[i + 1..]
                .iter()
                .any(|later| *later != *t && later.covers(t));
        if !redundant {
            merged.push((*t).clone());
        }
    }
    merged
}

/// Whether every toleration is covered by one of the whitelist.
fn within(tolerations: &[Toleration], whitelist: &[Toleration]) -> bool {
    whitelist.is_empty()
        || tolerations
            .iter()
            .all(|t| whitelist.iter().any(|w| w.covers(t)))
}

pub fn pod_tolerations(pod: &Value) -> Vec<Toleration> {
    pod.pointer("/spec/tolerations")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default()
}

fn set_tolerations(a: &mut Attributes, tolerations: &[Toleration]) {
    let Some(spec) = a.object.as_mut().and_then(|p| p.get_mut("spec")) else {
        return;
    };
    if let (Some(spec), Ok(list)) = (spec.as_object_mut(), serde_json::to_value(tolerations)) {
        spec.insert("tolerations".into(), list);
    }
}

fn is_pod(a: &Attributes) -> bool {
    a.is("", "pods") && a.subresource.is_empty() && a.object.is_some()
}

/// The plugin's configuration (podtolerationrestriction.admission.k8s.io
/// Configuration): cluster-wide defaults and whitelist.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TolerationConfig {
    #[serde(default)]
    pub default: Vec<Toleration>,
    #[serde(default)]
    pub whitelist: Vec<Toleration>,
}

impl TolerationConfig {
    pub fn from_config(doc: Option<&Value>) -> Result<Self, ConfigError> {
        let Some(doc) = doc else {
            return Ok(Self::default());
        };
        serde_json::from_value(doc.clone()).map_err(|e| ConfigError::Plugin {
            plugin: "PodTolerationRestriction",
            message: e.to_string(),
        })
    }
}

pub struct PodTolerationRestriction {
    pub stores: Stores,
    pub config: TolerationConfig,
}

impl Handler for PodTolerationRestriction {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

/// Upstream returns plain errors here, which answer 500.
fn plain_error(message: impl Into<String>) -> ApiError {
    ApiError::new(500, StatusReason::Unknown, message)
}

impl PodTolerationRestriction {
    /// The tolerations a namespace annotation lists: `None` when the
    /// annotation is absent (the cluster's apply), empty when it is "".
    async fn namespace_list(
        &self,
        namespace: &str,
        annotation: &str,
    ) -> Result<Option<Vec<Toleration>>, ApiError> {
        let Some(ns) = self.stores.get("", "namespaces", None, namespace).await? else {
            return Err(ApiError::not_found("", "namespaces", namespace));
        };
        let Some(text) = ns
            .pointer("/metadata/annotations")
            .and_then(|m| m.get(annotation))
            .and_then(Value::as_str)
        else {
            return Ok(None);
        };
        if text.is_empty() {
            return Ok(Some(Vec::new()));
        }
        serde_json::from_str(text)
            .map(Some)
            .map_err(|e| plain_error(e.to_string()))
    }
}

/// Whether a pod asks for no CPU or memory at all (BestEffort QoS).
fn best_effort(pod: &Value) -> bool {
    let asks = |c: &Value| {
        ["requests", "limits"].iter().any(|which| {
            c.pointer(&format!("/resources/{which}"))
                .and_then(Value::as_object)
                .is_some_and(|m| m.contains_key("cpu") || m.contains_key("memory"))
        })
    };
    let pod_level = pod.pointer("/spec").is_some_and(asks);
    !pod_level
        && !containers(pod, "initContainers")
            .chain(containers(pod, "containers"))
            .any(asks)
}

#[async_trait]
impl MutationInterface for PodTolerationRestriction {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod(a) {
            return Ok(());
        }
        let mut extra = Vec::new();
        if a.operation == Operation::Create {
            extra = self
                .namespace_list(&a.namespace, DEFAULT_TOLERATIONS)
                .await?
                .unwrap_or_else(|| self.config.default.clone());
        }
        let pod = a.object.as_ref().unwrap_or(&Value::Null);
        if !best_effort(pod) {
            extra.push(Toleration {
                key: MEMORY_PRESSURE.into(),
                operator: "Exists".into(),
                effect: "NoSchedule".into(),
                ..Toleration::default()
            });
        }
        if !extra.is_empty() {
            let merged = merge(&pod_tolerations(pod), &extra);
            set_tolerations(a, &merged);
        }
        self.validate(a).await
    }
}

#[async_trait]
impl ValidationInterface for PodTolerationRestriction {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_pod(a) {
            return Ok(());
        }
        let tolerations = pod_tolerations(a.object.as_ref().unwrap_or(&Value::Null));
        if tolerations.is_empty() {
            return Ok(());
        }
        let (whitelist, scope) = match self
            .namespace_list(&a.namespace, TOLERATIONS_WHITELIST)
            .await?
        {
            Some(list) => (list, "namespace"),
            None => (self.config.whitelist.clone(), "cluster"),
        };
        if within(&tolerations, &whitelist) {
            return Ok(());
        }
        Err(plain_error(format!("pod tolerations (possibly merged with namespace default tolerations) conflict with its {scope} whitelist")))
    }
}

/// ExtendedResourceToleration: a pod requesting an extended resource
/// (`example.com/gpu`) tolerates the `NoSchedule` taint of that name.
pub struct ExtendedResourceToleration;

impl Handler for ExtendedResourceToleration {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

/// Upstream's `IsExtendedResourceName`: a domain-prefixed name outside
/// `kubernetes.io`, valid as a quota name with `requests.` in front.
fn is_extended_resource(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    if native || name.starts_with("requests.") {
        return false;
    }
    apimachinery::validation::is_qualified_name(&format!("requests.{name}")).is_empty()
}

#[async_trait]
impl MutationInterface for ExtendedResourceToleration {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod(a) {
            return Ok(());
        }
        let pod = a.object.as_ref().unwrap_or(&Value::Null);
        let resources: BTreeSet<String> = containers(pod, "initContainers")
            .chain(containers(pod, "containers"))
            .filter_map(|c| c.pointer("/resources/requests").and_then(Value::as_object))
            .flat_map(|r| r.keys())
            .filter(|name| is_extended_resource(name))
            .cloned()
            .collect();
        if resources.is_empty() {
            return Ok(());
        }
        let wanted: Vec<Toleration> = resources
            .into_iter()
            .map(|key| Toleration {
                key,
                operator: "Exists".into(),
                effect: "NoSchedule".into(),
                ..Toleration::default()
            })
            .collect();
        let merged = merge(&pod_tolerations(pod), &wanted);
        set_tolerations(a, &merged);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
