//! What admission webhook calls leave behind, as upstream records them:
//! audit annotations naming each mutating call (with its patch only in
//! events at Request level or above), the webhooks that failed open, the
//! annotations webhooks return; and the admission series on `/metrics`.

use std::path::Path;

use base64::Engine;
use serde_json::Value;

use crate::admission::start_webhook;
use crate::harness::{Backend, Served};

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Request
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets"]
  - level: None
"#;

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(1)
}

/// A webhook configuration of one webhook for creates of `resource`.
fn hook(kind: &str, name: &str, url: &str, bundle: &str, resource: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nwebhooks:\n- name: {name}.test.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Ignore\n  clientConfig:\n    url: {url}\n    caBundle: {bundle}\n  rules:\n  - operations: [CREATE]\n    apiGroups: [\"\"]\n    apiVersions: [v1]\n    resources: [{resource}]\n"
    )
}

/// The ResponseComplete event of the create of `resource` named `name`.
fn create_event(log: &Path, resource: &str, name: &str) -> Value {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| {
            e["stage"] == "ResponseComplete"
                && e["verb"] == "create"
                && e["objectRef"]["resource"] == resource
                && e["objectRef"]["name"] == name
        })
        .unwrap_or_else(|| panic!("no create {resource}/{name} event in {text}"))
}

