use serde_json::json;

use super::*;

fn messages(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn flow_schema(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn good_rule() -> Value {
    json!({"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
            "namespaces": ["*"], "clusterScope": true}],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/*"]}]})
}

#[test]
fn good_flow_schemas_pass() {
    let spec = json!({"matchingPrecedence": 500, "priorityLevelConfiguration": {"name": "workload-low"},
        "distinguisherMethod": {"type": "ByUser"}, "rules": [good_rule(),
        {"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": "*", "namespace": "kube-system"}}],
         "resourceRules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"],
            "namespaces": ["default"]}]}]});
    assert_eq!(
        messages(validate_flow_schema(&flow_schema("fs", spec))),
        Vec::<String>::new()
    );
    let exempt = json!({"matchingPrecedence": 1, "priorityLevelConfiguration": {"name": "exempt"}});
    assert_eq!(
        messages(validate_flow_schema(&flow_schema("exempt", exempt))),
        Vec::<String>::new()
    );
}

#[test]
fn flow_schema_spec_rules() {
    let spec = json!({"matchingPrecedence": 1, "distinguisherMethod": {"type": "ByGroup"},
        "rules": [{"resourceRules": [], "nonResourceRules": []},
        {"subjects": [{"kind": "User", "group": {"name": "g"}}, {"kind": "ServiceAccount",
            "serviceAccount": {"name": "", "namespace": "Bad_NS"}}, {"kind": "Robot"}],
         "resourceRules": [{"verbs": ["get", "*"], "apiGroups": ["*", "apps"], "resources": [],
            "namespaces": []}, {"verbs": ["fly"], "apiGroups": [""], "resources": ["pods"],
            "namespaces": ["Bad"]}],
         "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["healthz", "/a b", "//x", "/a*"]}]}]});
    let errs = messages(validate_flow_schema(&flow_schema("fs", spec)));
    let want = [
        "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
        "spec.distinguisherMethod.type: Unsupported value: {\"Type\":\"ByGroup\"}: supported values: \"ByNamespace\", \"ByUser\"",
        "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
        "spec.rules[0].subjects: Required value: subjects must contain at least one value",
        "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
        "spec.rules[1].subjects[0].user: Required value: user is required when subject kind is 'User'",
        "spec.rules[1].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'",
        "spec.rules[1].subjects[1].serviceAccount.name: Required value",
    ];
    assert_eq!(errs[..want.len()], want);
    let rest = &errs[want.len()..];
    assert!(rest[0].starts_with("spec.rules[1].subjects[1].serviceAccount.namespace: Invalid value: \"Bad_NS\": a lowercase RFC 1123 label"), "{rest:?}");
    assert_eq!(
        rest[1..6],
        [
            "spec.rules[1].subjects[2].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
            "spec.rules[1].resourceRules[0].verbs: Invalid value: [\"get\",\"*\"]: if '*' is present, must not specify other verbs",
            "spec.rules[1].resourceRules[0].apiGroups: Invalid value: [\"*\",\"apps\"]: if '*' is present, must not specify other api groups",
            "spec.rules[1].resourceRules[0].resources: Required value: resource rules must supply at least one resource",
            "spec.rules[1].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace",
        ]
    );
    assert_eq!(
        rest[6],
        "spec.rules[1].resourceRules[1].verbs: Unsupported value: [\"fly\"]: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\""
    );
    assert!(rest[7].starts_with("spec.rules[1].resourceRules[1].namespaces[0]: Invalid value: \"Bad\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label"));
    assert_eq!(
        rest[8..],
        [
            "spec.rules[1].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash",
            "spec.rules[1].nonResourceRules[0].nonResourceURLs[1]: Invalid value: \"/a b\": must not contain white-space",
            "spec.rules[1].nonResourceRules[0].nonResourceURLs[2]: Invalid value: \"//x\": must not contain double slash",
            "spec.rules[1].nonResourceRules[0].nonResourceURLs[3]: Invalid value: \"/a*\": wildcard can only do suffix matching",
        ]
    );
}

fn level(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

#[test]
fn priority_levels() {
    let jail = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
        "limitResponse": {"type": "Reject"}}});
    assert_eq!(
        messages(validate_priority_level(&level("jail", jail))),
        Vec::<String>::new()
    );
    let good = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
        "lendablePercent": 0, "limitResponse": {"type": "Queue",
        "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}});
    assert_eq!(
        messages(validate_priority_level(&level("pl", good))),
        Vec::<String>::new()
    );
    let exempt =
        json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}});
    assert_eq!(
        messages(validate_priority_level(&level("exempt", exempt))),
        Vec::<String>::new()
    );

    let bad = json!({"type": "Exempt", "limited": {}, "exempt": {"nominalConcurrencyShares": -1,
        "lendablePercent": 101}});
    assert_eq!(
        messages(validate_priority_level(&level("pl", bad))),
        [
            "spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'",
            "spec.limited: Forbidden: must be nil if the type is not Limited",
            "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
        ]
    );
    let bad = json!({"type": "Limited", "exempt": {}, "limited": {"nominalConcurrencyShares": -1,
        "lendablePercent": -1, "borrowingLimitPercent": -2, "limitResponse": {"type": "Queue",
        "queuing": {"queues": 128, "handSize": 9, "queueLengthLimit": 0}}}});
    assert_eq!(
        messages(validate_priority_level(&level("pl", bad))),
        [
            "spec.exempt: Forbidden: must be nil if the type is Limited",
            "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: 0: must be positive",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60",
            "spec.limited.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
            "spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a non-negative integer",
        ]
    );
    let bad = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
        "limitResponse": {"type": "Reject", "queuing": {}}}});
    assert_eq!(
        messages(validate_priority_level(&level("pl", bad))),
        ["spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"]
    );
    let mut with_status = level("pl", json!({"type": "Sometimes"}));
    with_status["status"] = json!({"conditions": [{"type": "A"}, {"type": "A"}, {"type": ""}]});
    assert_eq!(
        messages(validate_priority_level(&with_status)),
        [
            "spec.type: Unsupported value: \"Sometimes\": supported values: \"Exempt\", \"Limited\"",
            "status.conditions[1].type: Duplicate value: \"A\"",
            "status.conditions[2].type: Required value: must not be empty",
        ]
    );
}
