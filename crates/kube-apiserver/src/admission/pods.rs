//! Pod and node plugins that fill in scheduling fields:
//! DefaultTolerationSeconds, Priority, RuntimeClass and
//! TaintNodesByCondition.

use apimachinery::status::ApiError;
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::service_account::object_mut;
use apiserver::admission::initializer::{text, Stores};

fn is_pod_create(a: &Attributes) -> bool {
    a.operation == Operation::Create && a.is("", "pods") && a.subresource.is_empty()
}

fn spec_mut(a: &mut Attributes) -> Option<&mut Map<String, Value>> {
    a.object.as_mut().and_then(|p| object_mut(p, "spec"))
}

/// DefaultTolerationSeconds: pods tolerate not-ready and unreachable nodes
/// for `--default-*-toleration-seconds` before eviction.
pub struct DefaultTolerationSeconds {
    pub not_ready_seconds: i64,
    pub unreachable_seconds: i64,
}

impl Handler for DefaultTolerationSeconds {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

#[async_trait]
impl MutationInterface for DefaultTolerationSeconds {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod_create(a) {
            return Ok(());
        }
        let Some(spec) = spec_mut(a) else {
            return Ok(());
        };
        let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
        let Some(list) = tolerations.as_array_mut() else {
            return Ok(());
        };
        for (key, seconds) in [
            ("node.kubernetes.io/not-ready", self.not_ready_seconds),
            ("node.kubernetes.io/unreachable", self.unreachable_seconds),
        ] {
            let tolerated = list.iter().any(|t| {
                let k = t.get("key").and_then(Value::as_str).unwrap_or_default();
                let e = t.get("effect").and_then(Value::as_str).unwrap_or_default();
                (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
            });
            if !tolerated {
                list.push(
                    json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                                 "tolerationSeconds": seconds}),
                );
            }
        }
        if list.is_empty() {
            spec.remove("tolerations");
        }
        Ok(())
    }
}

/// The classes the API server creates at startup, valid even before.
const SYSTEM_CLASSES: &[(&str, i64)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// Priority: a pod's priorityClassName (or the default class) decides its
/// priority; only one class may be the global default.
pub struct Priority {
    pub stores: Stores,
}

impl Handler for Priority {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

impl Priority {
    async fn default_class(&self) -> Result<Option<Value>, ApiError> {
        let classes = self
            .stores
            .list("scheduling.k8s.io", "priorityclasses", None)
            .await?;
        // The oldest default wins when several exist, as upstream picks.
        Ok(classes
            .iter()
            .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .min_by_key(|c| {
                text(c, "/metadata/creationTimestamp")
                    .unwrap_or_default()
                    .to_owned()
            })
            .map(|c| c.to_value()))
    }

    async fn class(&self, name: &str) -> Result<Option<Value>, ApiError> {
        if let Some(c) = self
            .stores
            .get("scheduling.k8s.io", "priorityclasses", None, name)
            .await?
        {
            return Ok(Some(c.to_value()));
        }
        Ok(SYSTEM_CLASSES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, v)| json!({"metadata": {"name": n}, "value": v})))
    }
}

