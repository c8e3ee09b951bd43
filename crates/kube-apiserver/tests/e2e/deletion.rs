//! Deletion as upstream: graceful deletion of pods, DeleteOptions checks,
//! and the in-process garbage collector (background, foreground and orphan
//! propagation; absent and cluster-scoped owners; custom resources as
//! owners; finalizers on dependents).

use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::TestServer;
use crate::support::crds::crd;
use crate::support::http::{admin_curl, request};
use crate::support::wait::eventually;

/// How long the server's background work may take here.
const WAIT: Duration = Duration::from_secs(20);

fn jsonpath(s: &TestServer, what: &[&str], path: &str) -> String {
    let expr = format!("jsonpath={path}");
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", &expr]);
    s.ok(&args)
}

fn exists(s: &TestServer, what: &[&str]) -> bool {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["--ignore-not-found", "-o", "name"]);
    !s.ok(&args).trim().is_empty()
}

/// A ConfigMap owned by the objects named (api version, kind, name, uid).
fn dependent(name: &str, owners: &[(&str, &str, &str, &str)], block: bool) -> String {
    let refs: String = owners
        .iter()
        .map(|(api_version, kind, owner, uid)| {
            format!(
                "\n  - {{apiVersion: {api_version}, kind: {kind}, name: {owner}, uid: {uid}, blockOwnerDeletion: {block}}}"
            )
        })
        .collect();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:{refs}\n"
    )
}

fn configmap_owner(s: &TestServer, name: &str) -> String {
    s.ok(&["create", "configmap", name]);
    jsonpath(s, &["configmap", name], "{.metadata.uid}")
}

const SCHEDULED_POD: &str = "
apiVersion: v1
kind: Pod
metadata: {name: bound}
spec:
  nodeName: node-1
  containers: [{name: c, image: nginx}]
";

const LOOSE_POD: &str = "
apiVersion: v1
kind: Pod
metadata: {name: loose}
spec:
  containers: [{name: c, image: nginx}]
";

/// Creates a pod once the namespace's default service account (made by
/// the in-process controller after startup) exists.
fn create_pod(s: &TestServer, yaml: &str) {
    eventually("the pod is created", WAIT, || {
        s.kubectl_stdin(&["apply", "-f", "-"], yaml)
            .status
            .success()
    });
}

fn pods_are_deleted_gracefully(s: &TestServer) {
    // Not scheduled: deleted at once.
    create_pod(s, LOOSE_POD);
    let out = s.ok(&["delete", "pod", "loose", "--wait=false"]);
    assert!(out.contains("pod \"loose\" deleted"), "{out}");
    assert!(!exists(s, &["pod", "loose"]));

    // Scheduled: stays Terminating for its grace period (no kubelet here).
    create_pod(s, SCHEDULED_POD);
    s.ok(&["delete", "pod", "bound", "--wait=false"]);
    let meta = jsonpath(
        s,
        &["pod", "bound"],
        "{.metadata.deletionGracePeriodSeconds} {.metadata.generation} {.metadata.deletionTimestamp}",
    );
    let fields: Vec<&str> = meta.split(' ').collect();
    assert_eq!(fields[..2], ["30", "2"], "{meta}");
    assert!(fields[2].ends_with('Z'), "{meta}");
    // A longer period changes nothing; a shorter one is taken.
    s.ok(&[
        "delete",
        "pod",
        "bound",
        "--grace-period=60",
        "--wait=false",
    ]);
    let period = jsonpath(
        s,
        &["pod", "bound"],
        "{.metadata.deletionGracePeriodSeconds}",
    );
    assert_eq!(period, "30");
    s.ok(&[
        "delete",
        "pod",
        "bound",
        "--grace-period=10",
        "--wait=false",
    ]);
    let period = jsonpath(
        s,
        &["pod", "bound"],
        "{.metadata.deletionGracePeriodSeconds}",
    );
    assert_eq!(period, "10");
    let out = s.ok(&["delete", "pod", "bound", "--grace-period=0", "--force"]);
    assert!(out.contains("pod \"bound\" force deleted"), "{out}");
    assert!(!exists(s, &["pod", "bound"]));
}

