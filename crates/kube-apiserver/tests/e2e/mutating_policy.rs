//! MutatingAdmissionPolicy end to end: policies and bindings applied with
//! kubectl mutate pods, deployments and config maps created with kubectl
//! (apply configurations and JSON patches), a failing mutation refuses
//! the request unless the policy ignores failures, and malformed policies
//! are refused with upstream's field errors.

use crate::harness::TestServer;
use crate::support::crds::crd;

/// A policy for `resources` in `group` with one mutation.
fn policy(name: &str, group: &str, resources: &str, mutation: &str, extra: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {{name: {name}}}
spec:
  {extra}
  matchConstraints:
    resourceRules:
    - apiGroups: ["{group}"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["{resources}"]
  reinvocationPolicy: Never
  mutations:
{mutation}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {{name: {name}-binding}}
spec:
  policyName: {name}
"#
    )
}

fn apply_configuration(expression: &str) -> String {
    format!(
        "  - patchType: ApplyConfiguration\n    applyConfiguration:\n      expression: >-\n        {expression}"
    )
}

fn json_patch(expression: &str) -> String {
    format!("  - patchType: JSONPatch\n    jsonPatch:\n      expression: >-\n        {expression}")
}

fn jsonpath(s: &TestServer, args: &[&str], path: &str) -> String {
    let mut all = args.to_vec();
    let output = format!("jsonpath={path}");
    all.extend(["-o", &output]);
    s.ok(&all)
}

fn apply_configurations_label_pods_and_set_pull_policies(s: &TestServer) {
    s.apply_yaml(&policy(
        "pull-always",
        "",
        "pods",
        &apply_configuration(
            "Object{metadata: Object.metadata{labels: {'mutated': 'true'}}, \
             spec: Object.spec{containers: object.spec.containers.map(c, \
             Object.spec.containers{name: c.name, imagePullPolicy: 'Always'})}}",
        ),
        "",
    ));
    s.ok(&["run", "web", "--image=nginx:1.27", "--labels=app=web"]);
    let pod = ["get", "pod", "web"];
    assert_eq!(jsonpath(s, &pod, "{.metadata.labels.mutated}"), "true");
    assert_eq!(jsonpath(s, &pod, "{.metadata.labels.app}"), "web");
    assert_eq!(
        jsonpath(s, &pod, "{.spec.containers[0].imagePullPolicy}"),
        "Always"
    );
    // The container keeps its other fields: the list merges by name.
    assert_eq!(
        jsonpath(s, &pod, "{.spec.containers[0].image}"),
        "nginx:1.27"
    );
}

fn deployments_get_a_template_label_from_a_param(s: &TestServer) {
    s.ok(&[
        "create",
        "configmap",
        "team",
        "--from-literal=owner=payments",
    ]);
    s.apply_yaml(&policy(
        "owner",
        "apps",
        "deployments",
        &apply_configuration(
            "Object{spec: Object.spec{template: Object.spec.template{metadata: \
             Object.spec.template.metadata{labels: {'owner': params.data.owner}}}}}",
        ),
        "paramKind: {apiVersion: v1, kind: ConfigMap}",
    ));
    s.apply_yaml(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: owner-binding}
spec:
  policyName: owner
  paramRef: {name: team, namespace: default, parameterNotFoundAction: Deny}
"#,
    );
    s.ok(&["create", "deployment", "api", "--image=nginx"]);
    assert_eq!(
        jsonpath(
            s,
            &["get", "deployment", "api"],
            "{.spec.template.metadata.labels.owner}"
        ),
        "payments"
    );
}

