//! The pod and namespace subresources beyond status and scale: binding a
//! pod to a node, evicting it under a PodDisruptionBudget, adding an
//! ephemeral container (`kubectl debug`), resizing, finalizing a namespace,
//! and the discovery entries clients look them up by.

use serde_json::{json, Value};

use crate::harness::TestServer;

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&s.ok(&all)).expect("kubectl prints JSON")
}

fn post(s: &TestServer, path: &str, body: &Value) -> std::process::Output {
    s.kubectl_stdin(&["create", "--raw", path, "-f", "-"], &body.to_string())
}

fn pod(s: &TestServer, name: &str, node: Option<&str>) {
    let mut spec = json!({"containers": [{"name": "app", "image": "nginx",
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}}]});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}}, "spec": spec});
    let out = s.kubectl_stdin(&["create", "-f", "-"], &pod.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn subresource_names(list: &Value) -> Vec<(String, String)> {
    list["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| {
            r["name"]
                .as_str()
                .is_some_and(|n| n.contains('/') || n == "bindings")
        })
        .map(|r| {
            let kind = match r.get("group").and_then(Value::as_str) {
                Some(g) => format!("{g}/{}", r["kind"].as_str().unwrap_or("")),
                None => r["kind"].as_str().unwrap_or("").to_owned(),
            };
            (r["name"].as_str().unwrap_or("").to_owned(), kind)
        })
        .collect()
}

#[test]
fn discovery_lists_the_subresources() {
    let s = TestServer::start();
    let list: Value = serde_json::from_str(&s.ok(&["get", "--raw", "/api/v1"])).unwrap();
    let subs = subresource_names(&list);
    for expected in [
        ("bindings", "Binding"),
        ("namespaces/finalize", "Namespace"),
        ("pods/binding", "Binding"),
        ("pods/ephemeralcontainers", "Pod"),
        ("pods/eviction", "policy/Eviction"),
        ("pods/resize", "Pod"),
        (
            "serviceaccounts/token",
            "authentication.k8s.io/TokenRequest",
        ),
    ] {
        assert!(
            subs.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} missing from {subs:?}"
        );
    }
}

#[test]
fn a_binding_assigns_the_pod_once() {
    let s = TestServer::start();
    pod(&s, "web", None);
    let binding = json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "web", "annotations": {"scheduler": "test"}},
        "target": {"kind": "Node", "name": "n1"}});
    let out = post(&s, "/api/v1/namespaces/default/pods/web/binding", &binding);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["kind"], "Status");
    assert_eq!(answer["status"], "Success");
    let bound = get_json(&s, &["get", "pod", "web"]);
    assert_eq!(bound["spec"]["nodeName"], "n1");
    assert_eq!(bound["metadata"]["annotations"]["scheduler"], "test");
    let scheduled = bound["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .cloned()
        .unwrap();
    assert_eq!(scheduled["status"], "True");
    let again = post(&s, "/api/v1/namespaces/default/pods/web/binding", &binding);
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"n1\""),
        "{err}"
    );
    // The namespace's `bindings` takes the pod's name from the body.
    pod(&s, "api", None);
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "api"},
        "target": {"name": "n2"}});
    let out = post(&s, "/api/v1/namespaces/default/bindings", &binding);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.ok(&["get", "pod", "api", "-o", "jsonpath={.spec.nodeName}"]),
        "n2"
    );
    let bad = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
        "target": {"kind": "Pod", "name": "x"}});
    let out = post(&s, "/api/v1/namespaces/default/pods/web/binding", &bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("target.kind: Unsupported value: \"Pod\""),
        "{err}"
    );
}

fn evict(s: &TestServer, name: &str) -> std::process::Output {
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"}});
    post(
        s,
        &format!("/api/v1/namespaces/default/pods/{name}/eviction"),
        &eviction,
    )
}

