//! The Node authorizer (`--authorization-mode=Node`, upstream's
//! `plugin/pkg/auth/authorizer/node`): kubelets — users
//! `system:node:<name>` in group `system:nodes` — may read the secrets,
//! configmaps, claims, volumes, service accounts and service-account tokens
//! of the pods bound to their node, manage their own Node, lease and
//! CSINode, and do what the static node rules allow. Everything else, and every other user, gets no
//! opinion so later modes (RBAC) decide. Relationships come from
//! [`super::node_graph`], which reads the stores per request instead of
//! keeping upstream's informer-fed graph.

use std::collections::BTreeMap;
use std::sync::{LazyLock, OnceLock};

use apimachinery::fields::{FieldOperator, FieldSelector};
use apiserver::authentication::user::UserInfo;
use apiserver::authorization::authorizer::{Attributes, Authorizer, Decision, Rules};
use async_trait::async_trait;
use serde_json::Value;

use super::node_graph::{Graph, Kind};
use super::rbac::bootstrappolicy::node_rules::node_rules;
use crate::authorization::rbac::rules::rule_allows;

const NODES_GROUP: &str = "system:nodes";
const NODE_USER_PREFIX: &str = "system:node:";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The static rules, built once.
static NODE_RULES: LazyLock<Vec<Value>> = LazyLock::new(node_rules);

/// The node a user is, when it is one (upstream's `NodeIdentity`): `None`
/// for non-nodes, `Some("")` for a node whose name is unknown.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

/// The Node mode. Its stores exist only once the server chain is built:
/// until [`NodeAuthorizer::bind`] no relationship is found.
pub struct NodeAuthorizer {
    graph: OnceLock<Graph>,
    /// Whether kubelets may get their pods' service accounts (for image
    /// credential providers and pod certificates).
    service_account_reads: bool,
}

/// Upstream lets nodes get service accounts when either
/// KubeletServiceAccountTokenForCredentialProviders or
/// PodCertificateRequest is enabled.
pub fn service_account_reads(gates: &BTreeMap<&str, bool>) -> bool {
    let on = |name| gates.get(name) == Some(&true);
    on("KubeletServiceAccountTokenForCredentialProviders") || on("PodCertificateRequest")
}

fn allow() -> Decision {
    Decision::Allow(String::new())
}

fn no_opinion(reason: impl Into<String>) -> Decision {
    Decision::NoOpinion(reason.into())
}

/// Whether the request's field selector requires `field` to equal `value`.
fn selects(attrs: &Attributes<'_>, field: &str, value: &str) -> bool {
    let Ok(selector) = FieldSelector::parse(attrs.field_selector) else {
        return false;
    };
    selector
        .requirements()
        .iter()
        .any(|r| r.field == field && r.operator == FieldOperator::Equals && r.value == value)
}

impl NodeAuthorizer {
    pub fn new(service_account_reads: bool) -> NodeAuthorizer {
        NodeAuthorizer {
            graph: OnceLock::new(),
            service_account_reads,
        }
    }

    /// Binds the graph to the server's objects; only the first binding counts.
    pub fn bind(&self, graph: Graph) {
        // A second binding would read the same stores: ignore it.
        let _ = self.graph.set(graph);
    }

    /// Allows when the object is related to the node (upstream's `authorize`).
    async fn related(&self, node: &str, kind: Kind, attrs: &Attributes<'_>) -> Decision {
        if attrs.name.is_empty() {
            return no_opinion("No Object name found");
        }
        let found = match self.graph.get() {
            Some(graph) => graph
                .has_path(node, kind, attrs.namespace, attrs.name)
                .await
                .unwrap_or(false),
            None => false,
        };
        if found {
            allow()
        } else {
            no_opinion(format!(
                "no relationship found between node '{node}' and this object"
            ))
        }
    }

    async fn get(&self, node: &str, kind: Kind, attrs: &Attributes<'_>) -> Decision {
        if attrs.verb != "get" {
            return no_opinion("can only get individual resources of this type");
        }
        if !attrs.subresource.is_empty() {
            return no_opinion("cannot get subresource");
        }
        self.related(node, kind, attrs).await
    }

    async fn read_namespaced(&self, node: &str, kind: Kind, attrs: &Attributes<'_>) -> Decision {
        if !matches!(attrs.verb, "get" | "list" | "watch") {
            return no_opinion("can only read resources of this type");
        }
        if !attrs.subresource.is_empty() {
            return no_opinion("cannot read subresource");
        }
        if attrs.namespace.is_empty() {
            return no_opinion("can only read namespaced object of this type");
        }
        self.related(node, kind, attrs).await
    }

    async fn claim(&self, node: &str, attrs: &Attributes<'_>) -> Decision {
        if attrs.subresource != "status" {
            return self.get(node, Kind::PersistentVolumeClaim, attrs).await;
        }
        if !matches!(attrs.verb, "update" | "patch") {
            return no_opinion("can only get/update/patch this type");
        }
        self.related(node, Kind::PersistentVolumeClaim, attrs).await
    }

    /// A pod's service account may be read by name (upstream's
    /// `authorizeServiceAccount`); anything else must be a token request.
    async fn service_account(&self, node: &str, attrs: &Attributes<'_>) -> Decision {
        if attrs.verb != "get" || !attrs.subresource.is_empty() {
            return self.create_token(node, attrs).await;
        }
        if !self.service_account_reads {
            return no_opinion("not allowed to get service accounts");
        }
        self.read_namespaced(node, Kind::ServiceAccount, attrs)
            .await
    }

