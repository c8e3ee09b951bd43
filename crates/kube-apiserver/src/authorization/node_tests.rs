//! The Node authorizer's rules over a fixed set of objects.

use std::sync::Arc;

use apimachinery::status::ApiError;
use async_trait::async_trait;
use serde_json::{json, Value};

use super::*;
use crate::authorization::node_graph::Objects;

/// A fixed set of objects, as the stores would hold them.
struct Fixed(Vec<(Kind, Value)>);

fn meta<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj["metadata"][key].as_str().unwrap_or("")
}

#[async_trait]
impl Objects for Fixed {
    async fn pods(&self, namespace: &str) -> Result<Vec<storage::Object>, ApiError> {
        Ok(self
            .0
            .iter()
            .filter(|(k, o)| *k == Kind::Pod && meta(o, "namespace") == namespace)
            .map(|(_, o)| Arc::new(o.clone().into()))
            .collect())
    }

    async fn persistent_volumes(&self) -> Result<Vec<storage::Object>, ApiError> {
        Ok(self
            .0
            .iter()
            .filter(|(k, _)| *k == Kind::PersistentVolume)
            .map(|(_, o)| Arc::new(o.clone().into()))
            .collect())
    }

    async fn get(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
    ) -> Result<Option<storage::Object>, ApiError> {
        Ok(self
            .0
            .iter()
            .find(|(k, o)| *k == kind && meta(o, "name") == name && meta(o, "namespace") == ns)
            .map(|(_, o)| Arc::new(o.clone().into())))
    }
}

fn pod(name: &str, node: &str, spec: Value) -> (Kind, Value) {
    let mut spec = spec;
    spec["nodeName"] = json!(node);
    (
        Kind::Pod,
        json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec}),
    )
}

