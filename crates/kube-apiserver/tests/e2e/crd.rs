//! CustomResourceDefinitions end to end with the real kubectl: a CRD with
//! two versions, status and scale subresources, printer columns and
//! selectable fields becomes a served resource; custom resources are
//! created, read, listed, watched, scaled, patched and deleted; deleting the
//! CRD removes its resources and its endpoint. Run on the embedded store and
//! on etcd.

use std::time::Duration;

use storage::{Kv, RangeRequest};
use storage_etcd::testing::EtcdServer;

use crate::harness::TestServer;
use crate::support::crds::crd;
use crate::support::kubectl::stderr;
use crate::support::wait::eventually;

/// How long the server's background work may take here.
const WAIT: Duration = Duration::from_secs(15);

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: &schema
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "!has(self.replicas) || self.replicas <= 10", message: at most 10 replicas}
            properties:
              color: {type: string, default: blue}
              replicas: {type: integer, minimum: 0}
          status:
            type: object
            properties:
              replicas: {type: integer}
    subresources: &subresources
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns: &columns
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    selectableFields: [{jsonPath: .spec.color}]
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema: {openAPIV3Schema: *schema}
    subresources: *subresources
    additionalPrinterColumns: *columns
"#;

const WIDGET: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {color: green, replicas: 1}
"#;

fn establish(s: &TestServer) {
    s.apply_yaml(CRD);
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/widgets.example.com",
    ]);
    let accepted = s.ok(&[
        "get",
        "crd",
        "widgets.example.com",
        "-o",
        "jsonpath={.status.acceptedNames.kind} {.status.storedVersions}",
    ]);
    assert_eq!(accepted, "Widget [\"v1\"]");
}

fn create_read_and_list(s: &TestServer) {
    // Admission runs for custom resources too (NamespaceLifecycle here).
    let out = s.kubectl_stdin(&["create", "-n", "nowhere", "-f", "-"], WIDGET);
    assert!(
        stderr(&out).contains("namespaces \"nowhere\" not found"),
        "{}",
        stderr(&out)
    );
    s.apply_yaml(WIDGET);
    let table = s.ok(&["get", "widgets"]);
    let header = table.lines().next().unwrap_or("");
    assert!(
        header.contains("COLOR") && header.contains("REPLICAS"),
        "{table}"
    );
    assert!(table.contains("w1") && table.contains("green"), "{table}");
    let meta = s.ok(&[
        "get",
        "wd",
        "w1",
        "-o",
        "jsonpath={.metadata.generation} {.kind}",
    ]);
    assert_eq!(meta, "1 Widget");
    let selected = s.ok(&[
        "get",
        "widgets",
        "--field-selector=spec.color=green",
        "-o",
        "name",
    ]);
    assert_eq!(selected.trim(), "widget.example.com/w1");
    let none = s.ok(&[
        "get",
        "widgets",
        "--field-selector=spec.color=red",
        "-o",
        "name",
    ]);
    assert_eq!(none.trim(), "");
    let bad = s.fails(&["get", "widgets", "--field-selector=spec.size=1"]);
    assert!(bad.contains("field label not supported"), "{bad}");
    let resources = s.ok(&["api-resources", "--api-group=example.com"]);
    assert!(
        resources.contains("widgets") && resources.contains("wd") && resources.contains("Widget"),
        "{resources}"
    );
    let explain = s.ok(&["explain", "widgets.spec"]);
    assert!(
        explain.contains("KIND:") && explain.contains("Widget") && explain.contains("replicas"),
        "{explain}"
    );
    let watch = s.ok(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/widgets?watch=1&timeoutSeconds=1",
    ]);
    assert!(
        watch.contains("\"type\":\"ADDED\"") && watch.contains("\"w1\""),
        "{watch}"
    );
}

