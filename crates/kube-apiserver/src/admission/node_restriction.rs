//! NodeRestriction: a kubelet (user `system:node:<name>` in group
//! `system:nodes`) may only change its own Node (not its taints, not the
//! labels reserved to administrators), create mirror pods bound to itself,
//! delete, evict and update the status of pods bound to itself, and write
//! its own lease, CSINode, ResourceSlices, node certificate requests and
//! tokens of its pods. Other users are not restricted.

use std::collections::BTreeSet;

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, MutationInterface, Operation};
use apiserver::authentication::user::UserInfo;
use async_trait::async_trait;
use serde_json::Value;

use super::certificates::request_subject;
use apiserver::admission::initializer::{text, Stores};

const NODE_USER_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
const RESTRICTED_LABEL_NAMESPACE: &str = "node-restriction.kubernetes.io";
/// Signers whose requests must name the node itself.
const NODE_SIGNERS: [&str; 2] = [
    "kubernetes.io/kubelet-serving",
    "kubernetes.io/kube-apiserver-client-kubelet",
];
/// Labels a kubelet sets on its Node (upstream's `kubeletapis`).
const KUBELET_LABELS: [&str; 11] = [
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];
const KUBELET_LABEL_NAMESPACES: [&str; 2] = ["kubelet.kubernetes.io", "node.kubernetes.io"];

/// The node a user is, when it is one: `Some("")` for a member of
/// `system:nodes` whose name names no node.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

pub struct NodeRestriction {
    pub stores: Stores,
}

impl Handler for NodeRestriction {
    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }
}

#[async_trait]
impl MutationInterface for NodeRestriction {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let Some(node) = node_identity(a.user()) else {
            return Ok(());
        };
        if node.is_empty() {
            return Err(a.forbidden(format!(
                "could not determine node from user {:?}",
                a.user().name
            )));
        }
        let node = node.to_owned();
        let a = &*a;
        match (a.resource.group.as_str(), a.resource.resource.as_str()) {
            ("", "pods") => self.pod(&node, a).await,
            ("", "nodes") => admit_node(&node, a),
            ("", "persistentvolumeclaims") if a.subresource == "status" => {
                admit_claim_status(&node, a)
            }
            ("", "persistentvolumeclaims") => Err(a.forbidden("may only update PVC status")),
            ("", "serviceaccounts") => self.token(&node, a).await,
            ("coordination.k8s.io", "leases") => admit_lease(&node, a),
            ("storage.k8s.io", "csinodes") => admit_csi_node(&node, a),
            ("resource.k8s.io", "resourceslices") => admit_resource_slice(&node, a),
            ("certificates.k8s.io", "certificatesigningrequests") => admit_csr(&node, a),
            _ => Ok(()),
        }
    }
}

/// The object being written, or the stored one for a delete.
fn subject_object(a: &Attributes) -> Option<&Value> {
    a.object
        .as_ref()
        .or(a.old_object.as_deref().map(|o| o.value()))
}

fn node_name_of(pod: &Value) -> &str {
    text(pod, "/spec/nodeName").unwrap_or_default()
}

impl NodeRestriction {
    async fn pod(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        match (a.subresource.as_str(), a.operation) {
            ("", Operation::Create) => self.mirror_pod(node, a).await,
            ("", Operation::Delete) => {
                let pod = a.old_object.as_deref().map_or(&Value::Null, |o| o.value());
                if node_name_of(pod) != node {
                    return Err(a.forbidden(format!(
                        "node {node:?} can only delete pods with spec.nodeName set to itself"
                    )));
                }
                Ok(())
            }
            ("", op) => Err(a.forbidden(format!(
                "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
                op.as_str()
            ))),
            ("status", Operation::Update) => admit_pod_status(node, a),
            ("status", op) => Err(a.forbidden(format!("unexpected operation {:?}", op.as_str()))),
            ("eviction", Operation::Create) => self.eviction(node, a).await,
            ("eviction", op) => Err(a.forbidden(format!("unexpected operation {op}"))),
            (sub, _) => Err(a.forbidden(format!(
                "unexpected pod subresource {sub:?}, only 'status' and 'eviction' are allowed"
            ))),
        }
    }

