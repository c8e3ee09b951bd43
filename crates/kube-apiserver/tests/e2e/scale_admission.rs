//! Admission of `scale` writes and reinvocation, end to end: `kubectl
//! scale` is admitted as an update of the `scale` subresource with
//! autoscaling/v1 Scale objects (no PodSecurity warning about the pod
//! template, ValidatingAdmissionPolicies matching `deployments/scale`
//! judge the Scale, a mutating webhook for `deployments/scale` sees and
//! changes it), and a MutatingAdmissionPolicy asking for reinvocation
//! runs again after a later webhook changed the object.

use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{json, Value};

use crate::authentication::https_server;
use crate::harness::TestServer;
use crate::support::kubectl::warnings_of;

fn replicas(s: &TestServer, ns: &str) -> String {
    s.ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        ns,
        "-o",
        "jsonpath={.spec.replicas}",
    ])
}

fn scaling_in_a_restricted_namespace_warns_about_nothing(s: &TestServer) {
    s.ok(&["create", "namespace", "psa"]);
    s.ok(&[
        "label",
        "namespace",
        "psa",
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/warn=restricted",
    ]);
    let created = warnings_of(
        s,
        &["create", "deployment", "web", "-n", "psa", "--image=nginx"],
    );
    assert!(
        created.contains("would violate PodSecurity \"restricted:latest\""),
        "{created}"
    );
    let scaled = warnings_of(
        s,
        &["scale", "deployment", "web", "-n", "psa", "--replicas=3"],
    );
    assert!(!scaled.contains("Warning"), "{scaled}");
    assert_eq!(replicas(s, "psa"), "3");
}

const MAX_REPLICAS: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-scale}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [UPDATE]
      resources: [deployments/scale]
  validations:
  - expression: "object.kind == 'Scale' && object.spec.replicas <= 5"
    message: at most 5 replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-scale-deny}
spec:
  policyName: max-scale
  validationActions: [Deny]
"#;

fn a_policy_on_deployments_scale_judges_the_scale(s: &TestServer) {
    s.ok(&["create", "deployment", "web", "--image=nginx"]);
    s.apply_yaml(MAX_REPLICAS);
    s.ok(&["scale", "deployment", "web", "--replicas=5"]);
    let err = s.fails(&["scale", "deployment", "web", "--replicas=6"]);
    // Upstream's refusal is Invalid (422) with the message as its cause,
    // which kubectl prints after the resource and name.
    assert!(
        err.contains(
            "The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'max-scale' \
             with binding 'max-scale-deny' denied request: at most 5 replicas"
        ),
        "{err}"
    );
    assert_eq!(replicas(s, "default"), "5");
    // A write of the deployment itself is not the subresource's.
    s.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"replicas":7}}"#,
    ]);
    assert_eq!(replicas(s, "default"), "7");
}

/// Answers an AdmissionReview allowing it with `patch` (JSON patch), and
/// keeps every request it got.
fn webhook(patch: Value, seen: Arc<Mutex<Vec<Value>>>) -> https_server::Handler {
    let encoded = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    Arc::new(move |_path: &str, body: &[u8]| {
        let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let request = review["request"].clone();
        seen.lock().map(|mut s| s.push(request.clone())).ok();
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": request["uid"],
                "allowed": true,
                "patchType": "JSONPatch",
                "patch": encoded,
            }
        })
    })
}

/// A MutatingWebhookConfiguration calling the test's server for
/// `resources` in `group`.
fn mutating_hook(name: &str, port: u16, ca: &str, group: &str, resources: &str) -> String {
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {{name: {name}}}\nwebhooks:\n- name: {name}.test.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  clientConfig:\n    url: https://127.0.0.1:{port}/mutate\n    caBundle: {bundle}\n  rules:\n  - operations: [CREATE, UPDATE]\n    apiGroups: [\"{group}\"]\n    apiVersions: [v1]\n    resources: [{resources}]\n"
    )
}

fn a_mutating_webhook_on_deployments_scale_sees_and_changes_the_scale(s: &TestServer) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]);
    let (port, ca, _) = https_server::start(webhook(patch, seen.clone()));
    s.ok(&["create", "deployment", "web", "--image=nginx"]);
    s.apply_yaml(&mutating_hook(
        "scale",
        port,
        &ca,
        "apps",
        "deployments/scale",
    ));
    let out = s.ok(&["scale", "deployment", "web", "--replicas=2"]);
    assert!(out.contains("scaled"), "{out}");
    assert_eq!(replicas(s, "default"), "4");
    let requests = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(requests.len(), 1, "only the scale write: {requests:?}");
    let r = &requests[0];
    assert_eq!(
        r["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(r["subResource"], "scale");
    assert_eq!(r["operation"], "UPDATE");
    assert_eq!(r["object"]["kind"], "Scale");
    assert_eq!(r["object"]["spec"]["replicas"], 2);
    assert_eq!(r["oldObject"]["spec"]["replicas"], 1);
    assert_eq!(r["object"]["status"]["selector"], "app=web");
}

/// A policy copying the `from-webhook` label into an annotation.
fn copying_policy(reinvocation: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {{name: copy}}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [configmaps]
  reinvocationPolicy: {reinvocation}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{{metadata: Object.metadata{{annotations: {{'copied':
        has(object.metadata.labels) && 'from-webhook' in object.metadata.labels
        ? object.metadata.labels['from-webhook'] : 'none'}}}}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {{name: copy-binding}}
spec:
  policyName: copy
"#
    )
}

fn an_if_needed_policy_runs_again_after_a_webhook_changed_the_object(s: &TestServer) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let patch = json!([{"op": "add", "path": "/metadata/labels/from-webhook", "value": "yes"}]);
    let (port, ca, calls) = https_server::start(webhook(patch, seen));
    s.apply_yaml(&mutating_hook("label", port, &ca, "", "configmaps"));
    let copied = |name: &str| {
        s.kubectl_stdin(
            &["create", "-f", "-"],
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, labels: {{app: x}}}}\n"
            ),
        );
        s.ok(&[
            "get",
            "configmap",
            name,
            "-o",
            "jsonpath={.metadata.annotations.copied}/{.metadata.labels.from-webhook}",
        ])
    };
    // The policy runs before the webhook; without reinvocation it never
    // sees the label.
    s.apply_yaml(&copying_policy("Never"));
    assert_eq!(copied("once"), "none/yes");
    s.apply_yaml(&copying_policy("IfNeeded"));
    assert_eq!(copied("twice"), "yes/yes");
    // The webhook (Never) was not called again in the second pass.
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}

crate::harness::on_both_backends!(
    scaling_in_a_restricted_namespace_warns_about_nothing,
    a_policy_on_deployments_scale_judges_the_scale,
    a_mutating_webhook_on_deployments_scale_sees_and_changes_the_scale,
    an_if_needed_policy_runs_again_after_a_webhook_changed_the_object
);
