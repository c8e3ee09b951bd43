//! Table tests of the discovery, policy, scheduling, coordination and node
//! validation against upstream's messages.

use serde_json::{json, Value};

use super::*;

fn messages(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn slice(obj: Value) -> Vec<String> {
    messages(validate_endpoint_slice_create(&obj))
}

#[test]
fn valid_endpoint_slice_passes() {
    let obj = json!({
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.2.3"], "hostname": "pod-a"}],
        "ports": [{"name": "http", "protocol": "TCP", "port": 80, "appProtocol": "http"}],
    });
    assert!(slice(obj).is_empty());
    let fqdn = json!({"addressType": "FQDN", "endpoints": [{"addresses": ["db.example.com."]}]});
    assert!(slice(fqdn).is_empty());
}

#[test]
fn endpoint_slice_address_type_addresses_and_ports() {
    assert_eq!(slice(json!({})), ["addressType: Required value"]);
    assert_eq!(
        slice(json!({"addressType": "IP"})),
        ["addressType: Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""]
    );
    let obj = json!({
        "addressType": "IPv4",
        "endpoints": [{"addresses": []}, {"addresses": ["not-an-ip", "127.0.0.1", "2001:db8::1"], "hostname": "A"}],
        "ports": [{"name": "", "protocol": "TCP"}, {"name": "", "protocol": "ICMP"}, {"name": "Web", "protocol": "TCP"}],
    });
    assert_eq!(
        slice(obj),
        [
            "endpoints[0].addresses: Required value: must contain at least 1 address",
            "endpoints[1].addresses[0]: Invalid value: \"not-an-ip\": must be a valid IPv4 address",
            "endpoints[1].addresses[2]: Invalid value: \"2001:db8::1\": must be a valid IPv4 address",
            "endpoints[1].hostname: Invalid value: \"A\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "ports[1].name: Duplicate value: \"\"",
            "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "ports[2].name: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ]
    );
}

#[test]
fn endpoint_slice_limits_and_fqdn() {
    let endpoints: Vec<Value> = (0..1001)
        .map(|_| json!({"addresses": ["10.0.0.1"]}))
        .collect();
    assert_eq!(
        slice(json!({"addressType": "IPv4", "endpoints": endpoints})),
        ["endpoints: Too many: 1001: must have at most 1000 items"]
    );
    assert_eq!(
        slice(json!({"addressType": "FQDN", "endpoints": [{"addresses": ["localhost"]}]})),
        ["endpoints[0].addresses[0]: Invalid value: \"localhost\": should be a domain with at least two segments separated by dots"]
    );
}

#[test]
fn deprecated_ip_type_is_kept_on_update() {
    let obj = json!({"addressType": "IP", "endpoints": [{"addresses": ["10.0.0.1"]}]});
    assert!(messages(validate_endpoint_slice_update(&obj, &obj)).is_empty());
}

fn pdb(spec: Value) -> Vec<String> {
    messages(validate_pod_disruption_budget(&json!({ "spec": spec })))
}

#[test]
fn pod_disruption_budgets() {
    assert!(
        pdb(json!({"minAvailable": "50%", "selector": {"matchLabels": {"app": "a"}}})).is_empty()
    );
    assert_eq!(
        pdb(json!({"minAvailable": 1, "maxUnavailable": "120%", "selector": {"matchLabels": {"app": "a"}}})),
        [
            "spec: Invalid value: {\"MinAvailable\":1,\"Selector\":{\"matchLabels\":{\"app\":\"a\"}},\"MaxUnavailable\":\"120%\",\"UnhealthyPodEvictionPolicy\":null}: minAvailable and maxUnavailable cannot be both set",
            "spec.maxUnavailable: Invalid value: \"120%\": must not be greater than 100%",
        ]
    );
    assert_eq!(
        pdb(json!({"minAvailable": -1, "maxUnavailable": null, "unhealthyPodEvictionPolicy": "Never"})),
        [
            "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
            "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
        ]
    );
    assert_eq!(
        pdb(json!({"maxUnavailable": "half"})),
        ["spec.maxUnavailable: Invalid value: \"half\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
    );
}

fn priority_class(obj: Value) -> Vec<String> {
    messages(validate_priority_class(&obj))
}

#[test]
fn priority_classes() {
    assert!(priority_class(json!({"metadata": {"name": "high"}, "value": 1000000000})).is_empty());
    assert!(priority_class(
        json!({"metadata": {"name": "system-node-critical"}, "value": 2000001000})
    )
    .is_empty());
    assert_eq!(
        priority_class(json!({"metadata": {"name": "high"}, "value": 2000000001, "preemptionPolicy": "Sometimes"})),
        [
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
            "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\"",
        ]
    );
    assert_eq!(
        priority_class(json!({"metadata": {"name": "system-mine"}, "value": 1})),
        ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"]
    );
    assert_eq!(
        priority_class(json!({"metadata": {"name": "system-cluster-critical"}, "value": 1})),
        ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-cluster-critical PriorityClass must be 2000000000"]
    );
}

#[test]
fn leases() {
    let lease = |spec: Value| messages(validate_lease(&json!({ "spec": spec })));
    assert!(lease(
        json!({"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0})
    )
    .is_empty());
    assert_eq!(
        lease(json!({"leaseDurationSeconds": -1, "leaseTransitions": -2, "preferredHolder": "b"})),
        [
            "spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0",
            "spec.leaseTransitions: Invalid value: -2: must be greater than or equal to 0",
            "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined",
        ]
    );
    assert_eq!(
        lease(json!({"strategy": "Newest"})),
        ["spec.strategy.strategy: Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\""]
    );
    assert!(lease(json!({"strategy": "example.com/mine"})).is_empty());
}

#[test]
fn runtime_classes() {
    let class = |obj: Value| messages(validate_runtime_class(&obj));
    assert!(
        class(json!({"handler": "runc", "scheduling": {"nodeSelector": {"a": "b"}}})).is_empty()
    );
    assert_eq!(
        class(json!({"handler": "Run_C", "scheduling": {"nodeSelector": {"a b": "c"}}})),
        [
            "handler: Invalid value: \"Run_C\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "scheduling.nodeSelector: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ]
    );
}

#[test]
fn budget_without_selector_shows_a_null_selector() {
    assert_eq!(
        pdb(json!({"minAvailable": 1, "maxUnavailable": 1})),
        ["spec: Invalid value: {\"MinAvailable\":1,\"Selector\":null,\"MaxUnavailable\":1,\"UnhealthyPodEvictionPolicy\":null}: minAvailable and maxUnavailable cannot be both set"]
    );
}
