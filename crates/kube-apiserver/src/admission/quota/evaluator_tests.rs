//! Tests of the quota evaluators against upstream's rules.

use super::*;

fn now() -> DateTime<Utc> {
    Utc::now()
}

fn shown(u: &Usage, k: &str) -> String {
    u.get(k).map(Amount::to_string).unwrap_or_default()
}

#[test]
fn pods_use_counts_and_compute_as_quota_names_them() {
    let pod = json!({"spec": {"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "250m", "example.com/gpu": "1"},
            "limits": {"cpu": "1", "example.com/gpu": "1"}}},
        {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "1Gi",
            "ephemeral-storage": "1Gi", "hugepages-2Mi": "4Mi"}}}
    ]}});
    let u = usage("", "pods", &pod, now());
    assert_eq!(shown(&u, "pods"), "1");
    assert_eq!(shown(&u, "count/pods"), "1");
    assert_eq!(shown(&u, "requests.cpu"), "500m");
    assert_eq!(shown(&u, "cpu"), "500m");
    assert_eq!(shown(&u, "limits.cpu"), "1");
    assert_eq!(shown(&u, "memory"), "1Gi");
    assert_eq!(shown(&u, "requests.memory"), "1Gi");
    assert_eq!(shown(&u, "ephemeral-storage"), "1Gi");
    assert_eq!(shown(&u, "requests.hugepages-2Mi"), "4Mi");
    assert_eq!(shown(&u, "hugepages-2Mi"), "4Mi");
    assert_eq!(shown(&u, "requests.example.com/gpu"), "1");
    // Extended resources are quota'd by request only.
    assert!(!u.contains_key("limits.example.com/gpu"));
    assert!(!u.contains_key("example.com/gpu"));
}

#[test]
fn sidecars_and_init_containers_count_as_upstream() {
    let pod = json!({"spec": {
        "initContainers": [
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
            {"name": "init", "resources": {"requests": {"cpu": "2"}}}],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}]}});
    // max(500m + 100m, 100m + 2) = 2100m
    assert_eq!(
        shown(&usage("", "pods", &pod, now()), "requests.cpu"),
        "2100m"
    );
}

#[test]
fn pod_level_resources_replace_only_cpu_memory_and_huge_pages() {
    let pod = json!({"spec": {
        "resources": {"requests": {"cpu": "3", "example.com/gpu": "5", "hugepages-2Mi": "8Mi"}},
        "containers": [{"name": "a", "resources": {"requests": {
            "cpu": "500m", "example.com/gpu": "1", "hugepages-2Mi": "2Mi"}}}]}});
    let u = usage("", "pods", &pod, now());
    assert_eq!(shown(&u, "requests.cpu"), "3");
    assert_eq!(shown(&u, "requests.hugepages-2Mi"), "8Mi");
    // Not a pod-level resource: the containers' sum counts.
    assert_eq!(shown(&u, "requests.example.com/gpu"), "1");
}

#[test]
fn ended_pods_keep_only_their_object_count() {
    let failed = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Failed"}});
    let u = usage("", "pods", &failed, now());
    assert_eq!(shown(&u, "count/pods"), "1");
    assert!(!u.contains_key("pods"));
    let stuck = json!({"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z",
        "deletionGracePeriodSeconds": 30}, "spec": {"containers": [{"name": "a"}]}});
    assert!(!usage("", "pods", &stuck, now()).contains_key("pods"));
    let graceful = json!({"metadata": {"deletionTimestamp": "2999-01-01T00:00:00Z",
        "deletionGracePeriodSeconds": 30}, "spec": {"containers": [{"name": "a"}]}});
    assert!(usage("", "pods", &graceful, now()).contains_key("pods"));
}

#[test]
fn services_count_node_ports_and_load_balancers() {
    let ports = json!([{"port": 80}, {"port": 443}]);
    let np = json!({"spec": {"type": "NodePort", "ports": ports}});
    let u = usage("", "services", &np, now());
    assert_eq!(shown(&u, "services.nodeports"), "2");
    assert!(!u.contains_key("services.loadbalancers"));
    let lb = json!({"spec": {"type": "LoadBalancer", "ports": ports,
        "allocateLoadBalancerNodePorts": false}});
    let u = usage("", "services", &lb, now());
    assert_eq!(shown(&u, "services.loadbalancers"), "1");
    assert!(!u.contains_key("services.nodeports"));
}

