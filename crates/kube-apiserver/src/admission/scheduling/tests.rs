use serde_json::json;

use super::*;
use crate::admission::testing::{refusal, stores, user, Write};

fn pod(node_selector: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeSelector": node_selector, "containers": [{"name": "c", "image": "i"}]}})
}

fn namespace(annotations: Value) -> (&'static str, &'static str, Value) {
    (
        "",
        "namespaces",
        json!({"metadata": {"name": "ns", "annotations": annotations}}),
    )
}

fn create(obj: Value) -> Attributes {
    Write::new("", "pods", Operation::Create)
        .object(obj)
        .name("p")
        .by(user("alice", &[]))
}

#[test]
fn selectors_parse_as_upstream_labels_maps() {
    let parsed = parse_selector("a=b, c = d");
    assert_eq!(
        parsed.ok(),
        Some(Labels::from([
            ("a".into(), "b".into()),
            ("c".into(), "d".into())
        ]))
    );
    assert_eq!(
        parse_selector("a=b=c").err().map(|e| e.message),
        Some("invalid selector: [a b c]".to_string())
    );
    assert_eq!(parse_selector("").ok(), Some(Labels::new()));
}

#[tokio::test]
async fn the_namespace_selector_is_merged_into_new_pods() {
    let plugin = PodNodeSelector {
        stores: stores(vec![namespace(
            json!({NODE_SELECTOR_ANNOTATION: "env=prod"}),
        )])
        .await,
        cluster: node_selector_config(Some(&json!({"podNodeSelectorPluginConfig": {
            "clusterDefaultNodeSelector": "env=dev", "ns": "env=prod,disk=ssd"}}))),
    };
    let mut attrs = create(pod(json!({"disk": "ssd"})));
    assert_eq!(refusal(plugin.admit(&mut attrs).await), "");
    assert_eq!(
        attrs
            .object
            .as_ref()
            .map(|p| p["spec"]["nodeSelector"].clone()),
        Some(json!({"env": "prod", "disk": "ssd"}))
    );
    let mut attrs = create(pod(json!({"env": "dev"})));
    assert_eq!(
        refusal(plugin.admit(&mut attrs).await),
        "pods \"p\" is forbidden: pod node label selector conflicts with its namespace node label selector"
    );
    let mut attrs = create(pod(json!({"gpu": "yes"})));
    assert_eq!(
        refusal(plugin.admit(&mut attrs).await),
        "pods \"p\" is forbidden: pod node label selector labels conflict with its namespace whitelist"
    );
}

#[tokio::test]
async fn the_cluster_default_applies_to_unannotated_namespaces() {
    let plugin = PodNodeSelector {
        stores: stores(vec![namespace(json!({}))]).await,
        cluster: node_selector_config(Some(&json!({"PodNodeSelectorPluginConfig": {
            "clusterDefaultNodeSelector": "env=dev"}}))),
    };
    let mut attrs = create(pod(json!({})));
    assert_eq!(refusal(plugin.admit(&mut attrs).await), "");
    assert_eq!(
        attrs
            .object
            .as_ref()
            .map(|p| p["spec"]["nodeSelector"].clone()),
        Some(json!({"env": "dev"}))
    );
}

#[tokio::test]
async fn required_anti_affinity_must_be_per_host() {
    let with_key = |key: &str| {
        let mut p = pod(json!({}));
        p["spec"]["affinity"] = json!({"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": key,
                "labelSelector": {"matchLabels": {"app": "web"}}}]}});
        create(p)
    };
    let plugin = LimitPodHardAntiAffinityTopology;
    assert_eq!(refusal(plugin.validate(&with_key(HOSTNAME)).await), "");
    assert_eq!(
        refusal(plugin.validate(&with_key("topology.kubernetes.io/zone")).await),
        "pods \"p\" is forbidden: affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey topology.kubernetes.io/zone but only key kubernetes.io/hostname is allowed"
    );
}

#[tokio::test]
async fn pods_and_bindings_get_the_nodes_topology_labels() {
    let node = json!({"metadata": {"name": "n1", "labels": {"topology.k8s.io/zone": "z1",
        "topology.k8s.io/region": "r1", "other": "x"}}});
    let plugin = PodTopologyLabels {
        stores: stores(vec![("", "nodes", node)]).await,
        enabled: true,
    };
    let mut bound = pod(json!({}));
    bound["spec"]["nodeName"] = json!("n1");
    bound["metadata"]["labels"] = json!({"topology.k8s.io/zone": "mine"});
    let mut attrs = create(bound);
    assert_eq!(refusal(plugin.admit(&mut attrs).await), "");
    assert_eq!(
        attrs
            .object
            .as_ref()
            .map(|p| p["metadata"]["labels"].clone()),
        Some(json!({"topology.k8s.io/zone": "mine", "topology.k8s.io/region": "r1"}))
    );
    let binding = json!({"metadata": {"name": "p", "namespace": "ns"},
        "target": {"kind": "Node", "name": "n1"}});
    let mut attrs = Write::new("", "pods", Operation::Create)
        .sub("binding")
        .object(binding)
        .by(user("scheduler", &[]));
    assert_eq!(refusal(plugin.admit(&mut attrs).await), "");
    assert_eq!(
        attrs
            .object
            .as_ref()
            .map(|b| b["metadata"]["labels"].clone()),
        Some(json!({"topology.k8s.io/zone": "z1", "topology.k8s.io/region": "r1"}))
    );
    let off = PodTopologyLabels {
        stores: plugin.stores.clone(),
        enabled: false,
    };
    let mut unscheduled = create(pod(json!({})));
    let before = unscheduled.object.clone();
    assert_eq!(refusal(off.admit(&mut unscheduled).await), "");
    assert_eq!(unscheduled.object, before);
}
