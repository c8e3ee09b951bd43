//! Cells of the flowcontrol, admissionregistration, resource.k8s.io,
//! APIService and CRD printers against what upstream's print functions and
//! table convertors give for the same objects.

use serde_json::{json, Value};

use super::*;

/// Created long enough ago that the age cannot tick over mid-test.
const CREATED: &str = "2020-01-01T00:00:00Z";

fn meta(name: &str) -> Value {
    json!({"name": name, "creationTimestamp": CREATED})
}

/// The row without its Age cell (at `age`), after checking it is an age.
fn without_age(mut row: Vec<Value>, age: usize) -> Vec<Value> {
    let cell = row.remove(age);
    let age = cell.as_str().unwrap_or_default();
    assert!(age.contains('y'), "age cell {age:?}");
    row
}

#[test]
fn every_printer_has_one_cell_per_column() {
    let empty = json!({"metadata": meta("x")});
    for p in PRINTERS {
        assert_eq!(
            (p.columns)().len(),
            (p.row)(&empty).len(),
            "{}/{}",
            p.group,
            p.kind
        );
        let found = super::super::for_kind(p.group, p.version, p.kind);
        assert!(
            found.is_some_and(|f| (f.columns)() == (p.columns)()),
            "{} is found with these columns (no other printer first)",
            p.kind
        );
    }
}

#[test]
fn flow_schema_cells() {
    let fs = json!({
        "metadata": meta("probes"),
        "spec": {
            "priorityLevelConfiguration": {"name": "exempt"},
            "matchingPrecedence": 2,
            "distinguisherMethod": {"type": "ByUser"}
        },
        "status": {"conditions": [
            {"type": "Other", "status": "True"},
            {"type": "Dangling", "status": "False"}
        ]}
    });
    assert_eq!(
        without_age(flow_schema_row(&fs), 4),
        vec![
            json!("probes"),
            json!("exempt"),
            json!(2),
            json!("ByUser"),
            json!("False")
        ]
    );
    let bare = json!({"metadata": meta("new"), "spec": {
        "priorityLevelConfiguration": {"name": "missing"}, "matchingPrecedence": 1000}});
    assert_eq!(
        without_age(flow_schema_row(&bare), 4),
        vec![
            json!("new"),
            json!("missing"),
            json!(1000),
            json!("<none>"),
            json!("?")
        ]
    );
}

#[test]
fn priority_level_cells() {
    let limited = json!({
        "metadata": meta("workload-low"),
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 100,
            "limitResponse": {"type": "Queue", "queuing": {
                "queues": 128, "handSize": 6, "queueLengthLimit": 50}}
        }}
    });
    assert_eq!(
        without_age(priority_level_row(&limited), 6),
        vec![
            json!("workload-low"),
            json!("Limited"),
            json!(100),
            json!(128),
            json!(6),
            json!(50)
        ]
    );
    let rejecting = json!({"metadata": meta("catch-all"), "spec": {"type": "Limited",
        "limited": {"nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}});
    let exempt = json!({"metadata": meta("exempt"), "spec": {"type": "Exempt",
        "exempt": {"nominalConcurrencyShares": 0}}});
    let none = json!("<none>");
    assert_eq!(
        without_age(priority_level_row(&rejecting), 6)[2..],
        [json!(5), none.clone(), none.clone(), none.clone()]
    );
    assert_eq!(
        without_age(priority_level_row(&exempt), 6)[1..],
        [
            json!("Exempt"),
            none.clone(),
            none.clone(),
            none.clone(),
            none
        ]
    );
}

#[test]
fn webhook_and_policy_cells() {
    let config = json!({"metadata": meta("hooks"), "webhooks": [{"name": "a"}, {"name": "b"}]});
    assert_eq!(
        without_age(webhook_row(&config), 2),
        vec![json!("hooks"), json!(2)]
    );
    let empty = json!({"metadata": meta("none")});
    assert_eq!(without_age(webhook_row(&empty), 2)[1], json!(0));

    let vap = json!({"metadata": meta("replicas"), "spec": {
        "paramKind": {"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"},
        "validations": [{"expression": "true"}, {"expression": "false"}, {"expression": "1 < 2"}]
    }});
    assert_eq!(
        without_age(validating_policy_row(&vap), 3),
        vec![
            json!("replicas"),
            json!(3),
            json!("rules.example.com/v1/ReplicaLimit")
        ]
    );
    let map = json!({"metadata": meta("sidecar"), "spec": {
        "mutations": [{"patchType": "ApplyConfiguration"}]}});
    assert_eq!(
        without_age(mutating_policy_row(&map), 3),
        vec![json!("sidecar"), json!(1), json!("<unset>")]
    );
}

#[test]
fn binding_param_refs() {
    let binding = |param: Value| {
        let b = json!({"metadata": meta("b"), "spec": {"policyName": "p", "paramRef": param}});
        without_age(binding_row(&b), 3)[1..].to_vec()
    };
    assert_eq!(
        binding(json!({"name": "limits", "namespace": "team-a"})),
        [json!("p"), json!("team-a/limits")]
    );
    assert_eq!(binding(json!({"name": "limits"}))[1], json!("*/limits"));
    assert_eq!(binding(Value::Null)[1], json!("<unset>"));
    assert_eq!(binding(json!({"namespace": "x"}))[1], json!("<unset>"));
    assert_eq!(
        binding(json!({"selector": {}}))[1],
        json!("&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}")
    );
    assert_eq!(
        binding(json!({"selector": {
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "gone", "operator": "DoesNotExist"}
            ]
        }}))[1],
        json!("&LabelSelector{MatchLabels:map[string]string{app: shop,tier: web,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:In,Values:[prod dev],},LabelSelectorRequirement{Key:gone,Operator:DoesNotExist,Values:[],},},}")
    );
}

#[test]
fn resource_claim_states() {
    let state = |claim: Value| claim_row(&claim)[1].clone();
    assert_eq!(state(json!({"metadata": meta("c")})), json!("pending"));
    let allocation = json!({"devices": {"results": []}});
    assert_eq!(
        state(json!({"metadata": meta("c"), "status": {"allocation": allocation}})),
        json!("allocated")
    );
    assert_eq!(
        state(
            json!({"metadata": meta("c"), "status": {"allocation": allocation,
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "1"}]}})
        ),
        json!("allocated,reserved")
    );
    let deleting = json!({"name": "c", "deletionTimestamp": CREATED});
    assert_eq!(state(json!({"metadata": deleting})), json!("deleted"));
    assert_eq!(
        state(
            json!({"metadata": deleting, "status": {"allocation": allocation,
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "1"}]}})
        ),
        json!("deleted,allocated,reserved")
    );
}

