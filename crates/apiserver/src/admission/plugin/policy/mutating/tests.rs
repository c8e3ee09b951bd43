//! Mutations evaluated and applied to real objects with the built-in
//! schemas: apply configurations, JSON patches, parameters, match
//! conditions, reinvocation and the failure policy.

use std::sync::Arc;

use crate::admission::RequestContext;
use crate::authentication::user::UserInfo;
use crate::registry::ResourceInfo;

use crate::admission::plugin::webhook::versioned::Target;
use serde_json::json;

use super::*;

/// These tests mutate built-in pods only.
struct NoCustomTypes;

#[async_trait]
impl CustomTypes for NoCustomTypes {
    async fn types(&self, _stores: &Stores, _a: &Attributes) -> Option<Types> {
        None
    }
}

fn pod_attributes(object: Value) -> Attributes {
    let info = ResourceInfo {
        has_status: true,
        ..ResourceInfo::testing("", "Pod")
    };
    let request = RequestContext::new(Arc::new(UserInfo::anonymous()));
    Attributes::new(
        &info,
        Operation::Create,
        Some(object),
        None,
        "",
        Some("default"),
        "",
        false,
        request,
    )
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [
            {"name": "main", "image": "nginx"},
            {"name": "sidecar", "image": "envoy"}
        ]}
    })
}

fn policy(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn binding(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"policyName": name}})
}

fn apply_configuration(expression: &str) -> Value {
    json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}})
}

fn json_patch(expression: &str) -> Value {
    json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expression}})
}

/// Runs the policies (each with its own binding and optional parameter)
/// on a pod; returns the pod as mutated and the admission decision.
fn run(policies: &[(Value, Option<Value>)], object: Value) -> (Value, Result<(), ApiError>) {
    let plugin = MutatingAdmissionPolicy::new(Stores::default(), Arc::new(NoCustomTypes));
    let bindings: Vec<Value> = policies.iter().map(|(p, _)| binding(name(p))).collect();
    let mut a = pod_attributes(object);
    let invocations: Vec<Invocation<'_>> = policies
        .iter()
        .zip(&bindings)
        .map(|((policy, param), binding)| Invocation {
            policy,
            binding,
            param: param.clone().map(|p| Arc::new(p.into())),
            target: Target::of_request(&a),
        })
        .collect();
    let types = Types::builtin("", "v1", "Pod", None);
    let request = generic::request(&a, &Target::of_request(&a));
    let cx = Context {
        request: &request,
        namespace: None,
        types: &types,
    };
    let mut errors = Vec::new();
    let mut sink = |p: &Value, e| errors.push((fails_closed(p), e));
    plugin.run_all(&invocations, &mut a, &cx, &mut sink);
    // The chain's second pass, when a change asked for it.
    if a.reinvocation.should_reinvoke() {
        a.reinvocation.set_is_reinvoke();
        plugin.run_all(&invocations, &mut a, &cx, &mut sink);
    }
    let decision = decide(&a, errors);
    (a.object.unwrap_or_default(), decision)
}

#[test]
fn apply_configuration_merges_a_label_and_a_container_by_name() {
    let spec = json!({"mutations": [
        apply_configuration("Object{metadata: Object.metadata{labels: {'env': 'prod'}}}"),
        apply_configuration(
            "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'sidecar', imagePullPolicy: 'Always'}]}}",
        ),
    ]});
    let (pod, decision) = run(&[(policy("p", spec), None)], pod());
    assert_eq!(decision, Ok(()));
    assert_eq!(
        pod["metadata"]["labels"],
        json!({"app": "web", "env": "prod"})
    );
    assert_eq!(
        pod["spec"]["containers"],
        json!([
            {"name": "main", "image": "nginx"},
            {"name": "sidecar", "image": "envoy", "imagePullPolicy": "Always"}
        ])
    );
}

#[test]
fn apply_configuration_refuses_atomic_lists() {
    let spec = json!({"mutations": [apply_configuration(
        "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'main', args: ['-v']}]}}"
    )]});
    let (pod_after, decision) = run(&[(policy("p", spec), None)], pod());
    assert_eq!(pod_after, pod());
    let err = decision.err().map(|e| (e.code, e.reason, e.message));
    assert_eq!(
        err,
        Some((
            403,
            StatusReason::Invalid,
            "policy 'p' with binding 'p' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.containers[0].args".to_owned()
        ))
    );
}

#[test]
fn object_literals_must_be_named_by_their_field_path() {
    let spec = json!({"mutations": [apply_configuration(
        "Object{metadata: Object.spec{labels: {'a': 'b'}}}"
    )]});
    let (unchanged, decision) = run(&[(policy("p", spec), None)], pod());
    assert_eq!(unchanged, pod());
    assert_eq!(
        decision.err().map(|e| e.message),
        Some(
            "policy 'p' with binding 'p' denied request: type mismatch: unexpected type name \
             \"Object.spec\", expected \"Object.metadata\", which matches field name path from \
             root Object type"
                .to_owned()
        )
    );
}

#[test]
fn json_patch_adds_and_replaces() {
    let spec = json!({"mutations": [json_patch(
        "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/owner'), value: 'team-a'},
          JSONPatch{op: 'replace', path: '/spec/containers/0/image', value: 'nginx:1.27'}]"
    )]});
    let (pod, decision) = run(&[(policy("p", spec), None)], pod());
    assert_eq!(decision, Ok(()));
    assert_eq!(pod["metadata"]["labels"]["example.com/owner"], "team-a");
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.27");
    // A failed test leaves the object as it was; nothing is refused.
    let guarded = json!({"mutations": [json_patch(
        "[JSONPatch{op: 'test', path: '/metadata/name', value: 'other'},
          JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]"
    )]});
    let (unchanged, decision) = run(&[(policy("p", guarded), None)], self::pod());
    assert_eq!((unchanged, decision), (self::pod(), Ok(())));
}

