//! The relationships the Node authorizer checks (upstream's node
//! authorizer graph). Upstream keeps a graph fed by informers; this server
//! answers the same questions per request from the stores' watch caches:
//! a secret, configmap, claim or service account is related to a node when
//! a pod bound to the node (`spec.nodeName`) in its namespace, other than
//! a mirror pod, references it; a persistent volume through the claim its `claimRef` names; a secret
//! also through such a volume; volume attachments and resource slices by
//! their own `spec.nodeName`. A check lists one namespace's pods (a cached
//! list, no storage round trip) — only secrets not referenced by any pod
//! fall back to listing persistent volumes.

use std::sync::Arc;

use apimachinery::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;
use storage::Object;

/// The kinds of object the graph relates to nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    PersistentVolume,
    ResourceClaim,
    ServiceAccount,
    VolumeAttachment,
    ResourceSlice,
}

/// Where the graph reads objects (the server's stores, read from caches).
#[async_trait]
pub trait Objects: Send + Sync {
    /// Every pod of a namespace.
    async fn pods(&self, namespace: &str) -> Result<Vec<Object>, ApiError>;
    /// Every persistent volume.
    async fn persistent_volumes(&self) -> Result<Vec<Object>, ApiError>;
    /// One object of a kind read by name (only Pod, PersistentVolume,
    /// VolumeAttachment and ResourceSlice are asked for).
    async fn get(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ApiError>;
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn items<'a>(obj: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Every container of a pod: init, regular and ephemeral.
fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    items(pod, "/spec/initContainers")
        .chain(items(pod, "/spec/containers"))
        .chain(items(pod, "/spec/ephemeralContainers"))
}

/// Secrets a pod references (upstream's `VisitPodSecretNames`).
pub fn pod_secrets(pod: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = items(pod, "/spec/imagePullSecrets")
        .map(|s| text(s, "/name"))
        .collect();
    for c in containers(pod) {
        names.extend(items(c, "/envFrom").map(|e| text(e, "/secretRef/name")));
        names.extend(items(c, "/env").map(|e| text(e, "/valueFrom/secretKeyRef/name")));
    }
    const VOLUME_REFS: &[&str] = &[
        "/secret/secretName",
        "/azureFile/secretName",
        "/cephfs/secretRef/name",
        "/cinder/secretRef/name",
        "/flexVolume/secretRef/name",
        "/rbd/secretRef/name",
        "/scaleIO/secretRef/name",
        "/iscsi/secretRef/name",
        "/storageos/secretRef/name",
        "/csi/nodePublishSecretRef/name",
    ];
    for volume in items(pod, "/spec/volumes") {
        names.extend(VOLUME_REFS.iter().map(|p| text(volume, p)));
        names.extend(items(volume, "/projected/sources").map(|s| text(s, "/secret/name")));
    }
    names.retain(|n| !n.is_empty());
    names
}

/// ConfigMaps a pod references (upstream's `VisitPodConfigmapNames`).
pub fn pod_config_maps(pod: &Value) -> Vec<&str> {
    let mut names = Vec::new();
    for c in containers(pod) {
        names.extend(items(c, "/envFrom").map(|e| text(e, "/configMapRef/name")));
        names.extend(items(c, "/env").map(|e| text(e, "/valueFrom/configMapKeyRef/name")));
    }
    for volume in items(pod, "/spec/volumes") {
        names.push(text(volume, "/configMap/name"));
        names.extend(items(volume, "/projected/sources").map(|s| text(s, "/configMap/name")));
    }
    names.retain(|n| !n.is_empty());
    names
}

/// Claims a pod uses: named ones, and the `<pod>-<volume>` claims of its
/// generic ephemeral volumes.
pub fn pod_claims(pod: &Value) -> Vec<String> {
    let pod_name = text(pod, "/metadata/name");
    items(pod, "/spec/volumes")
        .filter_map(|v| {
            let claim = text(v, "/persistentVolumeClaim/claimName");
            if !claim.is_empty() {
                Some(claim.to_owned())
            } else if v.get("ephemeral").is_some() {
                Some(format!("{pod_name}-{}", text(v, "/name")))
            } else {
                None
            }
        })
        .collect()
}

/// ResourceClaims a pod uses (upstream's `resourceclaim.Name` over its
/// claims): a claim named in its spec, the claim generated from a template
/// as the status entry of the same name records it, and the claim made for
/// its extended resources.
pub fn pod_resource_claims(pod: &Value) -> Vec<&str> {
    let generated = |claim: &str| {
        items(pod, "/status/resourceClaimStatuses")
            .find(|s| text(s, "/name") == claim)
            .map_or("", |s| text(s, "/resourceClaimName"))
    };
    let mut names: Vec<&str> = items(pod, "/spec/resourceClaims")
        .map(|c| match text(c, "/resourceClaimName") {
            "" if !text(c, "/resourceClaimTemplateName").is_empty() => generated(text(c, "/name")),
            name => name,
        })
        .collect();
    names.push(text(
        pod,
        "/status/extendedResourceClaimStatus/resourceClaimName",
    ));
    names.retain(|n| !n.is_empty());
    names
}

/// Mirror pods (of a kubelet's static pods) reach only their node:
/// upstream's graph adds no edge from what they reference.
const MIRROR_POD_ANNOTATION: &str = "/metadata/annotations/kubernetes.io~1config.mirror";

/// Whether a pod references an object of `kind` named `name` in its
/// namespace.
fn pod_references(pod: &Value, kind: Kind, name: &str) -> bool {
    if pod.pointer(MIRROR_POD_ANNOTATION).is_some() {
        return false;
    }
    match kind {
        Kind::Secret => pod_secrets(pod).contains(&name),
        Kind::ConfigMap => pod_config_maps(pod).contains(&name),
        Kind::PersistentVolumeClaim => pod_claims(pod).iter().any(|c| c == name),
        Kind::ResourceClaim => pod_resource_claims(pod).contains(&name),
        // An unset name is no edge, as upstream's graph.
        Kind::ServiceAccount => !name.is_empty() && text(pod, "/spec/serviceAccountName") == name,
        _ => false,
    }
}

/// The (namespace, name) of each secret a persistent volume references
/// (upstream's `VisitPVSecretNames`); a reference without a namespace is
/// in the namespace of the volume's claim.
pub fn pv_secrets(pv: &Value) -> Vec<(&str, &str)> {
    let claim_ns = text(pv, "/spec/claimRef/namespace");
    const REFS: &[&str] = &[
        "/spec/cephfs/secretRef",
        "/spec/cinder/secretRef",
        "/spec/flexVolume/secretRef",
        "/spec/rbd/secretRef",
        "/spec/scaleIO/secretRef",
        "/spec/iscsi/secretRef",
        "/spec/storageos/secretRef",
        "/spec/csi/controllerPublishSecretRef",
        "/spec/csi/nodeStageSecretRef",
        "/spec/csi/nodePublishSecretRef",
        "/spec/csi/controllerExpandSecretRef",
        "/spec/csi/nodeExpandSecretRef",
    ];
    let mut refs: Vec<(&str, &str)> = REFS
        .iter()
        .filter_map(|p| pv.pointer(p))
        .map(|r| {
            let ns = match text(r, "/namespace") {
                "" => claim_ns,
                ns => ns,
            };
            (ns, text(r, "/name"))
        })
        .collect();
    if let Some(azure) = pv.pointer("/spec/azureFile") {
        let ns = match text(azure, "/secretNamespace") {
            "" => claim_ns,
            ns => ns,
        };
        refs.push((ns, text(azure, "/secretName")));
    }
    refs.retain(|(_, name)| !name.is_empty());
    refs
}

/// The relationship checks, over the server's objects.
pub struct Graph {
    objects: Arc<dyn Objects>,
}

impl Graph {
    pub fn new(objects: Arc<dyn Objects>) -> Graph {
        Graph { objects }
    }