    async fn mirror_pod(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        let pod = a.object.as_ref().unwrap_or(&Value::Null);
        let refuse = |msg: String| Err(a.forbidden(msg));
        let mirror = pod
            .pointer("/metadata/annotations")
            .and_then(|m| m.get(MIRROR_POD_ANNOTATION))
            .is_some();
        if !mirror {
            return refuse(format!("pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"));
        }
        if node_name_of(pod) != node {
            return refuse(format!(
                "node {node:?} can only create pods with spec.nodeName set to itself"
            ));
        }
        let owners = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let owner = match owners {
            [owner] => owner,
            [] => {
                return refuse(format!(
                    "node {node:?} can only create pods with an owner reference set to itself"
                ))
            }
            _ => {
                return refuse(format!(
                "node {node:?} can only create pods with a single owner reference set to itself"
            ))
            }
        };
        let field = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or_default();
        if field("apiVersion") != "v1" || field("kind") != "Node" || field("name") != node {
            return refuse(format!(
                "node {node:?} can only create pods with an owner reference set to itself"
            ));
        }
        if owner.get("controller").and_then(Value::as_bool) != Some(true) {
            return refuse(format!(
                "node {node:?} can only create pods with a controller owner reference set to itself"
            ));
        }
        if owner.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
            return refuse(format!(
                "node {node:?} must not set blockOwnerDeletion on an owner reference"
            ));
        }
        let Some(stored) = self.stores.get("", "nodes", None, node).await? else {
            return Err(ApiError::not_found("", "nodes", node));
        };
        let uid = text(&stored, "/metadata/uid").unwrap_or_default();
        if field("uid") != uid {
            return refuse(format!(
                "node {node} UID mismatch: expected {} got {uid}",
                field("uid")
            ));
        }
        match forbidden_reference(pod) {
            Some(what) => refuse(format!(
                "node {node:?} can not create pods that reference {what}"
            )),
            None => Ok(()),
        }
    }

    async fn eviction(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        let eviction = a.object.as_ref().unwrap_or(&Value::Null);
        let name = match (a.name.as_str(), text(eviction, "/metadata/name")) {
            ("", None | Some("")) => {
                return Err(a.forbidden("could not determine pod from request data"))
            }
            ("", Some(name)) | (name, _) => name,
        };
        let ns = Some(a.namespace.as_str());
        let Some(pod) = self.stores.get("", "pods", ns, name).await? else {
            return Err(ApiError::not_found("", "pods", name));
        };
        if node_name_of(&pod) != node {
            return Err(a.forbidden(format!(
                "node {node} can only evict pods with spec.nodeName set to itself"
            )));
        }
        Ok(())
    }

    async fn token(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        if a.operation != Operation::Create || a.subresource != "token" {
            return Ok(());
        }
        let request = a.object.as_ref().unwrap_or(&Value::Null);
        let bound = |f: &str| {
            request
                .pointer(&format!("/spec/boundObjectRef/{f}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        if bound("apiVersion") != "v1" || bound("kind") != "Pod" || bound("name").is_empty() {
            return Err(a.forbidden("node requested token not bound to a pod"));
        }
        if bound("uid").is_empty() {
            return Err(a.forbidden("node requested token with a pod binding without a uid"));
        }
        let ns = Some(a.namespace.as_str());
        let Some(pod) = self.stores.get("", "pods", ns, bound("name")).await? else {
            return Err(ApiError::not_found("", "pods", bound("name")));
        };
        if text(&pod, "/metadata/uid") != Some(bound("uid")) {
            return Err(a.forbidden(format!("the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated", bound("uid"))));
        }
        if node_name_of(&pod) != node {
            return Err(
                a.forbidden("node requested token bound to a pod scheduled on a different node")
            );
        }
        Ok(())
    }
}

/// What a mirror pod refers to that a node may not hand out: service
/// accounts, secrets, config maps, trust bundles or claims.
fn forbidden_reference(pod: &Value) -> Option<&'static str> {
    let spec = pod.get("spec")?;
    let named = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if named(spec.get("serviceAccountName")) {
        return Some("a service account");
    }
    let containers: Vec<&Value> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|list| spec.get(*list).and_then(Value::as_array))
        .flatten()
        .collect();
    let volumes: Vec<&Value> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let sources: Vec<&Value> = volumes
        .iter()
        .filter_map(|v| v.pointer("/projected/sources").and_then(Value::as_array))
        .flatten()
        .collect();
    let env_refs = |kind: &str, key_ref: &str| {
        containers.iter().any(|c| {
            let env_from = c.get("envFrom").and_then(Value::as_array);
            let env = c.get("env").and_then(Value::as_array);
            env_from
                .into_iter()
                .flatten()
                .any(|e| named(e.pointer(&format!("/{kind}/name"))))
                || env
                    .into_iter()
                    .flatten()
                    .any(|e| named(e.pointer(&format!("/valueFrom/{key_ref}/name"))))
        })
    };
    let pull_secrets = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| named(s.get("name")));
    const SECRET_VOLUME_REFS: [&str; 10] = [
        "/secret/secretName",
        "/azureFile/secretName",
        "/cephfs/secretRef/name",
        "/cinder/secretRef/name",
        "/flexVolume/secretRef/name",
        "/iscsi/secretRef/name",
        "/rbd/secretRef/name",
        "/scaleIO/secretRef/name",
        "/storageos/secretRef/name",
        "/csi/nodePublishSecretRef/name",
    ];
    let secret_volumes = volumes
        .iter()
        .any(|v| SECRET_VOLUME_REFS.iter().any(|p| named(v.pointer(p))))
        || sources.iter().any(|s| named(s.pointer("/secret/name")));
    if pull_secrets || secret_volumes || env_refs("secretRef", "secretKeyRef") {
        return Some("secrets");
    }
    let config_maps = volumes.iter().any(|v| named(v.pointer("/configMap/name")))
        || sources.iter().any(|s| named(s.pointer("/configMap/name")));
    if config_maps || env_refs("configMapRef", "configMapKeyRef") {
        return Some("configmaps");
    }
    if sources
        .iter()
        .any(|s| s.get("clusterTrustBundle").is_some())
    {
        return Some("clustertrustbundles");
    }
    if volumes
        .iter()
        .any(|v| v.get("persistentVolumeClaim").is_some())
    {
        return Some("persistentvolumeclaims");
    }
    None
}

