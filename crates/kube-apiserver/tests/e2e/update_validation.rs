//! Update-time validation of built-in types through kubectl: allowed pod
//! changes go through, and changes to fixed fields (a pod's spec, a
//! Deployment's selector, an immutable ConfigMap) are refused with
//! upstream's messages.

use crate::harness::TestServer;

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: c\n    image: nginx:1.25\n    ports: [{containerPort: 80}]\n";

#[test]
fn pod_images_change_but_ports_do_not() {
    let s = TestServer::start();
    s.apply_yaml(POD);
    s.ok(&["set", "image", "pod/web", "c=nginx:1.26"]);
    let image = s.ok(&[
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.spec.containers[0].image}",
    ]);
    assert_eq!(image, "nginx:1.26");

    let moved = POD
        .replace("nginx:1.25", "nginx:1.26")
        .replace("80}", "8080}");
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &moved);
    assert!(!out.status.success(), "port change applied");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The Pod \"web\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"),
        "{err}"
    );
    // A full replace of the stored object with another port is refused too.
    let stored = s.ok(&["get", "pod", "web", "-o", "yaml"]);
    let replaced = stored.replace("containerPort: 80", "containerPort: 9090");
    assert_ne!(stored, replaced);
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &replaced);
    assert!(!out.status.success(), "port change replaced");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec: Forbidden: pod updates may not change fields other than"),
        "{err}"
    );
    let port = s.ok(&[
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.spec.containers[0].ports[0].containerPort}",
    ]);
    assert_eq!(port, "80");
}

#[test]
fn deployment_selector_is_immutable() {
    let s = TestServer::start();
    s.apply_yaml("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a, v: b}}\n    spec:\n      containers: [{name: c, image: nginx}]\n");
    let out = s.kubectl(&[
        "patch",
        "deployment",
        "d",
        "-v=6",
        "--type=merge",
        "-p",
        r#"{"spec":{"selector":{"matchLabels":{"app":"a","v":"b"}}}}"#,
    ]);
    assert!(!out.status.success(), "selector changed");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("422 Unprocessable Entity"), "{err}");
    assert!(
        err.contains("The Deployment \"d\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"a\", \"v\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"),
        "{err}"
    );
    s.ok(&["scale", "deployment", "d", "--replicas=2"]);
}

#[test]
fn immutable_configmap_cannot_be_edited() {
    let s = TestServer::start();
    s.apply_yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\nimmutable: true\ndata: {a: one}\n",
    );
    let err = s.fails(&[
        "patch",
        "configmap",
        "cm",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"two"}}"#,
    ]);
    assert!(
        err.contains("The ConfigMap \"cm\" is invalid: data: Forbidden: field is immutable when `immutable` is set"),
        "{err}"
    );
    let err = s.fails(&[
        "patch",
        "configmap",
        "cm",
        "--type=merge",
        "-p",
        r#"{"immutable":false}"#,
    ]);
    assert!(
        err.contains("immutable: Forbidden: field is immutable when `immutable` is set"),
        "{err}"
    );
    s.ok(&["label", "configmap", "cm", "team=x"]);
}