/// Upstream's `ReturnDeletedObject`: deleting a pod, service or service
/// account answers with the object; other resources answer a Status.
fn deletes_answer_as_upstream(s: &TestServer) {
    create_pod(s, LOOSE_POD);
    let pod = s.ok(&["delete", "--raw", "/api/v1/namespaces/default/pods/loose"]);
    let pod: serde_json::Value = serde_json::from_str(&pod).expect("pod json");
    assert_eq!(pod["kind"], "Pod", "{pod}");
    assert_eq!(pod["metadata"]["name"], "loose", "{pod}");
    s.ok(&["create", "serviceaccount", "robot"]);
    let sa = s.ok(&[
        "delete",
        "--raw",
        "/api/v1/namespaces/default/serviceaccounts/robot",
    ]);
    assert!(sa.contains("\"kind\":\"ServiceAccount\""), "{sa}");
    s.ok(&["create", "configmap", "plain"]);
    let status = s.ok(&[
        "delete",
        "--raw",
        "/api/v1/namespaces/default/configmaps/plain",
    ]);
    let status: serde_json::Value = serde_json::from_str(&status).expect("status json");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["status"], "Success", "{status}");
    assert_eq!(status["details"]["kind"], "configmaps", "{status}");
}

fn delete_options_are_checked(s: &TestServer) {
    s.ok(&["create", "configmap", "target"]);
    let body = s.dir.path().join("options.json");
    std::fs::write(
        &body,
        r#"{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":true,"propagationPolicy":"Background"}"#,
    )
    .expect("write options");
    let path = body.display().to_string();
    let err = s.fails(&[
        "delete",
        "--raw",
        "/api/v1/namespaces/default/configmaps/target",
        "-f",
        &path,
    ]);
    assert!(
        err.contains("orphanDependents and deletionPropagation cannot be both set"),
        "{err}"
    );
    assert!(exists(s, &["configmap", "target"]));
    // Query options converted as upstream's parameter codec: integers as
    // strconv.ParseInt (400 with its message), booleans true unless 0 or
    // false, the first of repeated values, unknown parameters ignored.
    let target = "/api/v1/namespaces/default/configmaps/target";
    for (query, message) in [
        (
            "gracePeriodSeconds=abc",
            "strconv.ParseInt: parsing \"abc\": invalid syntax",
        ),
        (
            "gracePeriodSeconds=9223372036854775808",
            "strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
        ),
        (
            "orphanDependents=yes&propagationPolicy=Background",
            "orphanDependents and deletionPropagation cannot be both set",
        ),
    ] {
        let a = request(s, "DELETE", &format!("{target}?{query}"), &[], None);
        assert_eq!(
            a.code,
            if query.starts_with("orphan") {
                422
            } else {
                400
            },
            "{query}: {}",
            a.body
        );
        let got = a.body["message"].as_str().unwrap_or_default();
        assert!(got.contains(message), "{query}: {got}");
    }
    let a = request(
        s,
        "DELETE",
        &format!("{target}?dryRun=All&orphanDependents=False&orphanDependents=true&bogus=1"),
        &[],
        None,
    );
    assert_eq!(a.code, 200, "{}", a.body);
    assert!(exists(s, &["configmap", "target"]));
    // Options as query parameters: an orphaning delete with a finalizer
    // held by nothing else goes once the collector has orphaned.
    s.ok(&[
        "delete",
        "--raw",
        "/api/v1/namespaces/default/configmaps/target?propagationPolicy=Orphan",
    ]);
    eventually("the orphaned configmap goes", WAIT, || {
        !exists(s, &["configmap", "target"])
    });
}

fn dependents_are_collected_in_background(s: &TestServer) {
    let uid = configmap_owner(s, "owner");
    s.apply_yaml(&dependent(
        "child",
        &[("v1", "ConfigMap", "owner", &uid)],
        false,
    ));
    // Two owners: losing one keeps it, without the dangling reference.
    let other = configmap_owner(s, "other");
    s.apply_yaml(&dependent(
        "shared",
        &[
            ("v1", "ConfigMap", "owner", &uid),
            ("v1", "ConfigMap", "other", &other),
        ],
        false,
    ));
    s.ok(&["delete", "configmap", "owner"]);
    eventually("the dependent is collected", WAIT, || {
        !exists(s, &["configmap", "child"])
    });
    eventually("the reference to the deleted owner goes", WAIT, || {
        jsonpath(
            s,
            &["configmap", "shared"],
            "{.metadata.ownerReferences[*].name}",
        ) == "other"
    });

    // An owner that never existed: its dependents go once that is known.
    s.apply_yaml(&dependent(
        "stray",
        &[(
            "v1",
            "ConfigMap",
            "ghost",
            "3f1c1a7e-0000-4000-8000-000000000001",
        )],
        false,
    ));
    eventually(
        "the dependent of an absent owner is collected",
        WAIT,
        || !exists(s, &["configmap", "stray"]),
    );

    // A cluster-scoped owner of a namespaced dependent.
    s.ok(&[
        "create",
        "clusterrole",
        "owning-role",
        "--verb=get",
        "--resource=pods",
    ]);
    let role = jsonpath(s, &["clusterrole", "owning-role"], "{.metadata.uid}");
    s.apply_yaml(&dependent(
        "role-child",
        &[(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "owning-role",
            &role,
        )],
        false,
    ));
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        exists(s, &["configmap", "role-child"]),
        "kept while its owner exists"
    );
    s.ok(&["delete", "clusterrole", "owning-role"]);
    eventually(
        "the dependent of a cluster-scoped owner is collected",
        WAIT,
        || !exists(s, &["configmap", "role-child"]),
    );
}

