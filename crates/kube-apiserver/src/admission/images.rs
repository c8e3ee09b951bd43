//! AlwaysPullImages: every container of a new pod, or of a pod update that
//! brings a new image, pulls its image on each start, so one tenant cannot
//! run another's private image already on the node.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::status::{ApiError, StatusReason};
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use serde_json::{json, Value};

const ALWAYS: &str = "Always";
/// The container lists of a pod spec, in upstream's visiting order.
const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

pub struct AlwaysPullImages;

impl Handler for AlwaysPullImages {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

/// Every container of a pod with the path of its list.
fn containers(pod: &Value) -> impl Iterator<Item = (&'static str, usize, &Value)> {
    CONTAINER_LISTS.into_iter().flat_map(move |list| {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .map(move |(i, c)| (list, i, c))
    })
}

fn image(c: &Value) -> &str {
    c.get("image").and_then(Value::as_str).unwrap_or_default()
}

/// Pods proper only; updates that bring no image the pod did not have
/// are left alone.
fn ignored(a: &Attributes) -> bool {
    if !a.is("", "pods") || !a.subresource.is_empty() {
        return true;
    }
    let (Some(new), Some(old)) = (a.object.as_ref(), a.old_object.as_deref()) else {
        return false;
    };
    if a.operation != Operation::Update {
        return false;
    }
    let old_images: HashSet<&str> = containers(old).map(|(_, _, c)| image(c)).collect();
    containers(new).all(|(_, _, c)| old_images.contains(image(c)))
}

#[async_trait]
impl MutationInterface for AlwaysPullImages {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if ignored(a) {
            return Ok(());
        }
        let Some(spec) = a.object.as_mut().and_then(|p| p.get_mut("spec")) else {
            return Ok(());
        };
        for list in CONTAINER_LISTS {
            let Some(items) = spec.get_mut(list).and_then(Value::as_array_mut) else {
                continue;
            };
            for c in items.iter_mut().filter_map(Value::as_object_mut) {
                c.insert("imagePullPolicy".into(), json!(ALWAYS));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for AlwaysPullImages {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if ignored(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let refusals: Vec<String> = containers(pod)
            .filter_map(|(list, i, c)| {
                let policy = c
                    .get("imagePullPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                (policy != ALWAYS).then(|| {
                    let path = Path::new("spec")
                        .child(list)
                        .index(i)
                        .child("imagePullPolicy");
                    let err = FieldError::not_supported(&path, policy, &[ALWAYS]);
                    a.forbidden(err).message
                })
            })
            .collect();
        // Upstream hands back an aggregate of forbidden errors, which is
        // not a status error and so answers 500 with the joined messages.
        let message = match refusals.len() {
            0 => return Ok(()),
            1 => refusals.concat(),
            _ => format!("[{}]", refusals.join(", ")),
        };
        Err(ApiError::new(500, StatusReason::Unknown, message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::testing::{refusal, user, Write};

    fn pod(policy: &str, images: &[&str]) -> Value {
        let containers: Vec<Value> = images
            .iter()
            .map(|i| json!({"name": i, "image": i, "imagePullPolicy": policy}))
            .collect();
        json!({"metadata": {"name": "p"}, "spec": {"containers": containers,
            "initContainers": [{"name": "init", "image": "busybox"}]}})
    }

    #[tokio::test]
    async fn new_pods_pull_always() {
        let mut attrs = Write::new("", "pods", Operation::Create)
            .object(pod("IfNotPresent", &["nginx", "redis"]))
            .by(user("alice", &[]));
        assert_eq!(refusal(AlwaysPullImages.admit(&mut attrs).await), "");
        let admitted = attrs.object.clone().unwrap_or_default();
        for (_, _, c) in containers(&admitted) {
            assert_eq!(c["imagePullPolicy"], ALWAYS);
        }
        assert_eq!(refusal(AlwaysPullImages.validate(&attrs).await), "");
    }

    #[tokio::test]
    async fn updates_without_new_images_are_left_alone() {
        let old = pod("Always", &["nginx"]);
        let mut attrs = Write::new("", "pods", Operation::Update)
            .object(pod("Never", &["nginx"]))
            .old(old.clone())
            .by(user("alice", &[]));
        assert_eq!(refusal(AlwaysPullImages.admit(&mut attrs).await), "");
        assert_eq!(
            attrs
                .object
                .as_ref()
                .map(|p| p["spec"]["containers"][0]["imagePullPolicy"].clone()),
            Some(json!("Never"))
        );
        let attrs = Write::new("", "pods", Operation::Update)
            .object(pod("Never", &["nginx:2"]))
            .old(old)
            .name("p")
            .by(user("alice", &[]));
        assert_eq!(
            refusal(AlwaysPullImages.validate(&attrs).await),
            "[pods \"p\" is forbidden: spec.initContainers[0].imagePullPolicy: Unsupported value: \"\": supported values: \"Always\", pods \"p\" is forbidden: spec.containers[0].imagePullPolicy: Unsupported value: \"Never\": supported values: \"Always\"]"
        );
    }
}
