//! Binding a pod to a node (upstream's pod `BindingREST`): a scheduler
//! POSTs a Binding to `pods/<name>/binding` (or to the namespace's
//! `bindings`), which sets the pod's `spec.nodeName`, merges the binding's
//! annotations and marks the pod `PodScheduled`. A pod already bound, being
//! deleted or gated is refused with 409.

use std::sync::Arc;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::status::ApiError;
use apiserver::admission::GroupVersionKind;
use apiserver::endpoints::virtual_create::{CreateHandler, CreateRequest, VirtualResource};
use apiserver::registry::admission::{admit_create, SubresourceCreate};
use apiserver::registry::errors::{interpret, into_storage};
use apiserver::registry::store::Store;
use apiserver::registry::ResourceInfo;
use apiserver::server::GenericApiServer;
use futures::future::BoxFuture;
use serde_json::{json, Value};
use storage::Object;

/// Serves `pods/binding` and `bindings` when the core group serves pods.
pub fn install(server: &mut GenericApiServer) {
    let Some(pods) = server.store("", "v1", "pods") else {
        return;
    };
    server.install_subresource_create("", "v1", "pods/binding", resource(&pods, "pods/binding"));
    server.install_virtual_resource("", "v1", resource(&pods, "bindings"));
}

fn resource(pods: &Arc<Store>, path: &str) -> VirtualResource {
    let top_level = !path.contains('/');
    let pods = pods.clone();
    let create: CreateHandler = Arc::new(move |req| {
        let pods = pods.clone();
        Box::pin(async move { bind(&pods, req, top_level).await })
    });
    VirtualResource {
        info: ResourceInfo {
            singular: if top_level {
                "binding".into()
            } else {
                String::new()
            },
            ..ResourceInfo::create_only("", "v1", path, "Binding")
        },
        create,
    }
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

async fn bind(pods: &Store, req: CreateRequest, top_level: bool) -> Result<Value, ApiError> {
    let namespace = req
        .namespace
        .clone()
        .ok_or_else(|| ApiError::bad_request("namespace is required"))?;
    let binding = &req.body;
    let name = if top_level {
        text(binding, "/metadata/name").to_owned()
    } else {
        req.name.clone().unwrap_or_default()
    };
    if text(binding, "/metadata/name") != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let errors = validate(binding);
    if !errors.is_empty() {
        return Err(ApiError::invalid("", "Binding", &name, &errors));
    }
    // Plugins may add to the binding (PodTopologyLabels adds the node's
    // topology labels); what they leave is copied onto the pod.
    let admitted = admit(pods, &req, &namespace, &name).await?;
    let node = text(binding, "/target/name").to_owned();
    let metadata = admitted.get("metadata").cloned().unwrap_or(Value::Null);
    let preconditions = (
        text(binding, "/metadata/uid").to_owned(),
        text(binding, "/metadata/resourceVersion").to_owned(),
    );
    // Upstream writes the bound pod straight to storage: the pod's own
    // update rules (which forbid changing nodeName) do not apply.
    let pod_name = name.clone();
    let update =
        move |current: Option<Object>| -> BoxFuture<'static, storage::error::Result<Value>> {
            let bound = match current {
                None => Err(ApiError::not_found("", "pods", &pod_name)),
                Some(pod) => assign(&pod, &node, &metadata, &preconditions)
                    .map_err(|e| ApiError::conflict("", "pods/binding", &pod_name, e)),
            };
            Box::pin(async move { bound.map_err(into_storage) })
        };
    let key = pods.object_key(Some(&namespace), &name);
    pods.storage()
        .guaranteed_update(&key, false, None, &update)
        .await
        .map_err(|e| interpret(e, &pods.info, &name))?;
    Ok(
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

/// Upstream's `ValidatePodBinding`.
fn validate(binding: &Value) -> Vec<FieldError> {
    let target = Path::new("target");
    let mut errors = Vec::new();
    let kind = text(binding, "/target/kind");
    if !kind.is_empty() && kind != "Node" {
        errors.push(FieldError::not_supported(
            &target.child("kind"),
            kind,
            &["Node", "<empty>"],
        ));
    }
    if text(binding, "/target/name").is_empty() {
        errors.push(FieldError::required(&target.child("name"), ""));
    }
    errors
}

/// Runs the admission chain on the Binding as a create of `pods/binding`,
/// as upstream admits the binding itself (not the pod write it causes).
async fn admit(
    pods: &Store,
    req: &CreateRequest,
    namespace: &str,
    name: &str,
) -> Result<Value, ApiError> {
    let create = SubresourceCreate {
        parent: &pods.info,
        subresource: "binding",
        kind: GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "Binding".into(),
        },
        namespace,
        name,
        user: req.user.clone(),
    };
    admit_create(pods.admission().as_ref(), create, req.body.clone()).await
}

/// The bound pod, with the binding's annotations and labels, or why it
/// cannot be bound (answered as a conflict).
fn assign(
    pod: &Value,
    node: &str,
    metadata: &Value,
    (uid, resource_version): &(String, String),
) -> Result<Value, String> {
    let name = text(pod, "/metadata/name");
    if !uid.is_empty() && text(pod, "/metadata/uid") != uid {
        return Err(format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            text(pod, "/metadata/uid")
        ));
    }
    if !resource_version.is_empty() && text(pod, "/metadata/resourceVersion") != resource_version {
        return Err(format!(
            "Precondition failed: ResourceVersion in precondition: {resource_version}, ResourceVersion in object meta: {}",
            text(pod, "/metadata/resourceVersion")
        ));
    }
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Err(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        ));
    }
    let assigned = text(pod, "/spec/nodeName");
    if !assigned.is_empty() {
        return Err(format!(
            "pod {name} is already assigned to node {assigned:?}"
        ));
    }
    if pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
    {
        return Err(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    let mut pod = pod.clone();
    pod["spec"]["nodeName"] = json!(node);
    set_scheduled(&mut pod);
    for field in ["annotations", "labels"] {
        let Some(extra) = metadata.get(field).and_then(Value::as_object) else {
            continue;
        };
        let meta = &mut pod["metadata"];
        if !meta[field].is_object() && !extra.is_empty() {
            meta[field] = json!({});
        }
        for (k, v) in extra {
            meta[field][k] = v.clone();
        }
    }
    Ok(pod)
}

/// Sets the `PodScheduled` condition to True (upstream's
/// `UpdatePodCondition`: the transition time moves only with the status).
fn set_scheduled(pod: &mut Value) {
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    if !pod["status"]["conditions"].is_array() {
        pod["status"]["conditions"] = json!([]);
    }
    let Some(conditions) = pod["status"]["conditions"].as_array_mut() else {
        return;
    };
    let condition = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null,
        "lastTransitionTime": now});
    match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(c) if c["status"] == "True" => {}
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(node: &str) -> Value {
        json!({"metadata": {"name": "p", "uid": "u1", "resourceVersion": "5"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Pending"}})
    }

    #[test]
    fn a_pending_pod_is_bound_and_scheduled() {
        let none = (String::new(), String::new());
        let metadata = json!({"annotations": {"a": "b"}, "labels": {"topology.k8s.io/zone": "z1"}});
        let bound = assign(&pod(""), "n1", &metadata, &none).unwrap();
        assert_eq!(bound["metadata"]["labels"]["topology.k8s.io/zone"], "z1");
        assert_eq!(bound["spec"]["nodeName"], "n1");
        assert_eq!(bound["metadata"]["annotations"]["a"], "b");
        assert_eq!(bound["status"]["conditions"][0]["type"], "PodScheduled");
        assert_eq!(bound["status"]["conditions"][0]["status"], "True");
    }

    #[test]
    fn bound_deleting_gated_or_changed_pods_are_refused() {
        let none = (String::new(), String::new());
        assert_eq!(
            assign(&pod("n2"), "n1", &Value::Null, &none).unwrap_err(),
            "pod p is already assigned to node \"n2\""
        );
        let mut deleting = pod("");
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(assign(&deleting, "n1", &Value::Null, &none)
            .unwrap_err()
            .contains("being deleted"));
        let mut gated = pod("");
        gated["spec"]["schedulingGates"] = json!([{"name": "g"}]);
        assert!(assign(&gated, "n1", &Value::Null, &none)
            .unwrap_err()
            .contains("schedulingGates"));
        let stale = (String::new(), "4".to_owned());
        assert!(assign(&pod(""), "n1", &Value::Null, &stale)
            .unwrap_err()
            .contains("ResourceVersion"));
    }

    #[test]
    fn the_target_must_be_a_named_node() {
        assert!(validate(&json!({"target": {"kind": "Node", "name": "n1"}})).is_empty());
        let errs = validate(&json!({"target": {"kind": "Pod"}}));
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["target.kind", "target.name"]);
    }
}
