use serde_json::json;

use super::*;
use crate::admission::testing::{refusal, stores, user, Write};

fn t(v: Value) -> Toleration {
    serde_json::from_value(v).unwrap_or_default()
}

#[test]
fn merging_drops_tolerations_others_cover() {
    let exists_all = t(json!({"operator": "Exists"}));
    let key = t(json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}));
    let key_any_effect = t(json!({"key": "k", "operator": "Equal", "value": "v"}));
    let merged =
        |a: &Toleration, b: &Toleration| merge(std::slice::from_ref(a), std::slice::from_ref(b));
    assert_eq!(
        merged(&key, &key_any_effect),
        std::slice::from_ref(&key_any_effect)
    );
    assert_eq!(merged(&key, &key), std::slice::from_ref(&key));
    assert_eq!(merged(&exists_all, &key), std::slice::from_ref(&exists_all));
    let short = t(
        json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}),
    );
    let long = t(
        json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}),
    );
    // The longer tolerance covers the shorter one, whichever comes first.
    assert_eq!(merged(&long, &short), std::slice::from_ref(&long));
    assert_eq!(merged(&short, &long), std::slice::from_ref(&long));
}

fn pod(tolerations: Value, requests: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"tolerations": tolerations,
        "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}]}})
}

fn namespace(annotations: Value) -> (&'static str, &'static str, Value) {
    (
        "",
        "namespaces",
        json!({"metadata": {"name": "ns", "annotations": annotations}}),
    )
}

#[tokio::test]
async fn namespace_defaults_are_merged_and_the_whitelist_enforced() {
    let annotations = json!({
        DEFAULT_TOLERATIONS: r#"[{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}]"#,
        TOLERATIONS_WHITELIST: r#"[{"key": "team", "operator": "Exists"}, {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists"}]"#,
    });
    let plugin = PodTolerationRestriction {
        stores: stores(vec![namespace(annotations)]).await,
        config: TolerationConfig::default(),
    };
    let mut attrs = Write::new("", "pods", Operation::Create)
        .object(pod(json!([]), json!({"cpu": "1"})))
        .by(user("alice", &[]));
    assert_eq!(refusal(plugin.admit(&mut attrs).await), "");
    let tolerations = attrs
        .object
        .as_ref()
        .map(pod_tolerations)
        .unwrap_or_default();
    assert_eq!(
        tolerations,
        [
            t(json!({"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"})),
            t(json!({"key": MEMORY_PRESSURE, "operator": "Exists", "effect": "NoSchedule"})),
        ]
    );
    let mut attrs = Write::new("", "pods", Operation::Create)
        .object(pod(
            json!([{"key": "gpu", "operator": "Exists"}]),
            json!({}),
        ))
        .by(user("alice", &[]));
    assert_eq!(
        refusal(plugin.admit(&mut attrs).await),
        "pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist"
    );
}

#[tokio::test]
async fn the_cluster_configuration_applies_when_the_namespace_says_nothing() {
    let config = TolerationConfig::from_config(Some(&json!({
        "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1",
        "kind": "Configuration",
        "whitelist": [{"key": "allowed", "operator": "Exists"}],
    })));
    let plugin = PodTolerationRestriction {
        stores: stores(vec![namespace(json!({}))]).await,
        config: config.unwrap_or_default(),
    };
    let attrs = Write::new("", "pods", Operation::Update)
        .object(pod(
            json!([{"key": "other", "operator": "Exists"}]),
            json!({}),
        ))
        .old(pod(json!([]), json!({})))
        .by(user("alice", &[]));
    assert_eq!(
        refusal(plugin.validate(&attrs).await),
        "pod tolerations (possibly merged with namespace default tolerations) conflict with its cluster whitelist"
    );
    assert!(TolerationConfig::from_config(Some(&json!({"default": "x"}))).is_err());
}

#[tokio::test]
async fn extended_resources_are_tolerated() {
    let mut attrs = Write::new("", "pods", Operation::Create)
        .object(pod(
            json!([]),
            json!({"cpu": "1", "example.com/gpu": "1", "hugepages-2Mi": "1Gi", "kubernetes.io/x": "1"}),
        ))
        .by(user("alice", &[]));
    assert_eq!(
        refusal(ExtendedResourceToleration.admit(&mut attrs).await),
        ""
    );
    assert_eq!(
        attrs
            .object
            .as_ref()
            .map(pod_tolerations)
            .unwrap_or_default(),
        [t(
            json!({"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
        )]
    );
    assert!(is_extended_resource("example.com/foo"));
    assert!(!is_extended_resource("cpu"));
    assert!(!is_extended_resource("requests.example.com/foo"));
}