fn schema(s: &TestServer) {
    let widget = |spec: &str| {
        format!("apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w2}}\nspec: {spec}\n")
    };
    let out = s.kubectl_stdin(&["create", "-f", "-"], &widget("{replicas: -1}"));
    let err = stderr(&out);
    assert!(
        err.contains("spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"),
        "{err}"
    );
    let out = s.kubectl_stdin(&["create", "-f", "-"], &widget("{replicas: 11}"));
    assert!(
        stderr(&out).contains("at most 10 replicas"),
        "{}",
        stderr(&out)
    );
    let out = s.kubectl_stdin(
        &["create", "--validate=strict", "-f", "-"],
        &widget("{replicas: 1, bogus: 1}"),
    );
    assert!(
        stderr(&out).contains("unknown field \"spec.bogus\""),
        "{}",
        stderr(&out)
    );
    let out = s.kubectl_stdin(
        &["create", "--validate=false", "-f", "-"],
        &widget("{replicas: 1, bogus: 1}"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stored = s.ok(&["get", "widget", "w2", "-o", "jsonpath={.spec}"]);
    assert_eq!(stored, r#"{"color":"blue","replicas":1}"#);
    s.ok(&["delete", "widget", "w2"]);
    let out = s.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3, finalizers: [hold.example.com]}\n",
    );
    assert!(
        stderr(&out).contains("Warning: metadata.finalizers: \"hold.example.com\": prefer a domain-qualified finalizer name"),
        "{}",
        stderr(&out)
    );
    s.ok(&[
        "patch",
        "widget",
        "w3",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    s.ok(&["delete", "widget", "w3"]);
}

fn subresources_and_patches(s: &TestServer) {
    s.ok(&["scale", "widget", "w1", "--replicas=4"]);
    let spec = s.ok(&[
        "get",
        "widget",
        "w1",
        "-o",
        "jsonpath={.spec.replicas} {.metadata.generation}",
    ]);
    assert_eq!(spec, "4 2");
    s.ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":3},"spec":{"color":"ignored"}}"#,
    ]);
    let after = s.ok(&[
        "get",
        "widget",
        "w1",
        "-o",
        "jsonpath={.status.replicas} {.spec.color} {.metadata.generation}",
    ]);
    assert_eq!(after, "3 green 2");
    let scale = s.ok(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
    ]);
    assert!(
        scale.contains("\"replicas\":4") && scale.contains("\"replicas\":3"),
        "{scale}"
    );
    s.ok(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"color":"red"}}"#,
    ]);
    s.ok(&[
        "patch",
        "widget",
        "w1",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":2}]"#,
    ]);
    let patched = s.ok(&[
        "get",
        "widget",
        "w1",
        "-o",
        "jsonpath={.spec.color} {.spec.replicas}",
    ]);
    assert_eq!(patched, "red 2");
    let strategic = s.fails(&["patch", "widget", "w1", "-p", r#"{"spec":{"color":"x"}}"#]);
    assert!(
        strategic.contains("unknown format")
            || strategic.contains("415")
            || strategic.contains("not supported"),
        "{strategic}"
    );
}

fn versions(s: &TestServer) {
    let out = s.kubectl(&[
        "get",
        "widgets.v1beta1.example.com",
        "w1",
        "-o",
        "jsonpath={.apiVersion}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "example.com/v1beta1");
    assert!(
        stderr(&out)
            .contains("example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"),
        "{}",
        stderr(&out)
    );
    let stored = s.ok(&[
        "get",
        "widgets.v1.example.com",
        "w1",
        "-o",
        "jsonpath={.apiVersion}",
    ]);
    assert_eq!(stored, "example.com/v1");
    let group = s.ok(&["get", "--raw", "/apis/example.com"]);
    assert!(
        group.contains("\"preferredVersion\":{\"groupVersion\":\"example.com/v1\""),
        "{group}"
    );
    eventually("the CRD's APIService", WAIT, || {
        s.kubectl(&["get", "apiservice", "v1beta1.example.com"])
            .status
            .success()
    });
}

/// A CRD whose kind another CRD of the group has accepted is not served.
fn name_conflict(s: &TestServer) {
    s.apply_yaml(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gizmos.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: gizmos, singular: gizmo, kind: Widget, listKind: GizmoList}\n  versions:\n  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}\n",
    );
    let query = "jsonpath={.status.conditions[?(@.type==\"NamesAccepted\")].status} {.status.conditions[?(@.type==\"NamesAccepted\")].reason} {.status.conditions[?(@.type==\"NamesAccepted\")].message}";
    eventually("the naming conflict", WAIT, || {
        s.ok(&["get", "crd", "gizmos.example.com", "-o", query])
            == "False KindConflict \"Widget\" is already in use"
    });
    let out = s.kubectl(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/gizmos",
    ]);
    assert!(!out.status.success(), "a conflicting CRD is not served");
    s.ok(&["delete", "crd", "gizmos.example.com"]);
}

/// A version no longer served disappears; the others stay.
fn unserve_version(s: &TestServer) {
    s.ok(&[
        "patch",
        "crd",
        "widgets.example.com",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/versions/1/served","value":false}]"#,
    ]);
    eventually("v1beta1 to go", WAIT, || {
        let out = s.kubectl(&["get", "--raw", "/apis/example.com/v1beta1"]);
        !out.status.success() && stderr(&out).contains("NotFound")
    });
    s.ok(&["get", "widget", "w1"]);
}

