//! ValidatingAdmissionPolicy end to end: a policy and its binding refuse
//! or warn about Deployments through kubectl, parameters come from a
//! ConfigMap, failurePolicy Ignore lets requests past a broken
//! expression, and the Audit action and audit annotations reach the audit
//! log.

use serde_json::Value;

use crate::harness::{Backend, TestServer};
use crate::support::kubectl::stderr;

fn policy(name: &str, expression: &str, extra: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: {name}}}
spec:
  {extra}
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: "{expression}"
"#
    )
}

fn binding(name: &str, policy: &str, actions: &str, extra: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: {name}}}
spec:
  policyName: {policy}
  validationActions: [{actions}]
  {extra}
"#
    )
}

fn deployment(s: &TestServer, name: &str, replicas: u32) -> std::process::Output {
    s.kubectl(&[
        "create",
        "deployment",
        name,
        "--image=nginx",
        &format!("--replicas={replicas}"),
    ])
}

fn deny_refuses_and_warn_warns(s: &TestServer) {
    s.apply_yaml(&policy("max-replicas", "object.spec.replicas <= 5", ""));
    s.apply_yaml(&binding("max-replicas-deny", "max-replicas", "Deny", ""));
    let out = deployment(s, "big", 6);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' \
             with binding 'max-replicas-deny' denied request: failed expression: object.spec.replicas <= 5"
        ),
        "{err}"
    );
    assert!(deployment(s, "small", 3).status.success());
    // Updates are held to the policy too (those of the scale subresource
    // only by policies matching `deployments/scale`).
    let err = s.fails(&[
        "patch",
        "deployment",
        "small",
        "-p",
        r#"{"spec":{"replicas":7}}"#,
    ]);
    assert!(err.contains("denied request"), "{err}");
    s.ok(&["scale", "deployment", "small", "--replicas=7"]);

    s.ok(&[
        "delete",
        "validatingadmissionpolicybinding",
        "max-replicas-deny",
    ]);
    s.apply_yaml(&binding("max-replicas-warn", "max-replicas", "Warn", ""));
    let out = deployment(s, "warned", 6);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding \
             'max-replicas-warn': failed expression: object.spec.replicas <= 5"
        ),
        "{err}"
    );
}

fn params_come_from_a_config_map(s: &TestServer) {
    s.ok(&["create", "configmap", "limits", "--from-literal=max=2"]);
    let kind = "paramKind: {apiVersion: v1, kind: ConfigMap}";
    s.apply_yaml(&policy(
        "limited",
        "object.spec.replicas <= int(params.data.max)",
        kind,
    ));
    s.apply_yaml(&binding(
        "limited-binding",
        "limited",
        "Deny",
        "paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}",
    ));
    let err = stderr(&deployment(s, "three", 3));
    assert!(
        err.contains(
            "ValidatingAdmissionPolicy 'limited' with binding 'limited-binding' denied request"
        ),
        "{err}"
    );
    assert!(deployment(s, "two", 2).status.success());
    // Without its parameter the binding refuses, as its action says.
    s.ok(&["delete", "configmap", "limits"]);
    let err = stderr(&deployment(s, "one", 1));
    assert!(
        err.contains("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{err}"
    );
}

fn failure_policy_decides_on_broken_expressions(s: &TestServer) {
    s.apply_yaml(&policy(
        "broken",
        "object.spec.nosuchfield > 1",
        "failurePolicy: Ignore",
    ));
    s.apply_yaml(&binding("broken-binding", "broken", "Deny", ""));
    assert!(deployment(s, "passes", 1).status.success());
    s.apply_yaml(&policy(
        "broken",
        "object.spec.nosuchfield > 1",
        "failurePolicy: Fail",
    ));
    let err = stderr(&deployment(s, "refused", 1));
    assert!(
        err.contains(
            "ValidatingAdmissionPolicy 'broken' with binding 'broken-binding' denied request: \
             expression 'object.spec.nosuchfield > 1' resulted in error"
        ),
        "{err}"
    );
}

const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  resources: [{group: apps, resources: [deployments]}]\n- level: None\n";

fn audit_action_and_annotations_reach_the_audit_log(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let policy_file = files.path().join("audit-policy.yaml");
    std::fs::write(&policy_file, AUDIT_POLICY).expect("policy");
    let log = files.path().join("audit.log");
    let s = backend.start_with(&[
        &format!("--audit-policy-file={}", policy_file.display()),
        &format!("--audit-log-path={}", log.display()),
    ]);
    let annotated = policy(
        "audited-replicas",
        "object.spec.replicas <= 2",
        "auditAnnotations:\n  - {key: replicas, valueExpression: \"'replicas: ' + string(object.spec.replicas)\"}\n  - {key: skipped, valueExpression: 'null'}",
    )
    .replace("validations:\n  - expression: \"object.spec.replicas <= 2\"", "validations:\n  - expression: \"true\"\n  - expression: \"object.spec.replicas <= 2\"\n    message: too many");
    s.apply_yaml(&annotated);
    s.apply_yaml(&binding(
        "audited-binding",
        "audited-replicas",
        "Audit, Warn",
        "",
    ));
    let out = deployment(&s, "big", 3);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let event = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["verb"] == "create" && e["objectRef"]["name"] == "big")
        .unwrap_or_else(|| panic!("no create event for big in {text}"));
    let annotations = &event["annotations"];
    assert_eq!(
        annotations["validation.policy.admission.k8s.io/validation_failure"],
        r#"[{"message":"too many","policy":"audited-replicas","binding":"audited-binding","expressionIndex":1,"validationActions":["Audit","Warn"]}]"#,
        "{event:#}"
    );
    assert_eq!(
        annotations["audited-replicas/replicas"], "replicas: 3",
        "{event:#}"
    );
    assert!(
        annotations["audited-replicas/skipped"].is_null(),
        "{event:#}"
    );
}

crate::harness::on_both_backends!(
    deny_refuses_and_warn_warns,
    params_come_from_a_config_map,
    failure_policy_decides_on_broken_expressions;
    backend: audit_action_and_annotations_reach_the_audit_log
);