fn authorizer() -> NodeAuthorizer {
    let objects = Fixed(vec![
        pod(
            "web",
            "n1",
            json!({
                "serviceAccountName": "runner",
                "imagePullSecrets": [{"name": "pull"}],
                "containers": [{"name": "c", "env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}}]}],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "scratch", "ephemeral": {}},
                    {"name": "p", "projected": {"sources": [{"secret": {"name": "projected"}}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
            }),
        ),
        pod(
            "other",
            "n2",
            json!({"volumes": [{"name": "s", "secret": {"secretName": "n2-only"}}]}),
        ),
        (
            Kind::PersistentVolume,
            json!({"metadata": {"name": "pv1"}, "spec": {
                "claimRef": {"namespace": "ns", "name": "data"},
                "csi": {"driver": "d", "volumeHandle": "h",
                        "nodePublishSecretRef": {"name": "pv-secret"}}}}),
        ),
        (
            Kind::VolumeAttachment,
            json!({"metadata": {"name": "va1"}, "spec": {"nodeName": "n1"}}),
        ),
    ]);
    let node = NodeAuthorizer::new(true);
    node.bind(Graph::new(Arc::new(objects)));
    node
}

fn kubelet(node: &str) -> UserInfo {
    UserInfo {
        name: format!("system:node:{node}"),
        groups: vec!["system:nodes".into(), "system:authenticated".into()],
        ..UserInfo::default()
    }
}

/// A request: `verb group/resource[/subresource] namespace/name ?selector`.
struct Req<'a> {
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    subresource: &'a str,
    namespace: &'a str,
    name: &'a str,
    field_selector: &'a str,
}

fn req<'a>(verb: &'a str, resource: &'a str, namespace: &'a str, name: &'a str) -> Req<'a> {
    Req {
        verb,
        group: "",
        resource,
        subresource: "",
        namespace,
        name,
        field_selector: "",
    }
}

async fn decide(authz: &NodeAuthorizer, user: &UserInfo, r: Req<'_>) -> Decision {
    let attrs = Attributes {
        user,
        verb: r.verb,
        is_resource_request: true,
        namespace: r.namespace,
        api_group: r.group,
        api_version: "v1",
        resource: r.resource,
        subresource: r.subresource,
        name: r.name,
        path: "",
        field_selector: r.field_selector,
        label_selector: "",
    };
    authz.authorize(&attrs).await
}

fn unrelated(node: &str) -> Decision {
    Decision::NoOpinion(format!(
        "no relationship found between node '{node}' and this object"
    ))
}

#[tokio::test]
async fn secrets_and_configmaps_follow_the_pods_of_the_node() {
    let a = authorizer();
    let n1 = kubelet("n1");
    for secret in ["pull", "env-secret", "projected", "pv-secret"] {
        let d = decide(&a, &n1, req("get", "secrets", "ns", secret)).await;
        assert_eq!(d, allow(), "{secret}");
    }
    let d = decide(&a, &n1, req("watch", "configmaps", "ns", "env-cm")).await;
    assert_eq!(d, allow());
    assert_eq!(
        decide(&a, &n1, req("get", "secrets", "ns", "n2-only")).await,
        unrelated("n1")
    );
    assert_eq!(
        decide(&a, &kubelet("n2"), req("get", "secrets", "ns", "n2-only")).await,
        allow()
    );
    assert_eq!(
        decide(&a, &n1, req("list", "secrets", "ns", "")).await,
        no_opinion("No Object name found")
    );
    assert_eq!(
        decide(&a, &n1, req("delete", "secrets", "ns", "pull")).await,
        no_opinion("can only read resources of this type")
    );
}

#[tokio::test]
async fn claims_volumes_and_tokens_follow_the_pods_of_the_node() {
    let a = authorizer();
    let n1 = kubelet("n1");
    let n2 = kubelet("n2");
    for claim in ["data", "web-scratch"] {
        let r = req("get", "persistentvolumeclaims", "ns", claim);
        assert_eq!(decide(&a, &n1, r).await, allow(), "{claim}");
    }
    let pv = req("get", "persistentvolumes", "", "pv1");
    assert_eq!(decide(&a, &n1, pv).await, allow());
    let pv = req("get", "persistentvolumes", "", "pv1");
    assert_eq!(decide(&a, &n2, pv).await, unrelated("n2"));
    let mut status = req("patch", "persistentvolumeclaims", "ns", "data");
    status.subresource = "status";
    assert_eq!(decide(&a, &n1, status).await, allow());
    let mut token = req("create", "serviceaccounts", "ns", "runner");
    token.subresource = "token";
    assert_eq!(decide(&a, &n1, token).await, allow());
    let mut token = req("create", "serviceaccounts", "ns", "default");
    token.subresource = "token";
    assert_eq!(decide(&a, &n1, token).await, unrelated("n1"));
    let mut claim = req("get", "resourceclaims", "ns", "gpu-claim");
    claim.group = "resource.k8s.io";
    assert_eq!(decide(&a, &n1, claim).await, allow());
    let mut va = req("get", "volumeattachments", "", "va1");
    va.group = "storage.k8s.io";
    assert_eq!(decide(&a, &n1, va).await, allow());
}

/// Generated claims count only through the status entry of a templated
/// spec claim, plus the claim made for the pod's extended resources.
#[tokio::test]
async fn generated_resource_claims_follow_the_pod_status() {
    let (kind, mut dra) = pod(
        "dra",
        "n1",
        json!({"resourceClaims": [{"name": "tpl", "resourceClaimTemplateName": "t"}]}),
    );
    dra["status"] = json!({
        "resourceClaimStatuses": [
            {"name": "tpl", "resourceClaimName": "dra-tpl-abc"},
            {"name": "stray", "resourceClaimName": "stray-claim"}],
        "extendedResourceClaimStatus": {"resourceClaimName": "dra-extended-xyz", "requestMappings": []},
    });
    let a = NodeAuthorizer::new(true);
    a.bind(Graph::new(Arc::new(Fixed(vec![(kind, dra)]))));
    let n1 = kubelet("n1");
    for (claim, expected) in [
        ("dra-tpl-abc", allow()),
        ("dra-extended-xyz", allow()),
        ("stray-claim", unrelated("n1")),
        ("t", unrelated("n1")),
    ] {
        let mut r = req("get", "resourceclaims", "ns", claim);
        r.group = "resource.k8s.io";
        assert_eq!(decide(&a, &n1, r).await, expected, "{claim}");
    }
}

#[tokio::test]
async fn nodes_leases_and_csinodes_are_their_own() {
    let a = authorizer();
    let n1 = kubelet("n1");
    assert_eq!(
        decide(&a, &n1, req("get", "nodes", "", "n1")).await,
        allow()
    );
    assert_eq!(
        decide(&a, &n1, req("get", "nodes", "", "n2")).await,
        no_opinion("node 'n1' cannot read 'n2', only its own Node object")
    );
    assert_eq!(
        decide(&a, &n1, req("list", "nodes", "", "")).await,
        no_opinion("node 'n1' cannot read all nodes, only its own Node object")
    );
    assert_eq!(
        decide(&a, &n1, req("update", "nodes", "", "n2")).await,
        allow()
    );
    assert_eq!(
        decide(&a, &n1, req("delete", "nodes", "", "n1")).await,
        no_opinion("")
    );
    let mut lease = req("update", "leases", "kube-node-lease", "n1");
    lease.group = "coordination.k8s.io";
    assert_eq!(decide(&a, &n1, lease).await, allow());
    let mut lease = req("update", "leases", "default", "n1");
    lease.group = "coordination.k8s.io";
    assert_eq!(
        decide(&a, &n1, lease).await,
        no_opinion("can only access leases in the \"kube-node-lease\" system namespace")
    );
    let mut csi = req("patch", "csinodes", "", "n2");
    csi.group = "storage.k8s.io";
    assert_eq!(
        decide(&a, &n1, csi).await,
        no_opinion("can only access CSINode with the same name as the requesting node")
    );
}

#[tokio::test]
async fn pods_need_the_node_selector_to_be_listed() {
    let a = authorizer();
    let n1 = kubelet("n1");
    let mut list = req("list", "pods", "", "");
    list.field_selector = "spec.nodeName=n1";
    assert_eq!(decide(&a, &n1, list).await, allow());
    assert_eq!(
        decide(&a, &n1, req("watch", "pods", "", "")).await,
        no_opinion("can only list/watch pods with spec.nodeName field selector")
    );
    assert_eq!(
        decide(&a, &n1, req("get", "pods", "ns", "web")).await,
        allow()
    );
    assert_eq!(
        decide(&a, &n1, req("get", "pods", "ns", "other")).await,
        unrelated("n1")
    );
    let mut eviction = req("create", "pods", "ns", "other");
    eviction.subresource = "eviction";
    assert_eq!(decide(&a, &n1, eviction).await, allow());
}

#[tokio::test]
async fn static_rules_cover_the_rest_and_others_get_no_opinion() {
    let a = authorizer();
    let n1 = kubelet("n1");
    assert_eq!(
        decide(&a, &n1, req("create", "events", "ns", "")).await,
        allow()
    );
    let mut deploy = req("get", "deployments", "ns", "web");
    deploy.group = "apps";
    assert_eq!(decide(&a, &n1, deploy).await, no_opinion(""));
    let bob = UserInfo {
        name: "system:node:n1".into(),
        ..UserInfo::default()
    };
    let d = decide(&a, &bob, req("get", "secrets", "ns", "pull")).await;
    assert_eq!(d, no_opinion(""));
    assert_eq!(node_identity(&kubelet("")), Some(""));
    assert_eq!(
        decide(&a, &kubelet(""), req("get", "nodes", "", "x")).await,
        no_opinion("unknown node for user \"system:node:\"")
    );
    let rules = a.rules_for(&n1, "ns").await;
    assert!(rules.incomplete);
}

#[tokio::test]
async fn an_unbound_authorizer_finds_no_relationship() {
    let a = NodeAuthorizer::new(true);
    let d = decide(&a, &kubelet("n1"), req("get", "secrets", "ns", "pull")).await;
    assert_eq!(d, unrelated("n1"));
}

#[tokio::test]
async fn service_accounts_of_the_node_pods_can_be_read() {
    let a = authorizer();
    let n1 = kubelet("n1");
    let n2 = kubelet("n2");
    let get = || req("get", "serviceaccounts", "ns", "runner");
    assert_eq!(decide(&a, &n1, get()).await, allow());
    assert_eq!(decide(&a, &n2, get()).await, unrelated("n2"));
    // Unlike secrets, only a named get: list and watch must be token requests.
    assert_eq!(
        decide(&a, &n1, req("list", "serviceaccounts", "ns", "")).await,
        no_opinion("can only create tokens for individual service accounts")
    );
    assert_eq!(
        decide(&a, &n1, req("update", "serviceaccounts", "ns", "runner")).await,
        no_opinion("can only create tokens for individual service accounts")
    );
    let mut sub = get();
    sub.subresource = "token";
    assert_eq!(
        decide(&a, &n1, sub).await,
        no_opinion("can only create tokens for individual service accounts")
    );
    // The pod on n2 sets no service account: no edge to `default`.
    assert_eq!(
        decide(&a, &n2, req("get", "serviceaccounts", "ns", "default")).await,
        unrelated("n2")
    );
    let off = NodeAuthorizer::new(false);
    assert_eq!(
        decide(&off, &n1, get()).await,
        no_opinion("not allowed to get service accounts")
    );
    let mut token = req("create", "serviceaccounts", "ns", "runner");
    token.subresource = "token";
    assert_eq!(decide(&a, &n1, token).await, allow());
}

#[test]
fn either_gate_lets_nodes_read_service_accounts() {
    let gates = |pairs: &[(&'static str, bool)]| pairs.iter().copied().collect();
    let both_off = gates(&[
        ("KubeletServiceAccountTokenForCredentialProviders", false),
        ("PodCertificateRequest", false),
    ]);
    assert!(!service_account_reads(&both_off));
    let credential_providers = gates(&[
        ("KubeletServiceAccountTokenForCredentialProviders", true),
        ("PodCertificateRequest", false),
    ]);
    assert!(service_account_reads(&credential_providers));
    assert!(service_account_reads(&gates(&[(
        "PodCertificateRequest",
        true
    )])));
}

/// Mirror pods reach their node, but nothing they reference does.
#[tokio::test]
async fn mirror_pods_relate_nothing_to_their_node() {
    let (kind, mut mirror) = pod(
        "static",
        "n1",
        json!({"serviceAccountName": "sa",
               "volumes": [{"name": "s", "secret": {"secretName": "s"}}]}),
    );
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "hash"});
    let a = NodeAuthorizer::new(true);
    a.bind(Graph::new(Arc::new(Fixed(vec![(kind, mirror)]))));
    let n1 = kubelet("n1");
    assert_eq!(
        decide(&a, &n1, req("get", "pods", "ns", "static")).await,
        allow()
    );
    for resource in ["secrets", "serviceaccounts"] {
        let name = if resource == "secrets" { "s" } else { "sa" };
        let d = decide(&a, &n1, req("get", resource, "ns", name)).await;
        assert_eq!(d, unrelated("n1"), "{resource}");
    }
}
