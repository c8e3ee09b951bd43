//! Update-time validation of built-in types through kubectl: allowed pod
//! changes go through, and changes to fixed fields (a pod's spec, a
//! Deployment's selector, an immutable ConfigMap) are refused with
//! upstream's messages.

use serde_json::json;

use crate::harness::TestServer;
use crate::support::http::request;

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
        err.contains("The Deployment \"d\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"a\",\"v\":\"b\"}}: field is immutable"),
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

/// A merge patch of `resource/name` that must go through.
fn patched(s: &TestServer, resource: &str, name: &str, patch: &str) -> String {
    s.ok(&["patch", resource, name, "--type=merge", "-p", patch])
}

/// A merge patch that must be refused; kubectl's error output.
fn refused(s: &TestServer, resource: &str, name: &str, patch: &str) -> String {
    s.fails(&["patch", resource, name, "--type=merge", "-p", patch])
}

const VOLUME_ATTACHMENT: &str = "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va}\nspec:\n  attacher: csi.example.com\n  nodeName: n1\n  source: {persistentVolumeName: pv-1}\n";

const EVENT_V1: &str = "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: ev, namespace: default}\neventTime: \"2024-01-01T00:00:00.000000Z\"\nreason: Started\nnote: started\ntype: Normal\naction: Start\nreportingController: example.com/c\nreportingInstance: i\nregarding: {kind: Pod, namespace: default, name: p}\n";

/// A change to a VolumeAttachment's spec (a beta declarative rule in 1.37)
/// answers 422 with upstream's Status: reason Invalid, one cause with the
/// value shown as `null`, through kubectl and over raw HTTPS.
#[test]
fn volume_attachment_spec_is_immutable() {
    let s = TestServer::start();
    s.apply_yaml(VOLUME_ATTACHMENT);
    let stored = s.ok(&["get", "volumeattachment", "va", "-o", "json"]);
    let moved = stored.replace("\"nodeName\": \"n1\"", "\"nodeName\": \"n2\"");
    assert_ne!(stored, moved);
    let err = String::from_utf8_lossy(&s.kubectl_stdin(&["replace", "-f", "-"], &moved).stderr)
        .into_owned();
    assert!(
        err.contains(
            r#"The VolumeAttachment "va" is invalid: spec: Invalid value: null: field is immutable"#
        ),
        "{err}"
    );
    let a = request(
        &s,
        "PUT",
        "/apis/storage.k8s.io/v1/volumeattachments/va",
        &["Content-Type: application/json"],
        Some(&moved),
    );
    assert_eq!(a.code, 422, "{}", a.body);
    assert_eq!(a.body["reason"], "Invalid", "{}", a.body);
    assert_eq!(
        a.body["details"],
        json!({"name": "va", "group": "storage.k8s.io", "kind": "VolumeAttachment",
            "causes": [{"reason": "FieldValueInvalid",
                "message": "Invalid value: null: field is immutable", "field": "spec"}]})
    );
    // Its status may still change, and its labels.
    s.ok(&["label", "volumeattachment", "va", "a=b"]);
}

#[test]
fn node_pod_cidr_and_provider_id_are_set_once() {
    let s = TestServer::start();
    s.apply_yaml("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {}\n");
    let set = r#"{"spec":{"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"],"providerID":"aws:///i-1"}}"#;
    patched(&s, "node", "n1", set);
    s.ok(&["taint", "node", "n1", "k=v:NoSchedule"]);
    let err = refused(&s, "node", "n1", r#"{"spec":{"providerID":"aws:///i-2"}}"#);
    assert!(
        err.contains(r#"The Node "n1" is invalid: spec.providerID: Forbidden: node updates may not change providerID except from "" to valid"#),
        "{err}"
    );
    let err = refused(
        &s,
        "node",
        "n1",
        r#"{"spec":{"podCIDR":"10.244.2.0/24","podCIDRs":["10.244.2.0/24"]}}"#,
    );
    assert!(
        err.contains(r#"spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid"#),
        "{err}"
    );
}

#[test]
fn service_cidr_may_only_gain_a_second_family() {
    let s = TestServer::start();
    s.apply_yaml("apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec: {cidrs: [10.100.0.0/24]}\n");
    patched(
        &s,
        "servicecidr",
        "extra",
        r#"{"spec":{"cidrs":["10.100.0.0/24","fd00:100::/112"]}}"#,
    );
    let err = refused(
        &s,
        "servicecidr",
        "extra",
        r#"{"spec":{"cidrs":["10.101.0.0/24","fd00:100::/112"]}}"#,
    );
    assert!(
        err.contains(r#"The ServiceCIDR "extra" is invalid: spec.cidrs[0]: Invalid value: "10.101.0.0/24": field is immutable"#),
        "{err}"
    );
}

/// Through `events.k8s.io/v1` an Event's fields are fixed and reported by
/// their core paths; through core/v1 the same change goes through.
#[test]
fn events_v1_fields_are_fixed_but_core_ones_are_not() {
    let s = TestServer::start();
    s.apply_yaml(EVENT_V1);
    let err = refused(&s, "events.v1.events.k8s.io", "ev", r#"{"note":"changed"}"#);
    assert!(
        err.contains(
            r#"The Event "ev" is invalid: message: Invalid value: "changed": field is immutable"#
        ),
        "{err}"
    );
    patched(
        &s,
        "events.v1.events.k8s.io",
        "ev",
        r#"{"series":{"count":2,"lastObservedTime":"2024-01-01T00:01:00.000000Z"}}"#,
    );
    patched(&s, "events.v1.", "ev", r#"{"message":"changed"}"#);
}