    async fn create_token(&self, node: &str, attrs: &Attributes<'_>) -> Decision {
        if attrs.verb != "create" || attrs.name.is_empty() {
            return no_opinion("can only create tokens for individual service accounts");
        }
        if attrs.subresource != "token" {
            return no_opinion("can only create token subresource of serviceaccount");
        }
        self.related(node, Kind::ServiceAccount, attrs).await
    }

    async fn resource_slice(&self, node: &str, attrs: &Attributes<'_>) -> Decision {
        if !attrs.subresource.is_empty() {
            return no_opinion("cannot authorize ResourceSlice subresources");
        }
        match attrs.verb {
            // NodeRestriction checks the new slice's node.
            "create" => allow(),
            "get" | "update" | "patch" | "delete" => {
                self.related(node, Kind::ResourceSlice, attrs).await
            }
            "watch" | "list" | "deletecollection" if selects(attrs, "spec.nodeName", node) => {
                allow()
            }
            "watch" | "list" | "deletecollection" => no_opinion(
                "can only list/watch/deletecollection resourceslices with nodeName field selector",
            ),
            _ => no_opinion("only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection"),
        }
    }

    async fn pod(&self, node: &str, attrs: &Attributes<'_>) -> Decision {
        match (attrs.subresource, attrs.verb) {
            ("", "get") => self.get(node, Kind::Pod, attrs).await,
            ("", "list" | "watch") => {
                if selects(attrs, "spec.nodeName", node) {
                    allow()
                } else if !attrs.name.is_empty() {
                    self.related(node, Kind::Pod, attrs).await
                } else {
                    no_opinion("can only list/watch pods with spec.nodeName field selector")
                }
            }
            // Mirror pods, pod status and evictions: NodeRestriction limits
            // them to the node's own pods.
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                allow()
            }
            _ => no_opinion(""),
        }
    }

    async fn decide(&self, node: &str, attrs: &Attributes<'_>) -> Option<Decision> {
        let decision = match (attrs.api_group, attrs.resource) {
            ("", "secrets") => self.read_namespaced(node, Kind::Secret, attrs).await,
            ("", "configmaps") => self.read_namespaced(node, Kind::ConfigMap, attrs).await,
            ("", "persistentvolumeclaims") => self.claim(node, attrs).await,
            ("", "persistentvolumes") => self.get(node, Kind::PersistentVolume, attrs).await,
            ("resource.k8s.io", "resourceclaims") => {
                self.get(node, Kind::ResourceClaim, attrs).await
            }
            ("storage.k8s.io", "volumeattachments") => {
                self.get(node, Kind::VolumeAttachment, attrs).await
            }
            ("", "serviceaccounts") => self.service_account(node, attrs).await,
            ("coordination.k8s.io", "leases") => lease(node, attrs),
            ("storage.k8s.io", "csinodes") => csi_node(node, attrs),
            ("resource.k8s.io", "resourceslices") => self.resource_slice(node, attrs).await,
            ("", "nodes") => node_object(node, attrs),
            ("", "pods") => self.pod(node, attrs).await,
            _ => return None,
        };
        Some(decision)
    }
}

fn lease(node: &str, attrs: &Attributes<'_>) -> Decision {
    if !matches!(attrs.verb, "get" | "create" | "update" | "patch" | "delete") {
        return no_opinion("can only get, create, update, patch, or delete a node lease");
    }
    if attrs.namespace != NODE_LEASE_NAMESPACE {
        return no_opinion(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    // On create the name is not known here; NodeRestriction checks it.
    if attrs.verb != "create" && attrs.name != node {
        return no_opinion("can only access node lease with the same name as the requesting node");
    }
    allow()
}

fn csi_node(node: &str, attrs: &Attributes<'_>) -> Decision {
    if !matches!(attrs.verb, "get" | "create" | "update" | "patch" | "delete") {
        return no_opinion("can only get, create, update, patch, or delete a CSINode");
    }
    if !attrs.subresource.is_empty() {
        return no_opinion("cannot authorize CSINode subresources");
    }
    if attrs.verb != "create" && attrs.name != node {
        return no_opinion("can only access CSINode with the same name as the requesting node");
    }
    allow()
}

fn node_object(node: &str, attrs: &Attributes<'_>) -> Decision {
    match (attrs.subresource, attrs.verb) {
        // NodeRestriction limits writes to the node's own object.
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => allow(),
        // Compared by name so a kubelet may look for its Node before creating it.
        ("", "get" | "list" | "watch") => match attrs.name {
            name if name == node => allow(),
            "" => no_opinion(format!(
                "node '{node}' cannot read all nodes, only its own Node object"
            )),
            other => no_opinion(format!(
                "node '{node}' cannot read '{other}', only its own Node object"
            )),
        },
        _ => no_opinion(""),
    }
}

#[async_trait]
impl Authorizer for NodeAuthorizer {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let Some(node) = node_identity(attrs.user) else {
            return no_opinion("");
        };
        if node.is_empty() {
            return no_opinion(format!("unknown node for user {:?}", attrs.user.name));
        }
        if attrs.is_resource_request {
            if let Some(decision) = self.decide(node, attrs).await {
                return decision;
            }
        }
        if NODE_RULES.iter().any(|rule| rule_allows(attrs, rule)) {
            allow()
        } else {
            no_opinion("")
        }
    }

    async fn rules_for(&self, user: &UserInfo, _namespace: &str) -> Rules {
        if node_identity(user).is_none() {
            return Rules::default();
        }
        // Nodes' permissions depend on objects: they cannot be listed.
        Rules {
            incomplete: true,
            errors: vec!["node authorizer does not support user rule resolution".into()],
            ..Rules::default()
        }
    }
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