fn foreground_deletion_waits_for_blocking_dependents(s: &TestServer) {
    let uid = configmap_owner(s, "fg-owner");
    let held = dependent("fg-child", &[("v1", "ConfigMap", "fg-owner", &uid)], true).replace(
        "metadata:\n",
        "metadata:\n  finalizers: [example.com/hold]\n",
    );
    s.apply_yaml(&held);
    s.ok(&[
        "delete",
        "configmap",
        "fg-owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    let finalizers = jsonpath(s, &["configmap", "fg-owner"], "{.metadata.finalizers}");
    assert!(finalizers.contains("foregroundDeletion"), "{finalizers}");
    // The dependent is being deleted, kept by its own finalizer; the
    // owner waits for it.
    eventually("the dependent is marked for deletion", WAIT, || {
        !jsonpath(
            s,
            &["configmap", "fg-child"],
            "{.metadata.deletionTimestamp}",
        )
        .is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(exists(s, &["configmap", "fg-owner"]), "the owner waits");
    s.ok(&[
        "patch",
        "configmap",
        "fg-child",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    eventually("dependent then owner go", WAIT, || {
        !exists(s, &["configmap", "fg-child"]) && !exists(s, &["configmap", "fg-owner"])
    });

    // kubectl itself waits for the owner to go.
    let uid = configmap_owner(s, "fg2");
    s.apply_yaml(&dependent(
        "fg2-child",
        &[("v1", "ConfigMap", "fg2", &uid)],
        true,
    ));
    s.ok(&[
        "delete",
        "configmap",
        "fg2",
        "--cascade=foreground",
        "--timeout=20s",
    ]);
    assert!(!exists(s, &["configmap", "fg2-child"]));
}

fn orphan_deletion_keeps_dependents(s: &TestServer) {
    let uid = configmap_owner(s, "parent");
    s.apply_yaml(&dependent(
        "kept",
        &[("v1", "ConfigMap", "parent", &uid)],
        true,
    ));
    s.ok(&[
        "delete",
        "configmap",
        "parent",
        "--cascade=orphan",
        "--timeout=20s",
    ]);
    assert!(!exists(s, &["configmap", "parent"]));
    let refs = jsonpath(s, &["configmap", "kept"], "{.metadata.ownerReferences}");
    assert_eq!(refs, "", "the reference to the orphaning owner is removed");
}

const SCHEMA: &str = " {type: object, x-kubernetes-preserve-unknown-fields: true}
";

fn custom_resources_own_and_are_owned(s: &TestServer) {
    s.apply_yaml(&crd("widgets", "Widget", "Namespaced", SCHEMA));
    s.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=20s",
    ]);
    eventually("widgets are served", WAIT, || {
        s.kubectl(&["get", "widgets"]).status.success()
    });
    s.apply_yaml("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n");
    let uid = jsonpath(s, &["widget", "w"], "{.metadata.uid}");
    s.apply_yaml(&dependent(
        "widget-child",
        &[("example.com/v1", "Widget", "w", &uid)],
        false,
    ));
    let cm = configmap_owner(s, "widget-owner");
    s.apply_yaml(&format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: owned\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: widget-owner, uid: {cm}}}\n"
    ));
    s.ok(&["delete", "widget", "w"]);
    eventually(
        "the configmap owned by a custom resource is collected",
        WAIT,
        || !exists(s, &["configmap", "widget-child"]),
    );
    s.ok(&["delete", "configmap", "widget-owner"]);
    eventually(
        "the custom resource owned by a configmap is collected",
        WAIT,
        || !exists(s, &["widget", "owned"]),
    );
}

/// Jobs (batch/v1) and ReplicationControllers (v1) orphan their
/// dependents by default, as upstream: the `orphan` finalizer is set and
/// the collector releases them; namespace deletion still completes.
fn default_orphaning_kinds_are_released(s: &TestServer) {
    s.ok(&["create", "namespace", "batch"]);
    s.ok(&["create", "job", "j", "-n", "batch", "--image=busybox"]);
    let out = s.ok(&["delete", "--raw", "/apis/batch/v1/namespaces/batch/jobs/j"]);
    assert!(out.contains("\"orphan\""), "{out}");
    eventually("the job is released and goes", WAIT, || {
        !exists(s, &["job", "j", "-n", "batch"])
    });
    s.ok(&["create", "job", "k", "-n", "batch", "--image=busybox"]);
    s.ok(&["delete", "namespace", "batch", "--timeout=30s"]);
    assert!(!exists(s, &["namespace", "batch"]));
}

/// A raw watch of one ConfigMap from `rv`: its events, one JSON per line.
fn watch_configmap(s: &TestServer, name: &str, rv: &str) -> (Child, Receiver<Value>) {
    let mut watch = admin_curl(s)
        .args(["-N", "--max-time", "30"])
        .arg(format!(
            "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3D{name}&resourceVersion={rv}",
            s.port
        ))
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl runs");
    let stdout = watch.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let events = serde_json::Deserializer::from_reader(stdout).into_iter::<Value>();
        for event in events.map_while(Result::ok) {
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    (watch, rx)
}

/// Reads GETs of a ConfigMap over one connection until `stop`; how many
/// answers showed it marked for deletion without finalizers.
fn read_while(s: &TestServer, name: &str, stop: Arc<AtomicBool>) -> JoinHandle<usize> {
    let mut get = admin_curl(s);
    let url = format!(
        "https://127.0.0.1:{}/api/v1/namespaces/default/configmaps/{name}",
        s.port
    );
    get.args(std::iter::repeat_n(url.as_str(), 50));
    std::thread::spawn(move || {
        let mut seen = 0;
        while !stop.load(Ordering::SeqCst) {
            let out = get.output().expect("curl runs");
            let answers = serde_json::Deserializer::from_slice(&out.stdout).into_iter::<Value>();
            seen += answers
                .map_while(Result::ok)
                .filter(|o| o["kind"] == "ConfigMap" && finalized_but_terminating(o))
                .count();
        }
        seen
    })
}

fn finalized_but_terminating(obj: &Value) -> bool {
    let finalizers = obj["metadata"]["finalizers"].as_array().map_or(0, Vec::len);
    obj["metadata"]["deletionTimestamp"].is_string() && finalizers == 0
}

/// The event types up to DELETED, each MODIFIED still holding finalizers.
fn events_until_deleted(rx: &Receiver<Value>) -> Vec<String> {
    let mut types = Vec::new();
    while types.last().is_none_or(|t| t != "DELETED") {
        let event = rx.recv_timeout(WAIT).expect("a watch event");
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        assert!(
            kind == "DELETED" || !finalized_but_terminating(&event["object"]),
            "written without finalizers before its deletion: {event}"
        );
        types.push(kind);
    }
    types
}

/// An update removing the last finalizer of an object marked for deletion
/// deletes it in that step (upstream's `ShouldDeleteDuringUpdate` and
/// `deleteWithoutFinalizers`): no watcher nor reader ever sees it marked
/// and without finalizers, for a finalizer removed by a client and for
/// the collector's `orphan` one.
fn emptied_finalizers_delete_in_one_step(s: &TestServer) {
    s.apply_yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, finalizers: [example.com/hold]}\n",
    );
    let rv = jsonpath(s, &["configmap", "held"], "{.metadata.resourceVersion}");
    let (mut watch, events) = watch_configmap(s, "held", &rv);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = read_while(s, "held", stop.clone());
    s.ok(&["delete", "configmap", "held", "--wait=false"]);
    let out = s.ok(&[
        "patch",
        "configmap",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    assert!(out.contains("patched"), "{out}");
    assert_eq!(events_until_deleted(&events), ["MODIFIED", "DELETED"]);
    stop.store(true, Ordering::SeqCst);
    assert_eq!(
        reader.join().expect("reader"),
        0,
        "GETs saw it without finalizers"
    );
    assert!(!exists(s, &["configmap", "held"]));
    let _ = watch.kill();

    s.ok(&["create", "configmap", "orphaned"]);
    let rv = jsonpath(s, &["configmap", "orphaned"], "{.metadata.resourceVersion}");
    let (mut watch, events) = watch_configmap(s, "orphaned", &rv);
    let answer = request(
        s,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/orphaned",
        &["Content-Type: application/json"],
        Some(r#"{"propagationPolicy":"Orphan"}"#),
    );
    assert_eq!(answer.code, 200, "{}", answer.body);
    assert_eq!(answer.body["metadata"]["finalizers"], json!(["orphan"]));
    assert_eq!(events_until_deleted(&events), ["MODIFIED", "DELETED"]);
    let _ = watch.kill();
}

crate::harness::on_both_backends!(
    emptied_finalizers_delete_in_one_step,
    pods_are_deleted_gracefully,
    deletes_answer_as_upstream,
    delete_options_are_checked,
    dependents_are_collected_in_background,
    foreground_deletion_waits_for_blocking_dependents,
    orphan_deletion_keeps_dependents,
    custom_resources_own_and_are_owned,
    default_orphaning_kinds_are_released,
);