fn admit_pod_status(node: &str, a: &Attributes) -> Result<(), ApiError> {
    let old = a.old_object.as_deref().map_or(&Value::Null, |o| o.value());
    let new = a.object.as_ref().unwrap_or(&Value::Null);
    if node_name_of(old) != node {
        return Err(a.forbidden(format!(
            "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
        )));
    }
    // No labels and an empty map are the same.
    let labels = |p: &Value| {
        p.pointer("/metadata/labels")
            .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
            .cloned()
    };
    if labels(old) != labels(new) {
        return Err(a.forbidden(format!(
            "node {node:?} cannot update labels through pod status"
        )));
    }
    // Only the claim names count, as upstream compares them.
    let claims = |p: &Value| -> Vec<(Value, Value)> {
        p.pointer("/status/resourceClaimStatuses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| {
                let field = |f: &str| s.get(f).cloned().unwrap_or_default();
                (field("name"), field("resourceClaimName"))
            })
            .collect()
    };
    if claims(old) != claims(new) {
        return Err(a.forbidden(format!(
            "node {node:?} cannot update resource claim statues"
        )));
    }
    Ok(())
}

/// Whether a node may set, change or remove this label.
fn forbidden_label(key: &str) -> bool {
    let namespace = key.split_once('/').map_or("", |(ns, _)| ns);
    let within = |ns: &str, domain: &str| ns == domain || ns.ends_with(&format!(".{domain}"));
    let kubernetes = within(namespace, "kubernetes.io") || within(namespace, "k8s.io");
    let kubelet = KUBELET_LABELS.contains(&key)
        || KUBELET_LABEL_NAMESPACES
            .iter()
            .any(|ns| within(namespace, ns));
    within(namespace, RESTRICTED_LABEL_NAMESPACE) || (kubernetes && !kubelet)
}