#[test]
fn claims_count_storage_per_class() {
    let pvc = json!({"spec": {"storageClassName": "gold",
        "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"allocatedResources": {"storage": "2Gi"}}});
    let u = usage("", "persistentvolumeclaims", &pvc, now());
    assert_eq!(shown(&u, "requests.storage"), "2Gi");
    assert_eq!(
        shown(&u, "gold.storageclass.storage.k8s.io/requests.storage"),
        "2Gi"
    );
    assert_eq!(
        shown(
            &u,
            "gold.storageclass.storage.k8s.io/persistentvolumeclaims"
        ),
        "1"
    );
    assert_eq!(shown(&u, "persistentvolumeclaims"), "1");
}

#[test]
fn quota_keys_name_the_resource_they_count() {
    let of = counted_resource;
    let core = |r: &str| Some((String::new(), r.to_string()));
    assert_eq!(of("requests.cpu"), core("pods"));
    assert_eq!(of("limits.memory"), core("pods"));
    assert_eq!(of("requests.example.com/gpu"), core("pods"));
    assert_eq!(of("limits.example.com/gpu"), None);
    assert_eq!(of("requests.storage"), core("persistentvolumeclaims"));
    assert_eq!(
        of("gold.storageclass.storage.k8s.io/requests.storage"),
        core("persistentvolumeclaims")
    );
    assert_eq!(of("services.nodeports"), core("services"));
    assert_eq!(
        of("count/deployments.apps"),
        Some(("apps".into(), "deployments".into()))
    );
    assert_eq!(of("count/configmaps"), core("configmaps"));
    assert_eq!(of("example.com/gpu"), None);
}

#[test]
fn scopes_select_pods_as_upstream() {
    let quota = |spec: Value| json!({"spec": spec});
    let best = json!({"spec": {"containers": [{"name": "a"}]}});
    let burst = json!({"spec": {"activeDeadlineSeconds": 5, "priorityClassName": "high",
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}});
    let q = quota(json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}));
    assert!(matches(&q, "", "pods", &best));
    assert!(!matches(&q, "", "pods", &burst));
    let q = quota(json!({"hard": {"pods": "1"}, "scopes": ["Terminating", "NotBestEffort"]}));
    assert!(matches(&q, "", "pods", &burst));
    assert!(!matches(&q, "", "pods", &best));
    let sel = |op: &str, values: Value| {
        quota(
            json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": op, "values": values}]}}),
        )
    };
    assert!(matches(&sel("In", json!(["high"])), "", "pods", &burst));
    assert!(!matches(&sel("In", json!(["high"])), "", "pods", &best));
    assert!(matches(&sel("NotIn", json!(["high"])), "", "pods", &best));
    assert!(matches(&sel("Exists", json!([])), "", "pods", &burst));
    assert!(!matches(&sel("Exists", json!([])), "", "pods", &best));
    assert!(matches(&sel("DoesNotExist", json!([])), "", "pods", &best));
    assert!(!matches(
        &sel("DoesNotExist", json!([])),
        "",
        "pods",
        &burst
    ));
    // Scoped quotas never select what has no scopes.
    let q = quota(json!({"hard": {"count/configmaps": "1"}, "scopes": ["BestEffort"]}));
    assert!(!matches(&q, "", "configmaps", &json!({})));
    // A quota selects only resources its hard keys count.
    let q = quota(json!({"hard": {"services": "1"}}));
    assert!(!matches(&q, "", "pods", &best));
}

#[test]
fn cross_namespace_affinity_scope() {
    let q = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["CrossNamespacePodAffinity"]}});
    let pod = json!({"spec": {"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"namespaceSelector": {}, "topologyKey": "k"}}]}}}});
    assert!(matches(&q, "", "pods", &pod));
    assert!(!matches(&q, "", "pods", &json!({"spec": {}})));
}

#[test]
fn volume_attributes_class_scope() {
    let q = json!({"spec": {"hard": {"persistentvolumeclaims": "1"}, "scopeSelector": {
        "matchExpressions": [{"scopeName": "VolumeAttributesClass", "operator": "In",
            "values": ["fast"]}]}}});
    let pvc = json!({"spec": {"volumeAttributesClassName": "fast"}});
    assert!(matches(&q, "", "persistentvolumeclaims", &pvc));
    assert!(!matches(
        &q,
        "",
        "persistentvolumeclaims",
        &json!({"spec": {}})
    ));
}

#[test]
fn amounts_print_in_the_first_operands_format() {
    let gi = Amount::of(&Quantity::parse("1Gi").unwrap_or_else(|_| unreachable!()));
    let mut total = Amount::default();
    total.add(gi);
    total.add(gi);
    assert_eq!(total.to_string(), "2Gi");
    let m = Amount::of(&Quantity::parse("500M").unwrap_or_else(|_| unreachable!()));
    let mut mixed = m;
    mixed.add(gi);
    assert_eq!(mixed.to_string(), "1573741824");
    assert_eq!(Amount::count(0).to_string(), "0");
    let hard = BTreeMap::from([("pods".to_string(), Amount::count(2))]);
    assert_eq!(
        status_of(&hard, &Usage::new()),
        json!({"hard": {"pods": "2"}, "used": {"pods": "0"}})
    );
}

#[test]
fn overhead_adds_to_requests_and_set_limits() {
    let pod = json!({"spec": {"overhead": {"cpu": "100m", "memory": "10Mi"},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"cpu": "2"}}}]}});
    let u = usage("", "pods", &pod, now());
    assert_eq!(shown(&u, "requests.cpu"), "1100m");
    assert_eq!(shown(&u, "limits.cpu"), "2100m");
    assert!(!u.contains_key("limits.memory"));
}