    /// Whether a pod bound to `node` references the object (upstream's
    /// `node <- pod <- object`).
    async fn referenced_by_node_pod(
        &self,
        node: &str,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<bool, ApiError> {
        let pods = self.objects.pods(namespace).await?;
        Ok(pods
            .iter()
            .any(|pod| text(pod, "/spec/nodeName") == node && pod_references(pod, kind, name)))
    }

    /// Whether the volume's claim is used by a pod bound to `node`.
    async fn volume_related(&self, node: &str, pv: &Value) -> Result<bool, ApiError> {
        let (ns, claim) = (
            text(pv, "/spec/claimRef/namespace"),
            text(pv, "/spec/claimRef/name"),
        );
        if claim.is_empty() {
            return Ok(false);
        }
        self.referenced_by_node_pod(node, Kind::PersistentVolumeClaim, ns, claim)
            .await
    }

    /// Whether there is a path from the object to `node` (upstream's
    /// `hasPathFrom`).
    pub async fn has_path(
        &self,
        node: &str,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<bool, ApiError> {
        match kind {
            Kind::Pod | Kind::VolumeAttachment | Kind::ResourceSlice => {
                let obj = self.objects.get(kind, namespace, name).await?;
                Ok(obj.is_some_and(|o| text(&o, "/spec/nodeName") == node))
            }
            Kind::PersistentVolume => match self.objects.get(kind, "", name).await? {
                Some(pv) => self.volume_related(node, &pv).await,
                None => Ok(false),
            },
            Kind::Secret => {
                if self
                    .referenced_by_node_pod(node, kind, namespace, name)
                    .await?
                {
                    return Ok(true);
                }
                for pv in self.objects.persistent_volumes().await? {
                    if pv_secrets(&pv).contains(&(namespace, name))
                        && self.volume_related(node, &pv).await?
                    {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            _ => {
                self.referenced_by_node_pod(node, kind, namespace, name)
                    .await
            }
        }
    }
}
