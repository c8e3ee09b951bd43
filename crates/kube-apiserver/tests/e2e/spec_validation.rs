//! Spec validation of built-in types through kubectl: invalid pods,
//! deployments and services are refused with upstream's field messages.

use crate::harness::TestServer;

pub(crate) fn refused(s: &TestServer, yaml: &str) -> String {
    let out = s.kubectl_stdin(&["create", "-f", "-"], yaml);
    assert!(!out.status.success(), "created: {yaml}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn invalid_specs_are_refused_with_field_messages() {
    let s = TestServer::start();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n";
    let err = refused(&s, pod);
    assert!(
        err.contains("spec.containers[0].image: Required value"),
        "{err}"
    );

    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: c}}\n    spec:\n      containers: [{name: c, image: nginx}]\n";
    let err = refused(&s, deploy);
    assert!(
        err.contains("is invalid: spec.template.metadata.labels: Invalid value"),
        "{err}"
    );
    assert!(
        err.contains("`selector` does not match template `labels`"),
        "{err}"
    );

    let svc =
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: 70000}]\n";
    let err = refused(&s, svc);
    assert!(
        err.contains(
            "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"
        ),
        "{err}"
    );
}
