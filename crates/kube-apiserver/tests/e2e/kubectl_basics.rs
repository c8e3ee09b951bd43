//! kubectl against the embedded default: discovery, CRUD, selectors,
//! output formats and errors.

use crate::harness::TestServer;

const CONFIGMAP: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  labels: {app: web}
data:
  greeting: hello
"#;

#[test]
fn system_namespaces_and_kubernetes_service_exist() {
    let s = TestServer::start();
    let out = s.ok(&["get", "namespaces", "-o", "name"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(out.contains(&format!("namespace/{ns}")), "{out}");
    }
    let svc = s.ok(&[
        "get",
        "service",
        "kubernetes",
        "-o",
        "jsonpath={.spec.clusterIP} {.spec.ports[0].port}",
    ]);
    assert_eq!(svc, "10.0.0.1 443");
    let ca = s.ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
        "-o",
        "jsonpath={.data.client-ca-file}",
    ]);
    let generated = std::fs::read_to_string(s.dir.path().join("pki/ca.crt")).unwrap_or_default();
    assert_eq!(ca, generated);
    let ready = s.ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(
        ready.contains("[+]poststarthook/start-system-namespaces-controller ok"),
        "{ready}"
    );
    assert!(ready.ends_with("readyz check passed\n"), "{ready}");
    let since = s.ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "kube-apiserver-legacy-service-account-token-tracking",
        "-o",
        "jsonpath={.data.since}",
    ]);
    assert_eq!(since, chrono::Utc::now().format("%Y-%m-%d").to_string());
    assert!(ready.contains("[+]poststarthook/start-legacy-token-tracking-controller ok"));
    // Ready only once every watch cache has its first list (upstream's
    // WatchCacheInitializationPostStartHook, locked on in 1.37).
    assert!(
        ready.contains("[+]poststarthook/storage-readiness ok"),
        "{ready}"
    );
    // The default RBAC policy exists whatever the authorization mode.
    assert!(
        ready.contains("[+]poststarthook/rbac/bootstrap-roles ok"),
        "{ready}"
    );
    s.ok(&[
        "get",
        "clusterrole",
        "cluster-admin",
        "admin",
        "edit",
        "view",
    ]);
    // Typed lists leave apiVersion and kind to the list, as upstream.
    let list: serde_json::Value =
        serde_json::from_str(&s.ok(&["get", "--raw", "/api/v1/namespaces"])).expect("json");
    assert_eq!(list["kind"], "NamespaceList");
    assert!(list["items"][0].get("kind").is_none(), "{list}");
    assert!(list["items"][0].get("apiVersion").is_none(), "{list}");
    // The storage check, once, in every health endpoint and on its own.
    assert_eq!(ready.matches("[+]etcd ok").count(), 1, "{ready}");
    for endpoint in [
        "/readyz/etcd",
        "/livez/etcd",
        "/healthz/etcd",
        "/readyz/etcd-readiness",
    ] {
        assert_eq!(s.ok(&["get", "--raw", endpoint]), "ok");
    }
    // Readiness of storage is asked by /readyz only.
    assert!(ready.contains("[+]etcd-readiness ok"), "{ready}");
    let live = s.ok(&["get", "--raw", "/livez?verbose"]);
    assert!(!live.contains("etcd-readiness"), "{live}");
}

#[test]
fn discovery_lists_builtin_groups() {
    let s = TestServer::start();
    let versions = s.ok(&["api-versions"]);
    for gv in [
        "v1",
        "apps/v1",
        "batch/v1",
        "rbac.authorization.k8s.io/v1",
        "apiextensions.k8s.io/v1",
        "apiregistration.k8s.io/v1",
    ] {
        assert!(
            versions.lines().any(|l| l == gv),
            "{gv} missing from {versions}"
        );
    }
    let services = s.ok(&["get", "apiservices", "-o", "name"]);
    for name in [
        "apiservice.apiregistration.k8s.io/v1.",
        "apiservice.apiregistration.k8s.io/v1.apps",
    ] {
        assert!(
            services.lines().any(|l| l == name),
            "{name} missing from {services}"
        );
    }
    let resources = s.ok(&["api-resources", "--no-headers"]);
    let deploy = resources
        .lines()
        .find(|l| l.starts_with("deployments "))
        .unwrap_or("");
    assert!(
        deploy.contains("deploy") && deploy.contains("apps/v1") && deploy.contains("Deployment"),
        "{deploy}"
    );
}

