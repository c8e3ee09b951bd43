//! `matchPolicy` of admission webhooks and validating policies: with
//! `Equivalent` (the default) a webhook registered for one version of a
//! resource is also called for writes through its other served versions,
//! sent the object converted to the version its rules name (`kind`,
//! `resource`) beside the version used (`requestKind`, `requestResource`),
//! and its patch reaches the object at the request's version; with
//! `Exact` it is not called. A ValidatingAdmissionPolicy sees such writes
//! the same way.

use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{json, Value};

use crate::authentication::https_server;
use crate::harness::TestServer;
use crate::support::crds::crd;

type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A mutating webhook that records each review's request (by path) and
/// labels the object with the version it was sent.
fn start_webhook() -> (u16, String, Seen) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let (port, ca, _) = https_server::start(Arc::new(move |path: &str, body: &[u8]| {
        let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let request = review["request"].clone();
        if let Ok(mut seen) = record.lock() {
            seen.push((path.to_owned(), request.clone()));
        }
        let sent = request["object"]["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .replace('/', ".");
        let patch = json!([{"op": "add", "path": "/metadata/labels", "value": {"sent-as": sent}}]);
        let encoded = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "response": {"uid": request["uid"], "allowed": true,
                            "patchType": "JSONPatch", "patch": encoded}})
    }));
    (port, ca, seen)
}

/// The `v1` schema, and `v2` beside it.
const SCHEMA: &str = " {type: object, x-kubernetes-preserve-unknown-fields: true}\n  - name: v2\n    served: true\n    storage: false\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n";

fn hook(
    name: &str,
    policy: &str,
    port: u16,
    bundle: &str,
    group: &str,
    version: &str,
    resource: &str,
) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {{name: {name}}}\nwebhooks:\n- name: {name}.test.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  matchPolicy: {policy}\n  clientConfig:\n    url: https://127.0.0.1:{port}/{name}\n    caBundle: {bundle}\n  rules:\n  - operations: [CREATE]\n    apiGroups: [\"{group}\"]\n    apiVersions: [{version}]\n    resources: [{resource}]\n"
    )
}

fn requests_to(seen: &Seen, path: &str) -> Vec<Value> {
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    seen.into_iter()
        .filter(|(p, _)| p.starts_with(path))
        .map(|(_, r)| r)
        .collect()
}

#[test]
fn equivalent_versions_reach_webhooks_converted() {
    let s = TestServer::start();
    let (port, ca, seen) = start_webhook();
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    s.apply_yaml(&crd("widgets", "Widget", "Namespaced", SCHEMA));
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/widgets.example.com",
    ]);
    s.apply_yaml(&hook(
        "equivalent",
        "Equivalent",
        port,
        &bundle,
        "example.com",
        "v1",
        "widgets",
    ));
    s.apply_yaml(&hook(
        "exact",
        "Exact",
        port,
        &bundle,
        "example.com",
        "v1",
        "widgets",
    ));

    let created = s.kubectl_stdin(
        &["create", "-f", "-", "-o", "json"],
        "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w}\n",
    );
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let widget: Value = serde_json::from_slice(&created.stdout).unwrap_or(Value::Null);
    // The webhook saw v1 and its label came back on the v2 object.
    assert_eq!(widget["apiVersion"], "example.com/v2", "{widget}");
    assert_eq!(
        widget["metadata"]["labels"]["sent-as"], "example.com.v1",
        "{widget}"
    );

    let calls = requests_to(&seen, "/equivalent");
    assert_eq!(calls.len(), 1, "{calls:?}");
    let request = &calls[0];
    assert_eq!(
        request["kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "example.com", "version": "v1", "resource": "widgets"})
    );
    assert_eq!(
        request["requestKind"],
        json!({"group": "example.com", "version": "v2", "kind": "Widget"})
    );
    assert_eq!(
        request["requestResource"],
        json!({"group": "example.com", "version": "v2", "resource": "widgets"})
    );
    assert_eq!(request["object"]["apiVersion"], "example.com/v1");
    // An Exact webhook for v1 does not see writes through v2 …
    assert!(requests_to(&seen, "/exact").is_empty());
    // … but does see writes through v1, sent as they were made.
    s.apply_yaml("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\n");
    let exact = requests_to(&seen, "/exact");
    assert_eq!(exact.len(), 1, "{exact:?}");
    assert_eq!(exact[0]["kind"], exact[0]["requestKind"]);

    // Built-in kinds served at two versions are equivalent too.
    s.apply_yaml(&hook(
        "hpa",
        "Equivalent",
        port,
        &bundle,
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
    ));
    s.apply_yaml("apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 3\n");
    let hpa = requests_to(&seen, "/hpa");
    assert_eq!(hpa.len(), 1, "{hpa:?}");
    assert_eq!(hpa[0]["kind"]["version"], "v2");
    assert_eq!(hpa[0]["requestKind"]["version"], "v1");
    assert_eq!(hpa[0]["object"]["apiVersion"], "autoscaling/v2");
    let label = s.ok(&[
        "get",
        "hpa",
        "h",
        "-o",
        "jsonpath={.metadata.labels.sent-as}",
    ]);
    assert_eq!(label, "autoscaling.v2");
}

fn version_policy(name: &str, policy: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: {name}}}\nspec:\n  matchConstraints:\n    matchPolicy: {policy}\n    resourceRules:\n    - {{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [widgets]}}\n  validations:\n  - expression: \"object.metadata.name != 'refused'\"\n    messageExpression: \"'seen as ' + object.apiVersion + ' ' + request.kind.version + ', requested as ' + request.requestKind.version\"\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {{name: {name}}}\nspec: {{policyName: {name}, validationActions: [Deny]}}\n"
    )
}

#[test]
fn validating_policies_see_equivalent_versions_converted() {
    let s = TestServer::start();
    s.apply_yaml(&crd("widgets", "Widget", "Namespaced", SCHEMA));
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/widgets.example.com",
    ]);
    s.apply_yaml(&version_policy("exact", "Exact"));
    let v2 = "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: refused}\n";
    // An Exact policy for v1 lets writes through v2 pass.
    let created = s.kubectl_stdin(&["create", "-f", "-", "--dry-run=server"], v2);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    s.apply_yaml(&version_policy("equivalent", "Equivalent"));
    // Policies take effect once the server has seen them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let out = s.kubectl_stdin(&["create", "-f", "-", "--dry-run=server"], v2);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            assert!(
                err.contains("ValidatingAdmissionPolicy 'equivalent' with binding 'equivalent' denied request: seen as example.com/v1 v1, requested as v2"),
                "{err}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the policy never applied"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