#[async_trait]
impl MutationInterface for Priority {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod_create(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let name = text(pod, "/spec/priorityClassName")
            .unwrap_or_default()
            .to_owned();
        let class = if name.is_empty() {
            self.default_class().await?
        } else {
            match self.class(&name).await? {
                Some(c) => Some(c),
                None => {
                    return Err(a.forbidden(format!("no PriorityClass with name {name} was found")))
                }
            }
        };
        let value = class
            .as_ref()
            .and_then(|c| c.get("value"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let given = pod.pointer("/spec/priority").and_then(Value::as_i64);
        if given.is_some_and(|p| p != value) {
            return Err(a.forbidden(format!(
                "the integer value of priority ({}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name",
                given.unwrap_or_default()
            )));
        }
        let preemption = class
            .as_ref()
            .and_then(|c| c.get("preemptionPolicy"))
            .cloned()
            .unwrap_or_else(|| json!("PreemptLowerPriority"));
        let class_name = class
            .as_ref()
            .and_then(|c| text(c, "/metadata/name"))
            .map(str::to_owned);
        let Some(spec) = spec_mut(a) else {
            return Ok(());
        };
        if let Some(n) = class_name {
            spec.insert("priorityClassName".into(), json!(n));
        }
        spec.insert("priority".into(), json!(value));
        spec.entry("preemptionPolicy").or_insert(preemption);
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for Priority {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !a.is("scheduling.k8s.io", "priorityclasses") || !a.subresource.is_empty() {
            return Ok(());
        }
        let Some(pc) = a.object.as_ref() else {
            return Ok(());
        };
        if pc.get("globalDefault").and_then(Value::as_bool) != Some(true) {
            return Ok(());
        }
        if let Some(existing) = self.default_class().await? {
            let other = text(&existing, "/metadata/name").unwrap_or_default();
            if other != a.name {
                return Err(a.forbidden(format!(
                    "PriorityClass {other} is already marked as default. Only one default can exist"
                )));
            }
        }
        Ok(())
    }
}

/// RuntimeClass: a pod's runtime class must exist; its overhead and
/// scheduling constraints are copied into the pod.
pub struct RuntimeClass {
    pub stores: Stores,
}

impl Handler for RuntimeClass {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

#[async_trait]
impl MutationInterface for RuntimeClass {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod_create(a) {
            return Ok(());
        }
        let Some(name) = a
            .object
            .as_ref()
            .and_then(|p| text(p, "/spec/runtimeClassName"))
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
        else {
            return Ok(());
        };
        let Some(rc) = self
            .stores
            .get("node.k8s.io", "runtimeclasses", None, &name)
            .await?
        else {
            return Err(a.forbidden(format!("pod rejected: RuntimeClass \"{name}\" not found")));
        };
        let overhead = rc.pointer("/overhead/podFixed").cloned();
        let selector = rc
            .pointer("/scheduling/nodeSelector")
            .and_then(Value::as_object)
            .cloned();
        let tolerations = rc
            .pointer("/scheduling/tolerations")
            .and_then(Value::as_array)
            .cloned();
        let mut problem = None;
        let Some(spec) = a.object.as_mut().and_then(|p| object_mut(p, "spec")) else {
            return Ok(());
        };
        if let Some(overhead) = overhead {
            match spec.get("overhead") {
                Some(o) if *o != overhead => {
                    problem = Some("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".to_owned());
                }
                _ => {
                    spec.insert("overhead".into(), overhead);
                }
            }
        }
        if let Some(selector) = selector {
            if let Some(ns) = spec
                .entry("nodeSelector")
                .or_insert_with(|| json!({}))
                .as_object_mut()
            {
                for (k, v) in selector {
                    match ns.get(&k) {
                        Some(existing) if *existing != v => {
                            problem = Some(format!("conflict: runtimeClass.scheduling.nodeSelector[{k}] = {}; pod.spec.nodeSelector[{k}] = {}",
                                v.as_str().unwrap_or_default(), existing.as_str().unwrap_or_default()));
                        }
                        _ => {
                            ns.insert(k, v);
                        }
                    }
                }
            }
        }
        if let Some(extra) = tolerations {
            if let Some(list) = spec
                .entry("tolerations")
                .or_insert_with(|| json!([]))
                .as_array_mut()
            {
                for t in extra {
                    if !list.contains(&t) {
                        list.push(t);
                    }
                }
            }
        }
        match problem {
            Some(msg) => Err(a.forbidden(msg)),
            None => Ok(()),
        }
    }
}

/// TaintNodesByCondition: a new node is not ready until its kubelet says
/// so, so it starts with the not-ready NoSchedule taint.
pub struct TaintNodesByCondition;

impl Handler for TaintNodesByCondition {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

#[async_trait]
impl MutationInterface for TaintNodesByCondition {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !a.is("", "nodes") || !a.subresource.is_empty() {
            return Ok(());
        }
        let Some(spec) = spec_mut(a) else {
            return Ok(());
        };
        let Some(taints) = spec
            .entry("taints")
            .or_insert_with(|| json!([]))
            .as_array_mut()
        else {
            return Ok(());
        };
        let key = "node.kubernetes.io/not-ready";
        let present = taints.iter().any(|t| {
            t.get("key").and_then(Value::as_str) == Some(key)
                && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
        });
        if !present {
            taints.push(json!({"key": key, "effect": "NoSchedule"}));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tolerations_are_added_once() {
        let plugin = DefaultTolerationSeconds {
            not_ready_seconds: 300,
            unreachable_seconds: 60,
        };
        let info = apiserver::registry::ResourceInfo {
            has_status: true,
            ..apiserver::registry::ResourceInfo::testing("", "Pod")
        };
        let pod = json!({"metadata": {"namespace": "a"}, "spec": {"tolerations": [
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists"}]}});
        let request = apiserver::admission::RequestContext::new(std::sync::Arc::new(
            apiserver::authentication::user::UserInfo::anonymous(),
        ));
        let mut attrs = Attributes::new(
            &info,
            Operation::Create,
            Some(pod),
            None,
            "",
            None,
            "",
            false,
            request,
        );
        assert!(plugin.admit(&mut attrs).await.is_ok());
        let tolerations = attrs
            .object
            .as_ref()
            .and_then(|p| p.pointer("/spec/tolerations"))
            .cloned();
        assert_eq!(
            tolerations,
            Some(json!([
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]))
        );
    }
}