#[test]
fn configmap_lifecycle_with_apply_label_and_delete() {
    let s = TestServer::start();
    let applied = s.apply_yaml(CONFIGMAP);
    assert!(applied.contains("configmap/demo created"), "{applied}");
    assert_eq!(greeting(&s), "hello");
    s.ok(&["label", "configmap", "demo", "tier=frontend"]);
    s.ok(&["annotate", "configmap", "demo", "note=x"]);
    let selected = s.ok(&[
        "get",
        "configmaps",
        "-l",
        "tier=frontend,app=web",
        "-o",
        "name",
    ]);
    assert_eq!(selected.trim(), "configmap/demo");
    let none = s.ok(&["get", "configmaps", "-l", "tier=backend", "-o", "name"]);
    assert_eq!(none.trim(), "");
    let table = s.ok(&["get", "configmap", "demo"]);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.contains("DATA") && table.contains("AGE"), "{table}");
    let deleted = s.ok(&["delete", "configmap", "demo"]);
    assert!(deleted.contains("configmap \"demo\" deleted"), "{deleted}");
    let err = s.fails(&["get", "configmap", "demo"]);
    assert!(
        err.contains("Error from server (NotFound): configmaps \"demo\" not found"),
        "{err}"
    );
}

#[test]
fn field_selectors_follow_upstream() {
    let s = TestServer::start();
    s.apply_yaml(CONFIGMAP);
    let by_name = s.ok(&[
        "get",
        "configmaps",
        "--field-selector",
        "metadata.name=demo",
        "-o",
        "name",
    ]);
    assert_eq!(by_name.trim(), "configmap/demo");
    let err = s.fails(&["get", "configmaps", "--field-selector", "spec.nothing=x"]);
    assert!(
        err.contains("field label not supported: spec.nothing"),
        "{err}"
    );
}

#[test]
fn errors_are_upstream_status_errors() {
    let s = TestServer::start();
    s.apply_yaml(CONFIGMAP);
    let exists = s.kubectl_stdin(&["create", "-f", "-"], CONFIGMAP);
    let stderr = String::from_utf8_lossy(&exists.stderr);
    assert!(
        stderr.contains("(AlreadyExists)") && stderr.contains("configmaps \"demo\" already exists"),
        "{stderr}"
    );
    let invalid = s.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: \"\"\n",
    );
    let stderr = String::from_utf8_lossy(&invalid.stderr);
    assert!(
        stderr.contains("Required value: name or generateName is required"),
        "{stderr}"
    );
}

#[test]
fn output_formats() {
    let s = TestServer::start();
    s.apply_yaml(CONFIGMAP);
    let yaml = s.ok(&["get", "configmap", "demo", "-o", "yaml"]);
    assert!(
        yaml.contains("kind: ConfigMap") && yaml.contains("resourceVersion:"),
        "{yaml}"
    );
    let json = s.ok(&["get", "configmap", "demo", "-o", "json"]);
    let value: serde_json::Value = serde_json::from_str(&json).expect("json output");
    assert_eq!(value["metadata"]["labels"]["app"], "web");
    assert!(value["metadata"]["uid"]
        .as_str()
        .is_some_and(|u| u.len() == 36));
    let wide = s.ok(&["get", "pods", "-o", "wide", "--all-namespaces"]);
    assert!(wide.is_empty() || wide.contains("NODE"), "{wide}");
}