/// The value of the first sample of `metric` whose labels include all of
/// `labels`.
fn sample(metrics: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    metrics
        .lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .find(|l| labels.iter().all(|p| l.contains(p)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

fn webhook_calls_are_annotated_and_counted(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let policy = files.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy");
    let log = files.path().join("audit.log");
    let s: Served = backend.start_with(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
    ]);
    let (addr, ca) = start_webhook();
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    let up = |path: &str| format!("https://{addr}{path}");
    let down = format!("https://127.0.0.1:{}/", closed_port());
    let mutating = "MutatingWebhookConfiguration";
    let validating = "ValidatingWebhookConfiguration";
    // Mutating webhooks are numbered across every configuration, in name
    // order: `label` is index 0, `label-secrets` 1, `zz-down` 2.
    s.apply_yaml(&hook(
        mutating,
        "label",
        &up("/mutate"),
        &bundle,
        "configmaps",
    ));
    s.apply_yaml(&hook(mutating, "zz-down", &down, &bundle, "configmaps"));
    s.apply_yaml(&hook(
        validating,
        "refuse",
        &up("/validate"),
        &bundle,
        "configmaps",
    ));
    s.apply_yaml(&hook(
        mutating,
        "label-secrets",
        &up("/mutate"),
        &bundle,
        "secrets",
    ));
    s.apply_yaml(&hook(validating, "lenient", &down, &bundle, "secrets"));
    // A webhook whose match condition leaves `audited` out.
    let conditional = hook(validating, "skip-some", &up("/validate"), &bundle, "configmaps")
        + "  matchConditions:\n  - {name: not-audited, expression: \"object.metadata.name != 'audited'\"}\n";
    s.apply_yaml(&conditional);

    s.ok(&["create", "configmap", "audited"]);
    let event = create_event(&log, "configmaps", "audited");
    let annotations = &event["annotations"];
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_0"],
        r#"{"configuration":"label","webhook":"label.test.example.com","mutated":true}"#,
        "{event:#}"
    );
    assert_eq!(
        annotations["patch.webhook.admission.k8s.io/round_0_index_0"],
        r#"{"configuration":"label","webhook":"label.test.example.com","patch":[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}],"patchType":"JSONPatch"}"#,
        "{event:#}"
    );
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_2"],
        r#"{"configuration":"zz-down","webhook":"zz-down.test.example.com","mutated":false}"#,
        "{event:#}"
    );
    assert_eq!(
        annotations["failed-open.mutation.webhook.admission.k8s.io/round_0_index_2"],
        "zz-down.test.example.com",
        "{event:#}"
    );
    assert!(annotations["patch.webhook.admission.k8s.io/round_0_index_2"].is_null());
    // What the webhook returned, under its name; a key with a second `/`
    // is not a valid annotation key and is dropped.
    assert_eq!(annotations["refuse.test.example.com/verdict"], "allowed");
    assert!(annotations["refuse.test.example.com/bad/key"].is_null());
    // No webhook asked to be reinvoked: there is no second round.
    let second_round = annotations
        .as_object()
        .into_iter()
        .flatten()
        .any(|(k, _)| k.contains("round_1"));
    assert!(!second_round, "{event:#}");

    // At Metadata level the patch, which shows content, is left out.
    s.ok(&["create", "secret", "generic", "quiet"]);
    let event = create_event(&log, "secrets", "quiet");
    let annotations = &event["annotations"];
    assert_eq!(event["level"], "Metadata");
    assert_eq!(
        annotations["mutation.webhook.admission.k8s.io/round_0_index_1"],
        r#"{"configuration":"label-secrets","webhook":"label-secrets.test.example.com","mutated":true}"#,
        "{event:#}"
    );
    assert!(annotations["patch.webhook.admission.k8s.io/round_0_index_1"].is_null());
    // Validating webhooks are numbered among those called.
    assert_eq!(
        annotations["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"],
        "lenient.test.example.com",
        "{event:#}"
    );

    let refused = s.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: refused, labels: {deny: \"1\"}}\n",
    );
    assert!(!refused.status.success());

    let metrics = s.ok(&["get", "--raw", "/metrics"]);
    let count = |metric: &str, labels: &[&str]| sample(&metrics, metric, labels);
    let label = ["name=\"label.test.example.com\"", "type=\"admit\""];
    let allowed = [
        &label[..],
        &["code=\"200\"", "rejected=\"false\"", "operation=\"CREATE\""],
    ]
    .concat();
    assert_eq!(
        count("apiserver_admission_webhook_request_total", &allowed),
        Some(2.0),
        "{metrics}"
    );
    let refuse = ["name=\"refuse.test.example.com\"", "type=\"validating\""];
    let denied = [
        &refuse[..],
        &["error_type=\"no_error\"", "rejection_code=\"403\""],
    ]
    .concat();
    assert_eq!(
        count("apiserver_admission_webhook_rejection_count", &denied),
        Some(1.0),
        "{metrics}"
    );
    let lenient = ["name=\"lenient.test.example.com\"", "type=\"validating\""];
    assert_eq!(
        count("apiserver_admission_webhook_fail_open_count", &lenient),
        Some(1.0),
        "{metrics}"
    );
    let latency = [&refuse[..], &["rejected=\"true\""]].concat();
    assert_eq!(
        count(
            "apiserver_admission_webhook_admission_duration_seconds_count",
            &latency
        ),
        Some(1.0),
        "{metrics}"
    );
    let skipped = [
        "name=\"skip-some.test.example.com\"",
        "kind=\"webhook\"",
        "type=\"validating\"",
    ];
    assert_eq!(
        count(
            "apiserver_admission_match_condition_exclusions_total",
            &skipped
        ),
        Some(1.0),
        "{metrics}"
    );
    assert!(
        count(
            "apiserver_admission_match_condition_evaluation_seconds_count",
            &skipped
        ) >= Some(2.0),
        "{metrics}"
    );
    // The plugins and the admission steps are timed too.
    let plugin = [
        "name=\"ValidatingAdmissionWebhook\"",
        "type=\"validate\"",
        "rejected=\"true\"",
    ];
    assert!(
        count(
            "apiserver_admission_controller_admission_duration_seconds_count",
            &plugin
        ) >= Some(1.0),
        "{metrics}"
    );
    let step = [
        "type=\"admit\"",
        "operation=\"CREATE\"",
        "rejected=\"false\"",
    ];
    assert!(
        count(
            "apiserver_admission_step_admission_duration_seconds_count",
            &step
        ) >= Some(3.0),
        "{metrics}"
    );
    for header in [
        "# TYPE apiserver_admission_webhook_rejection_count counter",
        "# TYPE apiserver_admission_webhook_fail_open_count counter",
        "# TYPE apiserver_admission_webhook_request_total counter",
    ] {
        assert!(metrics.contains(header), "{header} missing");
    }
}

crate::harness::on_both_backends!(backend: webhook_calls_are_annotated_and_counted);
