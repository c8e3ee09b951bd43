use base64::Engine;
use serde_json::json;

use super::*;
use crate::admission::testing::{node, refusal, stores, user, Write};

fn node_object(name: &str, labels: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}, "spec": {}})
}

async fn admit(plugin: &NodeRestriction, mut attrs: Attributes) -> String {
    refusal(plugin.admit(&mut attrs).await)
}

async fn plugin() -> NodeRestriction {
    NodeRestriction {
        stores: stores(vec![
            ("", "nodes", node_object("n1", json!({}))),
            ("", "pods", pod("mine", "n1")),
            ("", "pods", pod("theirs", "n2")),
        ])
        .await,
    }
}

fn pod(name: &str, node: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}})
}

#[test]
fn only_members_of_system_nodes_named_as_nodes_are_nodes() {
    assert_eq!(node_identity(&node("n1")), Some("n1"));
    assert_eq!(node_identity(&user("system:node:n1", &[])), None);
    assert_eq!(node_identity(&user("alice", &["system:nodes"])), None);
    assert_eq!(
        node_identity(&user("system:node:", &["system:nodes"])),
        Some("")
    );
}

#[tokio::test]
async fn a_node_may_only_modify_its_own_node_object() {
    let plugin = plugin().await;
    let update = |name: &'static str, new: Value, old: Value| {
        Write::new("", "nodes", Operation::Update)
            .object(new)
            .old(old)
            .name(name)
    };
    let other = update(
        "n2",
        node_object("n2", json!({"a": "b"})),
        node_object("n2", json!({})),
    );
    assert_eq!(
        admit(&plugin, other.by(node("n1"))).await,
        "nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\""
    );
    let relabel = || {
        update(
            "n1",
            node_object(
                "n1",
                json!({"node-restriction.kubernetes.io/pool": "a", "example.com/x": "1",
                "kubernetes.io/hostname": "n1", "foo.node.kubernetes.io/y": "1"}),
            ),
            node_object("n1", json!({"other.k8s.io/z": "1"})),
        )
    };
    assert_eq!(
        admit(&plugin, relabel().by(node("n1"))).await,
        "nodes \"n1\" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool, other.k8s.io/z"
    );
    // Administrators are not restricted.
    assert_eq!(
        admit(&plugin, relabel().by(user("admin", &["system:masters"]))).await,
        ""
    );
    let own = update(
        "n1",
        node_object("n1", json!({"example.com/x": "1"})),
        node_object("n1", json!({})),
    );
    assert_eq!(admit(&plugin, own.by(node("n1"))).await, "");
}

#[tokio::test]
async fn a_node_may_not_change_its_taints_or_register_with_reserved_labels() {
    let plugin = plugin().await;
    let mut tainted = node_object("n1", json!({}));
    tainted["spec"]["taints"] = json!([{"key": "k", "effect": "NoSchedule"}]);
    let attrs = Write::new("", "nodes", Operation::Update)
        .object(node_object("n1", json!({})))
        .old(tainted)
        .name("n1")
        .by(node("n1"));
    assert_eq!(
        admit(&plugin, attrs).await,
        "nodes \"n1\" is forbidden: node \"n1\" is not allowed to modify taints"
    );
    let attrs = Write::new("", "nodes", Operation::Create)
        .object(node_object(
            "n1",
            json!({"a.node-restriction.kubernetes.io/b": "c"}),
        ))
        .by(node("n1"));
    assert_eq!(
        admit(&plugin, attrs).await,
        "nodes \"n1\" is forbidden: node \"n1\" is not allowed to set the following labels: a.node-restriction.kubernetes.io/b"
    );
    let attrs = Write::new("", "nodes", Operation::Create)
        .object(node_object("n1", json!({"kubernetes.io/os": "linux"})))
        .by(node("n1"));
    assert_eq!(admit(&plugin, attrs).await, "");
}

fn mirror_pod(node_name: &str, uid: &str) -> Value {
    json!({"metadata": {"name": "static-web", "namespace": "ns",
        "annotations": {MIRROR_POD_ANNOTATION: "hash"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node_name,
            "uid": uid, "controller": true}]},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "i"}]}})
}