#[test]
fn data_survives_a_restart() {
    let mut s = TestServer::start();
    s.apply_yaml(CONFIGMAP);
    s.restart();
    assert_eq!(greeting(&s), "hello");
}

/// The `demo` ConfigMap's greeting.
fn greeting(s: &TestServer) -> String {
    s.ok(&[
        "get",
        "configmap",
        "demo",
        "-o",
        "jsonpath={.data.greeting}",
    ])
}

/// What the server logs when it opens an embedded store that was not
/// closed (redb's repair walk of the whole file).
const REPAIRING: &str = "repairing the embedded store";

fn server_log(s: &TestServer) -> String {
    std::fs::read_to_string(s.dir.path().join("server.log")).expect("server log")
}

#[test]
fn a_terminated_server_closes_its_store_so_the_next_start_needs_no_repair() {
    let mut s = TestServer::start();
    s.apply_yaml(CONFIGMAP);
    assert!(s.terminate().success(), "{}", server_log(&s));
    s.restart();
    let log = server_log(&s);
    assert!(!log.contains(REPAIRING), "{log}");
    assert_eq!(greeting(&s), "hello");
    // A killed server cannot close its store: the next start repairs it.
    s.restart();
    let log = server_log(&s);
    assert!(log.contains(REPAIRING), "{log}");
    assert_eq!(greeting(&s), "hello");
}

#[test]
fn services_get_unique_cluster_ips_and_node_ports_that_survive_restarts() {
    let mut s = TestServer::start();
    s.ok(&["create", "service", "clusterip", "a", "--tcp=80:8080"]);
    s.ok(&["create", "service", "nodeport", "b", "--tcp=80:8080"]);
    let ip = |name: &str| s.ok(&["get", "service", name, "-o", "jsonpath={.spec.clusterIP}"]);
    let (a, b) = (ip("a"), ip("b"));
    assert!(
        a.starts_with("10.0.0.") && b.starts_with("10.0.0."),
        "{a} {b}"
    );
    assert_ne!(a, b);
    assert_ne!(
        a, "10.0.0.1",
        "the kubernetes Service's address was handed out"
    );
    let port = s.ok(&[
        "get",
        "service",
        "b",
        "-o",
        "jsonpath={.spec.ports[0].nodePort}",
    ]);
    let port: u16 = port.parse().expect("a node port");
    assert!((30000..=32767).contains(&port));
    let dup = s.fails(&[
        "create",
        "service",
        "clusterip",
        "c",
        "--tcp=80",
        &format!("--clusterip={a}"),
    ]);
    assert!(dup.contains("provided IP is already allocated"), "{dup}");
    s.restart();
    let dup = s.fails(&[
        "create",
        "service",
        "nodeport",
        "d",
        "--tcp=80",
        &format!("--node-port={port}"),
    ]);
    assert!(dup.contains("provided port is already allocated"), "{dup}");
    s.ok(&["delete", "service", "a"]);
    s.ok(&[
        "create",
        "service",
        "clusterip",
        "e",
        "--tcp=80",
        &format!("--clusterip={a}"),
    ]);
}

#[test]
fn events_select_by_involved_object_and_print_upstream_columns() {
    let s = TestServer::start();
    s.apply_yaml(
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: web.1\ninvolvedObject:\n  kind: Deployment\n  name: web\n  namespace: default\nreason: ScalingReplicaSet\nmessage: Scaled up\ntype: Normal\nsource:\n  component: deployment-controller\ncount: 1\n",
    );
    let selected = s.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web,reason=ScalingReplicaSet",
        "-o",
        "name",
    ]);
    assert_eq!(selected.trim(), "event/web.1");
    let none = s.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=other",
        "-o",
        "name",
    ]);
    assert_eq!(none.trim(), "");
    let table = s.ok(&["get", "events"]);
    let header = table.lines().next().unwrap_or("");
    for column in ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(table.contains("deployment/web"), "{table}");
}
