//! Admission webhook details end to end: webhook configurations defaulted
//! and validated as upstream, and webhooks never consulted about the
//! objects that configure admission, so that a broken webhook can be
//! removed.

use crate::harness::TestServer;

/// A ValidatingWebhookConfiguration with one webhook whose fields are
/// `body` (YAML lines indented for the webhook's map).
fn config(name: &str, body: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: {name}}}\nwebhooks:\n- {body}"
    )
}

/// A port on which nothing listens.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(1)
}

fn create_fails(s: &TestServer, yaml: &str) -> String {
    let out = s.kubectl_stdin(&["create", "-f", "-"], yaml);
    assert!(!out.status.success(), "created: {yaml}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn webhook_configurations_are_defaulted_and_validated(s: &TestServer) {
    let valid = "name: check.example.com\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  clientConfig:\n    service: {name: hook, namespace: default}\n  rules:\n  - {operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [pods]}\n";
    s.apply_yaml(&config("defaults", valid));
    let out = s.ok(&[
        "get",
        "validatingwebhookconfiguration",
        "defaults",
        "-o",
        "jsonpath={.webhooks[0].failurePolicy} {.webhooks[0].matchPolicy} {.webhooks[0].timeoutSeconds} {.webhooks[0].rules[0].scope} {.webhooks[0].clientConfig.service.port}",
    ]);
    assert_eq!(out, "Fail Equivalent 10 * 443");

    let err = create_fails(
        s,
        &config(
            "bad-name",
            "name: check\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  clientConfig: {url: \"https://h.example.com/\"}\n",
        ),
    );
    assert!(
        err.contains("webhooks[0].name: Invalid value: \"check\": should be a domain with at least three segments separated by dots"),
        "{err}"
    );
    let err = create_fails(
        s,
        &config(
            "missing",
            "name: check.example.com\n  timeoutSeconds: 31\n  clientConfig: {url: \"http://h.example.com/#x\"}\n",
        ),
    );
    for expected in [
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        "webhooks[0].clientConfig.url: Invalid value: \"x\": fragments are not permitted in the URL",
        "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
    ] {
        assert!(err.contains(expected), "{expected}\nin: {err}");
    }
    let twice = format!("{}- {valid}", config("twice", valid));
    let err = create_fails(s, &twice);
    assert!(
        err.contains("webhooks[1].name: Duplicate value: \"check.example.com\""),
        "{err}"
    );
}

fn webhooks_are_never_called_for_admission_configuration(s: &TestServer) {
    let port = closed_port();
    let broken = format!(
        "name: everything.test.example.com\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  timeoutSeconds: 2\n  clientConfig: {{url: \"https://127.0.0.1:{port}/\"}}\n  rules:\n  - {{operations: [\"*\"], apiGroups: [\"*\"], apiVersions: [\"*\"], resources: [\"*/*\"]}}\n"
    );
    s.apply_yaml(&config("broken", &broken));
    let err = s.fails(&["create", "configmap", "refused"]);
    assert!(
        err.contains("Internal error occurred: failed calling webhook \"everything.test.example.com\": failed to call webhook: Post \"https://127.0.0.1:"),
        "{err}"
    );
    // The broken webhook does not guard its own configuration.
    s.ok(&[
        "label",
        "validatingwebhookconfiguration",
        "broken",
        "fixed=soon",
    ]);
    s.ok(&["delete", "validatingwebhookconfiguration", "broken"]);
    s.ok(&["create", "configmap", "accepted"]);
}

crate::harness::on_both_backends!(
    webhook_configurations_are_defaulted_and_validated,
    webhooks_are_never_called_for_admission_configuration
);
