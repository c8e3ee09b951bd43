use serde_json::json;

use super::*;

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn node(spec: Value) -> Value {
    json!({"metadata": {"name": "n"}, "spec": spec})
}

#[test]
fn a_node_as_the_kubelet_registers_it_is_valid() {
    let mut n = node(
        json!({"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24", "fd00:10:244::/64"],
        "providerID": "kind://docker/kind/kind-control-plane",
        "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
            {"key": "node-role.kubernetes.io/control-plane", "effect": "NoExecute"}]}),
    );
    n["status"] = json!({"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110",
        "hugepages-2Mi": "0", "example.com/gpu": "2"},
        "allocatable": {"cpu": "7500m", "memory": "15Gi", "pods": "110"},
        "addresses": [{"type": "InternalIP", "address": "172.18.0.2"},
            {"type": "Hostname", "address": "kind-control-plane"}]});
    assert_eq!(messages(&validate_node(&n)), Vec::<String>::new());
    assert_eq!(
        messages(&validate_node_update(&n, &n)),
        Vec::<String>::new()
    );
}

#[test]
fn taints_need_keys_values_effects_and_uniqueness() {
    let n = node(json!({"taints": [
        {"key": "", "effect": "NoSchedule"},
        {"key": "k", "value": "a b", "effect": "Sometimes"},
        {"key": "dedicated", "effect": ""},
        {"key": "dedicated", "value": "x", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "y", "effect": "NoSchedule"}]}));
    assert_eq!(
        messages(&validate_node(&n)),
        [
            "metadata.taints[0].key: Invalid value: \"\": name part must be non-empty",
            "metadata.taints[0].key: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "metadata.taints[1].value: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "metadata.taints[1].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
            "metadata.taints[2].effect: Required value",
            "metadata.taints[4]: Duplicate value: {\"Key\":\"dedicated\",\"Value\":\"y\",\"Effect\":\"NoSchedule\",\"TimeAdded\":null}: taints must be unique by key and effect pair",
        ]
    );
}

#[test]
fn pod_cidrs_are_valid_one_per_family_and_unique() {
    assert_eq!(
        messages(&validate_node(&node(json!({"podCIDR": "10.1.0.0"})))),
        ["spec.podCIDRs[0]: Invalid value: \"10.1.0.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    );
    let two_v4 = node(json!({"podCIDRs": ["10.1.0.0/24", "10.1.0.0/24"]}));
    assert_eq!(
        messages(&validate_node(&two_v4)),
        [
            "spec.podCIDRs: Invalid value: [\"10.1.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one CIDR for each IP family",
            "spec.podCIDRs[1]: Duplicate value: \"10.1.0.0/24\"",
        ]
    );
    let three = node(json!({"podCIDRs": ["10.1.0.0/24", "fd00::/64", "10.2.0.0/24"]}));
    assert_eq!(validate_node(&three).len(), 1);
}

#[test]
fn status_quantities_are_checked_on_create_and_update() {
    let mut n = node(json!({}));
    n["status"] = json!({"capacity": {"cpu": "-1", "pods": "1500m"},
        "allocatable": {"example.com/gpu": "0.5"},
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "InternalIP", "address": "10.0.0.1"}]});
    let quantities = [
        "status.capacity.cpu: Invalid value: \"-1\": must be greater than or equal to 0",
        "status.capacity.pods: Invalid value: \"1500m\": must be an integer",
        "status.allocatable.example.com/gpu: Invalid value: \"500m\": must be an integer",
    ];
    assert_eq!(messages(&validate_node(&n)), quantities);
    let mut on_update = quantities.map(String::from).to_vec();
    on_update.push(
        "status.addresses[1]: Duplicate value: {\"Type\":\"InternalIP\",\"Address\":\"10.0.0.1\"}"
            .into(),
    );
    assert_eq!(
        messages(&validate_node_update(&n, &node(json!({})))),
        on_update
    );
}

#[test]
fn node_pod_cidrs_and_provider_id_are_set_once() {
    let empty = node(json!({}));
    let set = node(
        json!({"podCIDR": "10.1.0.0/24", "podCIDRs": ["10.1.0.0/24"],
        "providerID": "aws:///i-1"}),
    );
    assert!(validate_node_update(&set, &empty).is_empty());
    let mut tainted = set.clone();
    tainted["spec"]["taints"] = json!([{"key": "k", "effect": "NoSchedule"}]);
    tainted["spec"]["unschedulable"] = json!(true);
    assert!(validate_node_update(&tainted, &set).is_empty());
    let moved = node(
        json!({"podCIDR": "10.2.0.0/24", "podCIDRs": ["10.2.0.0/24"],
        "providerID": "aws:///i-2", "externalID": "x"}),
    );
    assert_eq!(
        messages(&validate_node_update(&moved, &set)),
        vec![
            "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
            "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid",
            "spec.externalID: Forbidden: may not be updated",
        ]
    );
    let dual = node(json!({"podCIDRs": ["10.1.0.0/24", "fd00::/64"], "providerID": "aws:///i-1"}));
    assert_eq!(validate_node_update(&dual, &set).len(), 1);
}