#[tokio::test]
async fn nodes_create_only_mirror_pods_of_their_own() {
    let plugin = plugin().await;
    let stored = plugin.stores.get("", "nodes", None, "n1").await;
    let uid = stored
        .ok()
        .flatten()
        .and_then(|n| text(&n, "/metadata/uid").map(str::to_owned))
        .unwrap_or_default();
    let create = |pod: Value| {
        Write::new("", "pods", Operation::Create)
            .object(pod)
            .by(node("n1"))
    };
    assert_eq!(admit(&plugin, create(mirror_pod("n1", &uid))).await, "");
    assert_eq!(
        admit(&plugin, create(pod("plain", "n1"))).await,
        "pods \"plain\" is forbidden: pod does not have \"kubernetes.io/config.mirror\" annotation, node \"n1\" can only create mirror pods"
    );
    assert_eq!(
        admit(&plugin, create(mirror_pod("n2", &uid))).await,
        "pods \"static-web\" is forbidden: node \"n1\" can only create pods with spec.nodeName set to itself"
    );
    assert_eq!(
        admit(&plugin, create(mirror_pod("n1", "other-uid"))).await,
        format!(
            "pods \"static-web\" is forbidden: node n1 UID mismatch: expected other-uid got {uid}"
        )
    );
    let mut with_secret = mirror_pod("n1", &uid);
    with_secret["spec"]["volumes"] = json!([{"name": "v", "secret": {"secretName": "s"}}]);
    assert_eq!(
        admit(&plugin, create(with_secret)).await,
        "pods \"static-web\" is forbidden: node \"n1\" can not create pods that reference secrets"
    );
    let mut with_config = mirror_pod("n1", &uid);
    with_config["spec"]["containers"][0]["envFrom"] = json!([{"configMapRef": {"name": "c"}}]);
    assert_eq!(
        admit(&plugin, create(with_config)).await,
        "pods \"static-web\" is forbidden: node \"n1\" can not create pods that reference configmaps"
    );
}

#[tokio::test]
async fn nodes_delete_and_update_status_only_of_pods_bound_to_them() {
    let plugin = plugin().await;
    let delete = |p: Value| {
        Write::new("", "pods", Operation::Delete)
            .old(p)
            .by(node("n1"))
    };
    assert_eq!(admit(&plugin, delete(pod("mine", "n1"))).await, "");
    assert_eq!(
        admit(&plugin, delete(pod("theirs", "n2"))).await,
        "pods \"theirs\" is forbidden: node \"n1\" can only delete pods with spec.nodeName set to itself"
    );
    let status = |new: Value, old: Value| {
        Write::new("", "pods", Operation::Update)
            .sub("status")
            .object(new)
            .old(old)
            .by(node("n1"))
    };
    assert_eq!(
        admit(&plugin, status(pod("mine", "n1"), pod("mine", "n1"))).await,
        ""
    );
    assert_eq!(
        admit(&plugin, status(pod("theirs", "n2"), pod("theirs", "n2"))).await,
        "pods \"theirs\" is forbidden: node \"n1\" can only update pod status for pods with spec.nodeName set to itself"
    );
    let mut relabelled = pod("mine", "n1");
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(
        admit(&plugin, status(relabelled, pod("mine", "n1"))).await,
        "pods \"mine\" is forbidden: node \"n1\" cannot update labels through pod status"
    );
    let update = Write::new("", "pods", Operation::Update)
        .object(pod("mine", "n1"))
        .old(pod("mine", "n1"))
        .by(node("n1"));
    assert_eq!(
        admit(&plugin, update).await,
        "pods \"mine\" is forbidden: unexpected operation \"UPDATE\", node \"n1\" can only create and delete mirror pods"
    );
}

