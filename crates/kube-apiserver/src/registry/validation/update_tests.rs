use serde_json::json;

use super::*;

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn pod(spec: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": spec})
}

fn base_pod() -> Value {
    pod(json!({
        "containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}],
        "tolerations": [{"key": "a", "operator": "Exists", "tolerationSeconds": 5}],
        "schedulingGates": [{"name": "g1"}],
        "terminationGracePeriodSeconds": -1,
    }))
}

#[test]
fn pod_allows_images_deadlines_tolerations_gates_and_grace() {
    let old = base_pod();
    let mut new = old.clone();
    new["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    new["spec"]["activeDeadlineSeconds"] = json!(30);
    new["spec"]["tolerations"] = json!([
        {"key": "a", "operator": "Exists", "tolerationSeconds": 9},
        {"key": "b", "operator": "Exists"}
    ]);
    new["spec"]["schedulingGates"] = json!([]);
    new["spec"]["terminationGracePeriodSeconds"] = json!(1);
    assert_eq!(
        messages(&validate_pod_update(&new, &old)),
        Vec::<String>::new()
    );
}

#[test]
fn pod_refuses_other_spec_changes_with_upstreams_list() {
    let old = base_pod();
    let mut new = old.clone();
    new["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(8080);
    assert_eq!(
        messages(&validate_pod_update(&new, &old)),
        vec![format!("spec: Forbidden: {POD_UPDATABLE}")]
    );
    assert!(POD_UPDATABLE.ends_with("(allow it to be set to 1 if it was previously negative)"));
    let mut grace = old.clone();
    grace["spec"]["terminationGracePeriodSeconds"] = json!(2);
    assert_eq!(validate_pod_update(&grace, &old).len(), 1);
}

#[test]
fn pod_refuses_container_count_deadline_toleration_and_gate_changes() {
    let old = base_pod();
    let mut added = old.clone();
    added["spec"]["containers"] = json!([{"name": "c", "image": "a"}, {"name": "d", "image": "b"}]);
    assert_eq!(
        messages(&validate_pod_update(&added, &old)),
        vec!["spec.containers: Forbidden: pod updates may not add or remove containers"]
    );
    let mut with_deadline = old.clone();
    with_deadline["spec"]["activeDeadlineSeconds"] = json!(10);
    let mut raised = with_deadline.clone();
    raised["spec"]["activeDeadlineSeconds"] = json!(20);
    assert_eq!(
        messages(&validate_pod_update(&raised, &with_deadline)),
        vec!["spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"]
    );
    assert_eq!(
        messages(&validate_pod_update(&old, &with_deadline)),
        vec!["spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"]
    );
    let mut changed = old.clone();
    changed["spec"]["tolerations"][0]["key"] = json!("z");
    changed["spec"]["schedulingGates"] = json!([{"name": "g1"}, {"name": "g2"}]);
    assert_eq!(
        messages(&validate_pod_update(&changed, &old)),
        vec![
            "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds",
            "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g2'",
        ]
    );
    let mut blank = old.clone();
    blank["spec"]["containers"][0]["image"] = json!("");
    assert_eq!(
        messages(&validate_pod_update(&blank, &old)),
        vec!["spec.containers[0].image: Required value"]
    );
}

#[test]
fn gated_pods_may_only_add_node_selector_entries() {
    let mut old = base_pod();
    old["spec"]["nodeSelector"] = json!({"a": "b"});
    let mut added = old.clone();
    added["spec"]["nodeSelector"]["c"] = json!("d");
    assert!(validate_pod_update(&added, &old).is_empty());
    let mut changed = old.clone();
    changed["spec"]["nodeSelector"] = json!({"a": "z"});
    assert_eq!(
        messages(&validate_pod_update(&changed, &old)),
        vec!["spec.nodeSelector: Invalid value: {\"a\":\"z\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"]
    );
    let mut ungated = old.clone();
    ungated["spec"]["schedulingGates"] = json!([]);
    let mut moved = ungated.clone();
    moved["spec"]["nodeSelector"]["c"] = json!("d");
    assert_eq!(
        messages(&validate_pod_update(&moved, &ungated)),
        vec![format!("spec: Forbidden: {POD_UPDATABLE}")]
    );
}

fn svc(spec: Value) -> Value {
    json!({"metadata": {"name": "s"}, "spec": spec})
}

#[test]
fn service_cluster_ips_and_families_are_fixed() {
    let old =
        svc(json!({"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"], "ipFamilies": ["IPv4"]}));
    let same = svc(
        json!({"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"], "ipFamilies": ["IPv4"], "ports": [{"port": 81}]}),
    );
    assert!(validate_service_update(&same, &old).is_empty());
    let moved =
        svc(json!({"clusterIP": "10.0.0.6", "clusterIPs": ["10.0.0.6"], "ipFamilies": ["IPv6"]}));
    assert_eq!(
        messages(&validate_service_update(&moved, &old)),
        vec![
            "spec.clusterIPs[0]: Invalid value: [\"10.0.0.6\"]: may not change once set",
            "spec.ipFamilies[0]: Invalid value: [\"IPv6\"]: may not change once set",
        ]
    );
    let single =
        svc(json!({"clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.5"], "ipFamilies": ["IPv4"]}));
    assert_eq!(
        messages(&validate_service_update(&single, &old)),
        vec!["spec.clusterIPs[0]: Invalid value: [\"10.0.0.7\"]: may not change once set"]
    );
    let to_external = svc(json!({"type": "ExternalName", "externalName": "x.example"}));
    assert!(validate_service_update(&to_external, &old).is_empty());
    let headless = svc(json!({"clusterIP": "None", "clusterIPs": ["None"]}));
    assert!(validate_service_update(&headless, &headless).is_empty());
}