fn set_budget_status(s: &TestServer, status: Value) {
    let patch = json!({"status": status}).to_string();
    s.ok(&[
        "patch",
        "pdb",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
}

#[test]
fn evictions_respect_the_disruption_budget() {
    let s = TestServer::start();
    pod(&s, "pending", None);
    let out = evict(&s, "pending");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!s.kubectl(&["get", "pod", "pending"]).status.success());

    pod(&s, "web", Some("n1"));
    s.ok(&[
        "patch",
        "pod",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    s.ok(&[
        "create",
        "pdb",
        "web",
        "--selector=app=web",
        "--min-available=1",
    ]);
    // No disruption controller has looked at the budget yet.
    let err = String::from_utf8_lossy(&evict(&s, "web").stderr).into_owned();
    assert!(
        err.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{err}"
    );
    set_budget_status(
        &s,
        json!({"observedGeneration": 1, "disruptionsAllowed": 0,
        "desiredHealthy": 1, "currentHealthy": 1, "expectedPods": 1}),
    );
    let out = s.kubectl_stdin(
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/web/eviction",
            "-f",
            "-",
            "-v=8",
        ],
        &json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web"}})
            .to_string(),
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("The disruption budget web needs 1 healthy pods and has 1 currently"),
        "{log}"
    );
    assert!(log.contains("429"), "{log}");
    set_budget_status(
        &s,
        json!({"observedGeneration": 1, "disruptionsAllowed": 1,
        "desiredHealthy": 1, "currentHealthy": 2, "expectedPods": 2}),
    );
    let out = evict(&s, "web");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A scheduled pod is deleted gracefully: it stays, marked.
    let evicted = get_json(&s, &["get", "pod", "web"]);
    assert!(
        evicted["metadata"]["deletionTimestamp"].is_string(),
        "{evicted}"
    );
    let budget = get_json(&s, &["get", "pdb", "web"]);
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    assert!(
        budget["status"]["disruptedPods"]["web"].is_string(),
        "{budget}"
    );
}

#[test]
fn kubectl_debug_adds_an_ephemeral_container_that_stays() {
    let s = TestServer::start();
    pod(&s, "web", Some("n1"));
    s.ok(&["debug", "web", "--image=busybox", "--container=debugger"]);
    let debugged = get_json(&s, &["get", "pod", "web"]);
    assert_eq!(
        debugged["spec"]["ephemeralContainers"][0]["name"],
        "debugger"
    );
    assert_eq!(
        debugged["spec"]["ephemeralContainers"][0]["image"],
        "busybox"
    );
    // Removing it through the subresource is refused.
    let mut removed = debugged.clone();
    removed["spec"]["ephemeralContainers"] = json!([]);
    let out = s.kubectl_stdin(
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/default/pods/web/ephemeralcontainers",
            "-f",
            "-",
        ],
        &removed.to_string(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("existing ephemeral containers \"debugger\" may not be removed"),
        "{err}"
    );
    // A pod never arrives with them: they come only through the subresource.
    let mut copy = debugged;
    copy["metadata"] = json!({"name": "copy"});
    let out = s.kubectl_stdin(&["create", "-f", "-"], &copy.to_string());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.ephemeralContainers: Forbidden: cannot be set on create"),
        "{err}"
    );
}

#[test]
fn resize_changes_only_resources_and_finalize_only_finalizers() {
    let s = TestServer::start();
    pod(&s, "web", Some("n1"));
    let patch = r#"{"spec":{"containers":[{"name":"app","image":"other","resources":{"limits":{"cpu":"300m"},"requests":{"cpu":"100m"}}}]}}"#;
    s.ok(&[
        "patch",
        "pod",
        "web",
        "--subresource=resize",
        "--type=strategic",
        "-p",
        patch,
    ]);
    let resized = get_json(&s, &["get", "pod", "web"]);
    assert_eq!(
        resized["spec"]["containers"][0]["resources"]["limits"]["cpu"],
        "300m"
    );
    assert_eq!(resized["spec"]["containers"][0]["image"], "nginx");

    s.ok(&["create", "namespace", "fin"]);
    let mut ns = get_json(&s, &["get", "namespace", "fin"]);
    ns["spec"]["finalizers"] = json!(["kubernetes", "example.com/hold"]);
    ns["metadata"]["labels"]["ignored"] = json!("yes");
    let out = s.kubectl_stdin(
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/fin/finalize",
            "-f",
            "-",
        ],
        &ns.to_string(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let finalized = get_json(&s, &["get", "namespace", "fin"]);
    assert_eq!(
        finalized["spec"]["finalizers"],
        json!(["kubernetes", "example.com/hold"])
    );
    assert!(finalized["metadata"]["labels"].get("ignored").is_none());
}