/// A default added to the schema later shows on stored objects when read.
fn defaults_on_read(s: &TestServer) {
    s.ok(&[
        "patch",
        "crd",
        "widgets.example.com",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/shape","value":{"type":"string","default":"round"}}]"#,
    ]);
    eventually("the new default on read", WAIT, || {
        s.ok(&["get", "widget", "w1", "-o", "jsonpath={.spec.shape}"]) == "round"
    });
}

fn delete_crd(s: &TestServer) {
    s.ok(&["delete", "crd", "widgets.example.com", "--timeout=30s"]);
    eventually("the endpoint to go", WAIT, || {
        let out = s.kubectl(&[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets",
        ]);
        !out.status.success() && stderr(&out).contains("NotFound")
    });
    eventually("the APIService to go", WAIT, || {
        !s.kubectl(&["get", "apiservice", "v1.example.com"])
            .status
            .success()
    });
    // A new CRD of the same name starts empty: the resources went with the old one.
    establish(s);
    eventually("an empty list", WAIT, || {
        let out = s.kubectl(&["get", "widgets", "-o", "name"]);
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim().is_empty()
    });
}

fn scenario(s: &TestServer) {
    establish(s);
    create_read_and_list(s);
    schema(s);
    subresources_and_patches(s);
    versions(s);
    name_conflict(s);
    unserve_version(s);
    defaults_on_read(s);
    delete_crd(s);
}

#[test]
fn custom_resources_on_the_embedded_store() {
    let mut s = TestServer::start();
    scenario(&s);
    // Served again after a restart, from the stored CRD alone.
    s.apply_yaml(WIDGET);
    s.restart();
    assert_eq!(
        s.ok(&["get", "widget", "w1", "-o", "jsonpath={.spec.color}"]),
        "green"
    );
}

#[test]
fn custom_resources_on_etcd() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let etcd = rt.block_on(EtcdServer::start()).expect("etcd starts");
    let servers = format!("--etcd-servers={}", etcd.client_url());
    let s = TestServer::start_with(&[&servers]);
    scenario(&s);
    let ready = s.ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(
        ready.contains("[+]poststarthook/crd-informer-synced ok"),
        "{ready}"
    );
    cluster_scoped(&s);
    s.apply_yaml(WIDGET);
    let kv = rt.block_on(etcd.kv()).expect("etcd client");
    let keys = rt
        .block_on(kv.range(RangeRequest {
            key: "/registry/example.com/".into(),
            range_end: Some(storage::prefix_end("/registry/example.com/")),
            ..Default::default()
        }))
        .expect("range");
    let names: Vec<&str> = keys.kvs.iter().map(|kv| kv.key.as_str()).collect();
    for key in [
        "/registry/example.com/widgets/default/w1",
        "/registry/example.com/planets/earth",
    ] {
        assert!(names.contains(&key), "{key} missing from {names:?}");
    }
    let stored = keys.kvs.iter().find(|kv| kv.key.ends_with("/w1"));
    let json: serde_json::Value =
        serde_json::from_slice(&stored.expect("w1 stored").value).expect("stored as JSON");
    assert_eq!(json["apiVersion"], "example.com/v1");
}

const PLANET_SCHEMA: &str = r#"
        type: object
        properties:
          spec:
            type: object
            properties:
              name: {type: string, format: bogus}
              moons:
                type: integer
                x-kubernetes-validations:
                - rule: self >= oldSelf
                  message: moons are never lost
                  reason: FieldValueForbidden
"#;

/// A cluster-scoped CRD with a transition rule (`oldSelf`).
fn cluster_scoped(s: &TestServer) {
    let applied = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &crd("planets", "Planet", "Cluster", PLANET_SCHEMA),
    );
    assert!(applied.status.success(), "{}", stderr(&applied));
    assert!(
        stderr(&applied).contains("Warning: unrecognized format \"bogus\""),
        "{}",
        stderr(&applied)
    );
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/planets.example.com",
    ]);
    s.apply_yaml(
        "apiVersion: example.com/v1\nkind: Planet\nmetadata: {name: earth}\nspec: {moons: 1}\n",
    );
    let listed = s.ok(&["get", "planets", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(listed, "earth");
    let namespace = s.ok(&[
        "get",
        "planet",
        "earth",
        "-o",
        "jsonpath={.metadata.namespace}",
    ]);
    assert_eq!(namespace, "");
    let err = s.fails(&[
        "patch",
        "planet",
        "earth",
        "--type=merge",
        "-p",
        r#"{"spec":{"moons":0}}"#,
    ]);
    assert!(err.contains("Forbidden: moons are never lost"), "{err}");
    s.ok(&[
        "patch",
        "planet",
        "earth",
        "--type=merge",
        "-p",
        r#"{"spec":{"moons":2}}"#,
    ]);
}