fn json_patches_add_labels_and_failures_follow_the_failure_policy(s: &TestServer) {
    s.apply_yaml(&policy(
        "stamp",
        "",
        "configmaps",
        &json_patch(
            "[JSONPatch{op: 'add', path: '/metadata/labels', value: {}}, \
             JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/stamped'), \
             value: object.metadata.name}]",
        ),
        "",
    ));
    s.ok(&["create", "configmap", "settings", "--from-literal=a=b"]);
    assert_eq!(
        jsonpath(
            s,
            &["get", "configmap", "settings"],
            "{.metadata.labels.example\\.com/stamped}"
        ),
        "settings"
    );

    // A mutation that fails at runtime refuses the request (Fail is the
    // default) with upstream's message...
    s.apply_yaml(&policy(
        "broken",
        "",
        "secrets",
        &apply_configuration("Object{metadata: Object.metadata{labels: {'x': object.missing}}}"),
        "",
    ));
    let err = s.fails(&["create", "secret", "generic", "token", "--from-literal=a=b"]);
    assert!(
        err.contains(
            "policy 'broken' with binding 'broken-binding' denied request: \
             expression 'Object{metadata: Object.metadata{labels: {'x': object.missing}}}' resulted in error"
        ),
        "{err}"
    );
    // ...and lets it through unchanged when the policy ignores failures.
    s.apply_yaml(&policy(
        "broken",
        "",
        "secrets",
        &apply_configuration("Object{metadata: Object.metadata{labels: {'x': object.missing}}}"),
        "failurePolicy: Ignore",
    ));
    s.ok(&["create", "secret", "generic", "token", "--from-literal=a=b"]);
    assert_eq!(
        jsonpath(s, &["get", "secret", "token"], "{.metadata.labels}"),
        ""
    );
}

fn invalid_policies_are_refused_with_field_errors(s: &TestServer) {
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: bad}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [DELETE], resources: [pods]}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/x', value: params.y}]"}
"#,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for expected in [
        "The MutatingAdmissionPolicy \"bad\" is invalid",
        "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\"",
        "spec.mutations[0].jsonPatch.expression: Invalid value: \"[JSONPatch{op: 'add', path: '/x', value: params.y}]\": \
         compilation failed: ERROR: <input>:1:42: undeclared reference to 'params'",
        "spec.reinvocationPolicy: Required value",
    ] {
        assert!(err.contains(expected), "{expected}\n{err}");
    }
}

/// Custom resources with a list keyed by name (and an atomic one).
const WIDGET_SCHEMA: &str = r#"
        type: object
        properties:
          spec:
            type: object
            properties:
              tags: {type: array, items: {type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
"#;

fn custom_resources_merge_by_their_schema(s: &TestServer) {
    s.apply_yaml(&crd("widgets", "Widget", "Namespaced", WIDGET_SCHEMA));
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/widgets.example.com",
    ]);
    s.apply_yaml(&policy(
        "metrics-port",
        "example.com",
        "widgets",
        &apply_configuration(
            "Object{spec: Object.spec{ports: [Object.spec.ports{name: 'metrics', port: 9090}]}}",
        ),
        "",
    ));
    s.apply_yaml(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\n\
         spec: {tags: [a], ports: [{name: http, port: 80}]}\n",
    );
    // The list-map keeps the created entry and gains the policy's.
    assert_eq!(
        jsonpath(
            s,
            &["get", "widget", "w1"],
            "{range .spec.ports[*]}{.name}={.port} {end}"
        ),
        "http=80 metrics=9090 "
    );
    // Atomic lists may not be set by an apply configuration.
    s.apply_yaml(&policy(
        "tags",
        "example.com",
        "widgets",
        &apply_configuration("Object{spec: Object.spec{tags: ['b']}}"),
        "",
    ));
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {tags: [a]}\n",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "policy 'tags' with binding 'tags-binding' denied request: error applying patch: \
             invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.tags"
        ),
        "{err}"
    );
}

crate::harness::on_both_backends!(
    apply_configurations_label_pods_and_set_pull_policies,
    deployments_get_a_template_label_from_a_param,
    json_patches_add_labels_and_failures_follow_the_failure_policy,
    invalid_policies_are_refused_with_field_errors,
    custom_resources_merge_by_their_schema
);