#[test]
fn immutable_configmaps_and_secrets_keep_content() {
    let old = json!({"immutable": true, "data": {"a": "1"}});
    assert!(validate_configmap_update(&old, &old).is_empty());
    let new = json!({"immutable": false, "data": {"a": "2"}, "binaryData": {"b": "AA=="}});
    assert_eq!(
        messages(&validate_configmap_update(&new, &old)),
        vec![
            "immutable: Forbidden: field is immutable when `immutable` is set",
            "data: Forbidden: field is immutable when `immutable` is set",
            "binaryData: Forbidden: field is immutable when `immutable` is set",
        ]
    );
    let mutable = json!({"data": {"a": "1"}});
    assert!(validate_configmap_update(&new, &mutable).is_empty());
    let secret = json!({"type": "Opaque", "immutable": true, "data": {"a": "MQ=="}});
    let retyped = json!({"type": "kubernetes.io/tls", "immutable": true, "data": {"a": "Mg=="}});
    assert_eq!(
        messages(&validate_secret_update(&retyped, &secret)),
        vec![
            "type: Invalid value: \"kubernetes.io/tls\": field is immutable",
            "data: Forbidden: field is immutable when `immutable` is set",
        ]
    );
}

fn pvc(storage: &str, phase: &str, capacity: &str) -> Value {
    json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}},
        "status": {"phase": phase, "capacity": {"storage": capacity}}})
}

#[test]
fn pvc_spec_is_fixed_except_bound_requests() {
    let old = pvc("1Gi", "Bound", "1Gi");
    assert!(validate_pvc_update(&pvc("2Gi", "Bound", "1Gi"), &old).is_empty());
    assert_eq!(
        messages(&validate_pvc_update(&pvc("512Mi", "Bound", "1Gi"), &old)),
        vec!["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
    );
    let pending = pvc("1Gi", "Pending", "0");
    assert_eq!(
        messages(&validate_pvc_update(&pvc("2Gi", "Pending", "0"), &pending)),
        vec![format!("spec: Forbidden: {PVC_IMMUTABLE}")]
    );
    let mut named = pending.clone();
    named["spec"]["volumeName"] = json!("pv-1");
    assert!(validate_pvc_update(&named, &pending).is_empty());
    let mut renamed = named.clone();
    renamed["spec"]["volumeName"] = json!("pv-2");
    assert_eq!(validate_pvc_update(&renamed, &named).len(), 1);
}

#[test]
fn semantic_equality_treats_empty_as_absent() {
    assert!(semantic_eq(
        Some(&json!({"a": [], "b": null})),
        Some(&json!({}))
    ));
    assert!(!semantic_eq(Some(&json!({"a": 1})), Some(&json!({}))));
    assert!(!semantic_eq(Some(&json!({})), Some(&json!({"a": false}))));
}