#[test]
fn resource_slice_and_template_cells() {
    let slice = json!({"metadata": meta("node-1-gpu"), "spec": {
        "nodeName": "node-1", "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1}}});
    assert_eq!(
        without_age(slice_row(&slice), 4),
        vec![
            json!("node-1-gpu"),
            json!("node-1"),
            json!("gpu.example.com"),
            json!("node-1")
        ]
    );
    let shared = json!({"metadata": meta("net"), "spec": {"allNodes": true,
        "driver": "net.example.com", "pool": {"name": "fabric"}}});
    assert_eq!(slice_row(&shared)[1], Value::Null);
    let template = json!({"metadata": meta("gpu-template")});
    assert_eq!(
        without_age(name_age_row(&template), 1),
        vec![json!("gpu-template")]
    );
}

#[test]
fn api_service_cells() {
    let local = json!({"metadata": meta("v1.apps"), "spec": {"group": "apps", "version": "v1"},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
    assert_eq!(
        without_age(api_service_row(&local), 3),
        vec![json!("v1.apps"), json!("Local"), json!("True")]
    );
    let remote = json!({"metadata": meta("v1beta1.metrics.k8s.io"), "spec": {
        "service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [
            {"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
    assert_eq!(
        without_age(api_service_row(&remote), 3)[1..],
        [
            json!("kube-system/metrics-server"),
            json!("False (MissingEndpoints)")
        ]
    );
    let new = json!({"metadata": meta("v1.example.com"), "spec": {}});
    assert_eq!(api_service_row(&new)[2], json!("Unknown"));
    let no_reason = json!({"metadata": meta("v1.x"),
        "status": {"conditions": [{"type": "Available", "status": "False"}]}});
    assert_eq!(api_service_row(&no_reason)[2], json!("False"));
}

#[test]
fn crd_cells() {
    let crd = json!({
        "metadata": {"name": "widgets.example.com", "creationTimestamp": "2026-03-04T05:06:07+02:00"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd", "wds"]},
            "versions": [
                {"name": "v2", "served": true, "storage": true},
                {"name": "v1beta1", "served": false, "storage": false},
                {"name": "v1", "served": true, "storage": false}
            ]
        },
        "status": {"conditions": [
            {"type": "NamesAccepted", "status": "True"},
            {"type": "Established", "status": "True"}
        ]}
    });
    assert_eq!(
        crd_row(&crd),
        vec![
            json!("widgets.example.com"),
            json!("Namespaced"),
            json!("v1,v2(storage)"),
            json!("2026-03-04T03:06:07Z"),
            json!("example.com"),
            json!("Widget"),
            json!("wd,wds"),
            json!(true)
        ]
    );
    let new = json!({"metadata": {"name": "gadgets.example.com"}, "spec": {"scope": "Cluster"}});
    assert_eq!(
        crd_row(&new)[1..],
        [
            json!("Cluster"),
            json!(""),
            json!("0001-01-01T00:00:00Z"),
            json!(""),
            json!(""),
            json!(""),
            json!(false)
        ]
    );
    let columns = crd_columns();
    let wide: Vec<&str> = columns
        .iter()
        .filter(|c| c.priority == 1)
        .map(|c| c.name)
        .collect();
    assert_eq!(wide, ["Group", "Kind", "ShortNames", "Established"]);
    assert_eq!((columns[3].name, columns[3].kind), ("Created At", "date"));
}
