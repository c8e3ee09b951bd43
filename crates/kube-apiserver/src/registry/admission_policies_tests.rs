//! Defaults and validation of mutating admission policies and bindings,
//! checked against upstream's field paths and messages.

use serde_json::json;

use super::*;

fn policy() -> Value {
    json!({
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]
            }]},
            "reinvocationPolicy": "Never",
            "mutations": [{
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}
            }]
        }
    })
}

/// The errors of `obj` after defaulting, as `path: body` lines.
fn errors(strategy: &ResourceStrategy, mut obj: Value) -> Vec<String> {
    (strategy.defaults)(&mut obj);
    (strategy.validate)(&obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_complete_policy_is_defaulted_and_valid() {
    let strategy = mutating_policies();
    let mut obj = policy();
    (strategy.defaults)(&mut obj);
    assert_eq!(obj["spec"]["failurePolicy"], "Fail");
    assert_eq!(obj["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(
        obj["spec"]["matchConstraints"]["namespaceSelector"],
        json!({})
    );
    assert_eq!(
        obj["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
        "*"
    );
    assert_eq!(errors(&strategy, policy()), Vec::<String>::new());
}

#[test]
fn required_fields_and_unsupported_values_are_reported() {
    let strategy = mutating_policies();
    let mut obj = policy();
    obj["spec"]["reinvocationPolicy"] = json!("Sometimes");
    obj["spec"]["mutations"] = json!([]);
    obj["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = json!(["DELETE"]);
    let errs = errors(&strategy, obj);
    assert_eq!(
        errs,
        [
            "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\": \
             supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
            "spec.mutations: Required value: mutations must contain at least one item",
            "spec.reinvocationPolicy: Unsupported value: \"Sometimes\": supported values: \
             \"IfNeeded\", \"Never\"",
        ]
    );
    let errs = errors(&strategy, json!({"metadata": {"name": "p"}, "spec": {}}));
    assert!(
        errs.contains(&"spec.matchConstraints: Required value".to_owned()),
        "{errs:?}"
    );
    assert!(
        errs.contains(&"spec.reinvocationPolicy: Required value".to_owned()),
        "{errs:?}"
    );
}

#[test]
fn mutations_must_match_their_patch_type_and_compile() {
    let strategy = mutating_policies();
    let mut obj = policy();
    obj["spec"]["mutations"] = json!([
        {"patchType": "JSONPatch", "applyConfiguration": {"expression": "Object{}"}},
        {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{spec: params.x}"}},
        {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'add', path: '/x', value: 1}]"}},
        {"patchType": "Merge"}
    ]);
    let errs = errors(&strategy, obj);
    assert_eq!(errs.len(), 4, "{errs:?}");
    assert_eq!(
        errs[0],
        "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch"
    );
    assert_eq!(
        errs[1],
        "spec.mutations[0].applyConfiguration: Invalid value: \"{applyConfiguration}\": \
         must not be specified when patchType is JSONPatch"
    );
    // `params` is only declared when the policy has a paramKind.
    assert!(
        errs[2].starts_with(
            "spec.mutations[1].applyConfiguration.expression: Invalid value: \
             \"Object{spec: params.x}\": compilation failed: ERROR: <input>:1:14: undeclared reference to 'params'"
        ),
        "{}",
        errs[2]
    );
    assert_eq!(
        errs[3],
        "spec.mutations[3].patchType: Unsupported value: \"Merge\": supported values: \
         \"ApplyConfiguration\", \"JSONPatch\""
    );
}

#[test]
fn bindings_need_a_policy_and_a_well_formed_param_ref() {
    let strategy = mutating_policy_bindings();
    let errs = errors(
        &strategy,
        json!({"metadata": {"name": "b"}, "spec": {
            "paramRef": {"name": "cfg", "selector": {}},
            "matchResources": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
                "operations": ["*"], "resources": ["*", "pods"]}]}
        }}),
    );
    assert_eq!(
        errs,
        [
            "spec.policyName: Required value",
            "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
            "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
            "spec.paramRef.parameterNotFoundAction: Required value",
            "spec.matchResources.resourceRules[0].resources: Invalid value: [\"*\",\"pods\"]: \
             if '*' is present, must not specify other resources without subresources",
        ]
    );
    let ok = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p",
        "paramRef": {"name": "cfg", "parameterNotFoundAction": "Allow"}}});
    assert_eq!(errors(&strategy, ok), Vec::<String>::new());
}