/// The labels added, changed or removed that a node may not touch, sorted.
fn forbidden_label_changes(new: &Value, old: Option<&Value>) -> Vec<String> {
    let labels = |n: Option<&Value>| {
        n.and_then(|n| n.pointer("/metadata/labels"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (new, old) = (labels(Some(new)), labels(old));
    let changed: BTreeSet<&String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(v))
        .chain(old.iter().filter(|(k, v)| new.get(*k) != Some(v)))
        .map(|(k, _)| k)
        .collect();
    changed
        .into_iter()
        .filter(|k| forbidden_label(k))
        .cloned()
        .collect()
}

fn config_source(node: &Value) -> Option<&Value> {
    node.pointer("/spec/configSource").filter(|c| !c.is_null())
}

fn admit_node(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.name != node {
        return Err(a.forbidden(format!(
            "node {node:?} is not allowed to modify node {:?}",
            a.name
        )));
    }
    let new = a.object.as_ref().unwrap_or(&Value::Null);
    match a.operation {
        Operation::Create => {
            if config_source(new).is_some() {
                return Err(a.forbidden(format!(
                    "node {node:?} is not allowed to create pods with a non-nil configSource"
                )));
            }
            let labels = forbidden_label_changes(new, None);
            if !labels.is_empty() {
                return Err(a.forbidden(format!(
                    "node {node:?} is not allowed to set the following labels: {}",
                    labels.join(", ")
                )));
            }
        }
        Operation::Update => {
            let old = a.old_object.as_deref().map_or(&Value::Null, |o| o.value());
            if config_source(new).is_some_and(|c| Some(c) != config_source(old)) {
                return Err(a.forbidden(format!(
                    "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                )));
            }
            let taints = |n: &Value| {
                n.pointer("/spec/taints")
                    .filter(|t| t.as_array().is_some_and(|l| !l.is_empty()))
                    .cloned()
            };
            if taints(new) != taints(old) {
                return Err(a.forbidden(format!("node {node:?} is not allowed to modify taints")));
            }
            let labels = forbidden_label_changes(new, Some(old));
            if !labels.is_empty() {
                return Err(a.forbidden(format!(
                    "is not allowed to modify labels: {}",
                    labels.join(", ")
                )));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The claim without what a node may change through its status.
fn claim_without_node_fields(claim: &Value) -> Value {
    let mut claim = claim.clone();
    if let Some(meta) = claim.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    if let Some(status) = claim.get_mut("status").and_then(Value::as_object_mut) {
        for field in [
            "capacity",
            "conditions",
            "allocatedResourceStatuses",
            "allocatedResources",
        ] {
            status.remove(field);
        }
    }
    claim
}

fn admit_claim_status(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.operation != Operation::Update {
        return Err(a.forbidden(format!("unexpected operation {:?}", a.operation.as_str())));
    }
    let new = claim_without_node_fields(a.object.as_ref().unwrap_or(&Value::Null));
    let old =
        claim_without_node_fields(a.old_object.as_deref().map_or(&Value::Null, |o| o.value()));
    if new == old {
        return Ok(());
    }
    Err(a.forbidden(format!(
        "node {node:?} is not allowed to update fields other than status.quantity and status.conditions: {}",
        changed_fields(&old, &new).join(", ")
    )))
}

/// The top-level paths (`metadata.labels`, `spec`) that differ.
fn changed_fields(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for section in ["metadata", "spec", "status"] {
        let (o, n) = (old.get(section), new.get(section));
        let keys: BTreeSet<&String> = [o, n]
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|m| m.keys())
            .collect();
        for key in keys {
            let at = |v: Option<&Value>| v.and_then(|v| v.get(key.as_str())).cloned();
            if at(o) != at(n) {
                out.push(format!("{section}.{key}"));
            }
        }
    }
    out
}

fn admit_lease(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.namespace != NODE_LEASE_NAMESPACE {
        return Err(a.forbidden(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        )));
    }
    let name = subject_object(a)
        .and_then(|o| text(o, "/metadata/name"))
        .unwrap_or(&a.name);
    if name != node {
        return Err(
            a.forbidden("can only access node lease with the same name as the requesting node")
        );
    }
    Ok(())
}

fn admit_csi_node(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.name != node {
        return Err(
            a.forbidden("can only access CSINode with the same name as the requesting node")
        );
    }
    Ok(())
}

fn admit_resource_slice(node: &str, a: &Attributes) -> Result<(), ApiError> {
    let (slice, verb) = match a.operation {
        Operation::Create => (a.object.as_ref(), "create"),
        Operation::Delete => (a.old_object.as_deref().map(|o| o.value()), "delete"),
        _ => return Ok(()),
    };
    let slice_node = slice
        .and_then(|s| text(s, "/spec/nodeName"))
        .unwrap_or_default();
    if slice_node != node {
        return Err(a.forbidden(format!(
            "can only {verb} ResourceSlice with the same NodeName as the requesting node"
        )));
    }
    Ok(())
}

fn admit_csr(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.operation != Operation::Create || !a.subresource.is_empty() {
        return Ok(());
    }
    let csr = a.object.as_ref().unwrap_or(&Value::Null);
    let signer = text(csr, "/spec/signerName").unwrap_or_default();
    if !NODE_SIGNERS.contains(&signer) {
        return Ok(());
    }
    let request = text(csr, "/spec/request").unwrap_or_default();
    let subject =
        request_subject(request).map_err(|e| a.forbidden(format!("unable to parse csr: {e}")))?;
    if subject.common_name != format!("{NODE_USER_PREFIX}{node}") {
        return Err(a.forbidden(format!(
            "can only create a node CSR with CN={NODE_USER_PREFIX}{node}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
