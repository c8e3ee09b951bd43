//! NodeDeclaredFeatureValidator: an update of a pod bound to a node that
//! needs a node feature (upstream's node-declared-features framework infers
//! it from the change) is refused unless the node lists the feature in
//! `status.declaredFeatures`. The feature known here is upstream's
//! `GuaranteedQoSPodCPUResize`: changing the CPU request of a container of
//! a Guaranteed pod. Feature checks of ResourceSlices belong to the
//! `DRANodeAllocatableResources` gate, off in this release.

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use async_trait::async_trait;
use serde_json::Value;

use crate::api::resource::{containers, milli, parse_list};
use apiserver::admission::initializer::{text, Stores};

const GUARANTEED_CPU_RESIZE: &str = "GuaranteedQoSPodCPUResize";

pub struct NodeDeclaredFeatureValidator {
    pub stores: Stores,
}

impl Handler for NodeDeclaredFeatureValidator {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Update
    }
}

/// Whether a Guaranteed pod's update changes a container's CPU request.
fn resizes_guaranteed_cpu(old: &Value, new: &Value) -> bool {
    if text(old, "/status/qosClass").is_some_and(|q| q != "Guaranteed") {
        return false;
    }
    let cpu = |c: &Value| {
        parse_list(c.pointer("/resources/requests"))
            .get("cpu")
            .map(milli)
    };
    containers(old, "containers")
        .zip(containers(new, "containers"))
        .any(|(o, n)| matches!((cpu(o), cpu(n)), (Some(a), Some(b)) if a != b))
}

/// The node features an update needs, sorted by name.
fn required_features(old: &Value, new: &Value) -> Vec<&'static str> {
    let mut features = Vec::new();
    if resizes_guaranteed_cpu(old, new) {
        features.push(GUARANTEED_CPU_RESIZE);
    }
    features
}

#[async_trait]
impl ValidationInterface for NodeDeclaredFeatureValidator {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !a.is("", "pods") || !matches!(a.subresource.as_str(), "" | "resize") {
            return Ok(());
        }
        let (Some(new), Some(old)) = (a.object.as_ref(), a.old_object.as_deref()) else {
            return Ok(());
        };
        let node = text(new, "/spec/nodeName").unwrap_or_default();
        // Only spec changes move the generation.
        let generation = |p: &Value| p.pointer("/metadata/generation").cloned();
        if node.is_empty() || generation(old) == generation(new) {
            return Ok(());
        }
        let required = required_features(old, new);
        if required.is_empty() {
            return Ok(());
        }
        let Some(stored) = self.stores.get("", "nodes", None, node).await? else {
            return Err(a.forbidden(format!("node {node:?} not found")));
        };
        let declared: Vec<&str> = stored
            .pointer("/status/declaredFeatures")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let missing: Vec<&str> = required
            .into_iter()
            .filter(|f| !declared.contains(f))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(a.forbidden(format!(
            "pod update requires features {} which are not available on node {node:?}",
            missing.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::admission::testing::{refusal, stores, user, Write};

    fn pod(cpu: &str, generation: i64) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "generation": generation},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i",
                "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]},
            "status": {"qosClass": "Guaranteed"}})
    }

    fn node(name: &str, features: Value) -> (&'static str, &'static str, Value) {
        (
            "",
            "nodes",
            json!({"metadata": {"name": name}, "status": {"declaredFeatures": features}}),
        )
    }

    fn resize(new: Value, old: Value) -> Attributes {
        Write::new("", "pods", Operation::Update)
            .sub("resize")
            .object(new)
            .old(old)
            .by(user("alice", &[]))
    }

    #[tokio::test]
    async fn cpu_resizes_of_guaranteed_pods_need_the_node_feature() {
        let without = NodeDeclaredFeatureValidator {
            stores: stores(vec![node("n1", json!([]))]).await,
        };
        assert_eq!(
            refusal(without.validate(&resize(pod("2", 2), pod("1", 1))).await),
            "pods \"p\" is forbidden: pod update requires features GuaranteedQoSPodCPUResize which are not available on node \"n1\""
        );
        // No spec change (same generation), or the same CPU: nothing needed.
        assert_eq!(
            refusal(without.validate(&resize(pod("2", 1), pod("1", 1))).await),
            ""
        );
        assert_eq!(
            refusal(
                without
                    .validate(&resize(pod("1", 2), pod("1000m", 1)))
                    .await
            ),
            ""
        );
        let with = NodeDeclaredFeatureValidator {
            stores: stores(vec![node("n1", json!([GUARANTEED_CPU_RESIZE]))]).await,
        };
        assert_eq!(
            refusal(with.validate(&resize(pod("2", 2), pod("1", 1))).await),
            ""
        );
        let missing = NodeDeclaredFeatureValidator {
            stores: stores(vec![]).await,
        };
        assert_eq!(
            refusal(missing.validate(&resize(pod("2", 2), pod("1", 1))).await),
            "pods \"p\" is forbidden: node \"n1\" not found"
        );
    }
}