#[test]
fn params_and_variables_feed_the_mutation() {
    let spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "variables": [{"name": "tier", "expression": "params.data.tier"}],
        "mutations": [apply_configuration(
            "Object{metadata: Object.metadata{labels: {'tier': variables.tier}}}"
        )]
    });
    let param = json!({"metadata": {"name": "cfg"}, "data": {"tier": "gold"}});
    let (pod, decision) = run(&[(policy("p", spec), Some(param))], pod());
    assert_eq!(decision, Ok(()));
    assert_eq!(pod["metadata"]["labels"]["tier"], "gold");
}

#[test]
fn match_conditions_gate_mutations() {
    let spec = |condition: &str| {
        json!({
            "matchConditions": [{"name": "only-web", "expression": condition}],
            "mutations": [apply_configuration("Object{metadata: Object.metadata{labels: {'seen': 'yes'}}}")]
        })
    };
    let (skipped, _) = run(
        &[(policy("p", spec("object.metadata.name == 'db'")), None)],
        pod(),
    );
    assert_eq!(skipped, pod());
    let (mutated, _) = run(
        &[(policy("p", spec("object.metadata.name == 'web'")), None)],
        pod(),
    );
    assert_eq!(mutated["metadata"]["labels"]["seen"], "yes");
    let (_, decision) = run(&[(policy("p", spec("object.missing == 1")), None)], pod());
    let message = decision.err().map(|e| e.message).unwrap_or_default();
    assert!(
        message.starts_with("policy 'p' with binding 'p' denied request: expression 'object.missing == 1' resulted in error"),
        "{message}"
    );
}

#[test]
fn failure_policy_decides_on_bad_expressions() {
    let bad = |failure: &str| {
        policy(
            "bad",
            json!({"failurePolicy": failure, "mutations": [apply_configuration("Object{spec: 1 +}")]}),
        )
    };
    let (pod_after, decision) = run(&[(bad("Fail"), None)], pod());
    assert_eq!(pod_after, pod());
    let err = decision.err();
    let message = err.as_ref().map(|e| e.message.as_str()).unwrap_or_default();
    assert!(
        message.starts_with(
            "policy 'bad' with binding 'bad' denied request: compilation failed: ERROR: <input>:1:"
        ),
        "{message}"
    );
    let causes = err.and_then(|e| e.details).map(|d| d.causes.len());
    assert_eq!(causes, Some(1));
    assert_eq!(run(&[(bad("Ignore"), None)], pod()).1, Ok(()));
}

#[test]
fn if_needed_policies_run_again_after_a_later_change() {
    // The first policy copies a label the second one sets.
    let copy = |reinvocation: &str| {
        policy(
            "a-copy",
            json!({"reinvocationPolicy": reinvocation, "mutations": [apply_configuration(
                "has(object.metadata.labels.env) ? Object{metadata: Object.metadata{annotations: {'env': object.metadata.labels.env}}} : Object{}"
            )]}),
        )
    };
    let set = policy(
        "b-set",
        json!({"mutations": [apply_configuration("Object{metadata: Object.metadata{labels: {'env': 'prod'}}}")]}),
    );
    let (once, _) = run(&[(copy("Never"), None), (set.clone(), None)], pod());
    assert_eq!(once["metadata"].get("annotations"), None);
    let (again, _) = run(&[(copy("IfNeeded"), None), (set, None)], pod());
    assert_eq!(again["metadata"]["annotations"], json!({"env": "prod"}));
}

#[test]
fn a_change_by_a_later_plugin_reinvokes_if_needed_policies_in_the_second_pass() {
    let copy = |reinvocation: &str| {
        policy(
            "copy",
            json!({"reinvocationPolicy": reinvocation, "mutations": [apply_configuration(
                "has(object.metadata.labels.env) ? Object{metadata: Object.metadata{annotations: {'env': object.metadata.labels.env}}} : Object{}"
            )]}),
        )
    };
    for (reinvocation, expected) in [("IfNeeded", Some(json!({"env": "prod"}))), ("Never", None)] {
        let policy = copy(reinvocation);
        let binding = binding("copy");
        let mut a = pod_attributes(pod());
        let target = Target::of_request(&a);
        let invocations = [Invocation {
            policy: &policy,
            binding: &binding,
            param: None,
            target: target.clone(),
        }];
        let plugin = MutatingAdmissionPolicy::new(Stores::default(), Arc::new(NoCustomTypes));
        let types = Types::builtin("", "v1", "Pod", None);
        let request = generic::request(&a, &target);
        let cx = Context {
            request: &request,
            namespace: None,
            types: &types,
        };
        let mut errors = Vec::new();
        let mut sink = |p: &Value, e| errors.push((fails_closed(p), e));
        plugin.run_all(&invocations, &mut a, &cx, &mut sink);
        assert!(!a.reinvocation.should_reinvoke());
        // A webhook after the policy sets the label and asks for a second pass.
        if let Some(obj) = a.object.as_mut() {
            obj["metadata"]["labels"]["env"] = json!("prod");
        }
        a.reinvocation.set_should_reinvoke();
        a.reinvocation.set_is_reinvoke();
        plugin.run_all(&invocations, &mut a, &cx, &mut sink);
        let annotations = a
            .object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/annotations"));
        assert_eq!(annotations.cloned(), expected, "{reinvocation}");
        assert!(errors.is_empty());
    }
}