#[tokio::test]
async fn evictions_and_tokens_only_for_pods_bound_to_the_node() {
    let plugin = plugin().await;
    let evict = |name: &'static str| {
        Write::new("", "pods", Operation::Create)
            .sub("eviction")
            .object(json!({"metadata": {"name": name, "namespace": "ns"}}))
            .by(node("n1"))
    };
    assert_eq!(admit(&plugin, evict("mine")).await, "");
    assert_eq!(
        admit(&plugin, evict("theirs")).await,
        "pods \"theirs\" is forbidden: node n1 can only evict pods with spec.nodeName set to itself"
    );
    assert_eq!(
        admit(&plugin, evict("gone")).await,
        "pods \"gone\" not found"
    );
    let token = |pod_name: &str, uid: String| {
        Write::new("", "serviceaccounts", Operation::Create)
            .sub("token")
            .name("default")
            .object(json!({"metadata": {"name": "default", "namespace": "ns"},
                "spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                    "name": pod_name, "uid": uid}}}))
            .by(node("n1"))
    };
    let mine = plugin_pod_uid(&plugin, "mine").await;
    assert_eq!(admit(&plugin, token("mine", mine)).await, "");
    let theirs = plugin_pod_uid(&plugin, "theirs").await;
    assert_eq!(
        admit(&plugin, token("theirs", theirs)).await,
        "serviceaccounts \"default\" is forbidden: node requested token bound to a pod scheduled on a different node"
    );
    assert_eq!(
        admit(&plugin, token("mine", String::new())).await,
        "serviceaccounts \"default\" is forbidden: node requested token with a pod binding without a uid"
    );
}

async fn plugin_pod_uid(plugin: &NodeRestriction, name: &str) -> String {
    let pod = plugin.stores.get("", "pods", Some("ns"), name).await;
    pod.ok()
        .flatten()
        .and_then(|p| text(&p, "/metadata/uid").map(str::to_owned))
        .unwrap_or_default()
}

#[tokio::test]
async fn leases_csinodes_and_slices_are_the_nodes_own() {
    let plugin = plugin().await;
    let lease = |ns: &str, name: &str| {
        Write::new("coordination.k8s.io", "leases", Operation::Create)
            .object(json!({"metadata": {"name": name, "namespace": ns}}))
            .by(node("n1"))
    };
    assert_eq!(admit(&plugin, lease("kube-node-lease", "n1")).await, "");
    assert_eq!(
        admit(&plugin, lease("kube-node-lease", "n2")).await,
        "leases.coordination.k8s.io \"n2\" is forbidden: can only access node lease with the same name as the requesting node"
    );
    assert_eq!(
        admit(&plugin, lease("default", "n1")).await,
        "leases.coordination.k8s.io \"n1\" is forbidden: can only access leases in the \"kube-node-lease\" system namespace"
    );
    let csinode = Write::new("storage.k8s.io", "csinodes", Operation::Update)
        .object(json!({"metadata": {"name": "n2"}}))
        .old(json!({"metadata": {"name": "n2"}}))
        .by(node("n1"));
    assert_eq!(
        admit(&plugin, csinode).await,
        "csinodes.storage.k8s.io \"n2\" is forbidden: can only access CSINode with the same name as the requesting node"
    );
    let slice = Write::new("resource.k8s.io", "resourceslices", Operation::Delete)
        .old(json!({"metadata": {"name": "s"}, "spec": {"nodeName": "n2"}}))
        .by(node("n1"));
    assert_eq!(
        admit(&plugin, slice).await,
        "resourceslices.resource.k8s.io \"s\" is forbidden: can only delete ResourceSlice with the same NodeName as the requesting node"
    );
}

fn node_csr(common_name: &str) -> Value {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    let pem = params
        .serialize_request(&key)
        .and_then(|csr| csr.pem())
        .expect("csr");
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    json!({"metadata": {"name": "csr"}, "spec": {"request": request,
        "signerName": "kubernetes.io/kubelet-serving"}})
}

#[tokio::test]
async fn node_certificate_requests_name_the_node() {
    let plugin = plugin().await;
    let create = |csr: Value| {
        Write::new(
            "certificates.k8s.io",
            "certificatesigningrequests",
            Operation::Create,
        )
        .object(csr)
        .by(node("n1"))
    };
    assert_eq!(admit(&plugin, create(node_csr("system:node:n1"))).await, "");
    assert_eq!(
        admit(&plugin, create(node_csr("system:node:n2"))).await,
        "certificatesigningrequests.certificates.k8s.io \"csr\" is forbidden: can only create a node CSR with CN=system:node:n1"
    );
}

#[test]
fn claim_status_writes_may_only_change_capacity_and_conditions() {
    let claim = |labels: Value, capacity: &str| {
        json!({"metadata": {"name": "c", "labels": labels, "resourceVersion": "1"},
            "status": {"capacity": {"storage": capacity}}})
    };
    let write = |new: Value| {
        Write::new("", "persistentvolumeclaims", Operation::Update)
            .sub("status")
            .object(new)
            .old(claim(json!({}), "1Gi"))
            .by(node("n1"))
    };
    assert!(admit_claim_status("n1", &write(claim(json!({}), "2Gi"))).is_ok());
    assert_eq!(
        refusal(admit_claim_status("n1", &write(claim(json!({"a": "b"}), "2Gi")))),
        "persistentvolumeclaims \"c\" is forbidden: node \"n1\" is not allowed to update fields other than status.quantity and status.conditions: metadata.labels"
    );
}
