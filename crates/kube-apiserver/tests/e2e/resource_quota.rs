//! ResourceQuota end to end on both backends: the in-process quota
//! controller keeps `status.hard`/`status.used` current as objects come and
//! go (as `kubectl get/describe quota` show it), the admission plugin's
//! refusals carry upstream's messages, scopes select what they should, and
//! LimitRange defaults and bounds answer as upstream's LimitRanger.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::TestServer;

const QUOTA: &str = r#"apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: quota}
spec:
  hard:
    pods: "2"
    requests.cpu: "1"
    requests.memory: 1Gi
    limits.cpu: "2"
    limits.memory: 2Gi
    requests.example.com/gpu: "1"
    configmaps: "5"
    services: "3"
    services.nodeports: "1"
    count/deployments.apps: "1"
    persistentvolumeclaims: "2"
    requests.storage: 5Gi
    gold.storageclass.storage.k8s.io/requests.storage: 1Gi
"#;

fn pod(name: &str, resources: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: quota}}\n\
         spec:\n  containers:\n  - name: c\n    image: nginx\n    resources: {resources}\n"
    )
}

const SIZED: &str = "{requests: {cpu: 250m, memory: 256Mi, example.com/gpu: \"1\"}, \
    limits: {cpu: 500m, memory: 512Mi, example.com/gpu: \"1\"}}";
const SMALL: &str = "{requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 100m, memory: 64Mi}}";

fn status(s: &TestServer, name: &str) -> Value {
    let out = s.ok(&["get", "resourcequota", name, "-n", "quota", "-o", "json"]);
    serde_json::from_str::<Value>(&out).unwrap_or(Value::Null)["status"].clone()
}

/// Waits until the quota's `status.used` shows every `(resource, value)`.
fn wait_used(s: &TestServer, name: &str, expected: &[(&str, &str)]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let st = status(s, name);
        if expected.iter().all(|(k, v)| st["used"][*k] == *v) {
            return st;
        }
        assert!(Instant::now() < deadline, "want {expected:?}, have {st}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn namespace(s: &TestServer) {
    s.ok(&["create", "namespace", "quota"]);
}

fn usage_follows_creates_and_deletes(s: &TestServer) {
    namespace(s);
    s.apply_yaml(QUOTA);
    // A new quota has its status at once: every hard resource, zero when unused.
    let st = wait_used(
        s,
        "q",
        &[("pods", "0"), ("requests.cpu", "0"), ("configmaps", "1")],
    );
    assert_eq!(st["hard"]["requests.memory"], "1Gi", "{st}");
    assert_eq!(st["used"]["requests.storage"], "0", "{st}");
    assert_eq!(st["used"]["count/deployments.apps"], "0", "{st}");
    assert_eq!(st["used"]["requests.example.com/gpu"], "0", "{st}");

    s.apply_yaml(&pod("one", SIZED));
    wait_used(
        s,
        "q",
        &[
            ("pods", "1"),
            ("requests.cpu", "250m"),
            ("requests.memory", "256Mi"),
            ("limits.cpu", "500m"),
            ("limits.memory", "512Mi"),
            ("requests.example.com/gpu", "1"),
        ],
    );
    let described = s.ok(&["describe", "quota", "q", "-n", "quota"]);
    let rows: Vec<Vec<&str>> = described
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    for row in [
        ["pods", "1", "2"],
        ["limits.cpu", "500m", "2"],
        ["requests.memory", "256Mi", "1Gi"],
        ["services.nodeports", "0", "1"],
    ] {
        assert!(rows.iter().any(|r| r == &row), "{row:?} in\n{described}");
    }
    let got = s.ok(&["get", "quota", "-n", "quota"]);
    assert!(got.contains("pods: 1/2"), "{got}");
    assert!(got.contains("limits.cpu: 500m/2"), "{got}");

    // Deletes lower usage.
    s.ok(&[
        "delete",
        "pod",
        "one",
        "-n",
        "quota",
        "--grace-period=0",
        "--force",
    ]);
    s.ok(&["create", "configmap", "extra", "-n", "quota"]);
    wait_used(
        s,
        "q",
        &[("pods", "0"), ("limits.memory", "0"), ("configmaps", "2")],
    );
    s.ok(&["delete", "configmap", "extra", "-n", "quota"]);
    wait_used(s, "q", &[("configmaps", "1")]);

    // A changed spec.hard is reflected in the status.
    s.ok(&[
        "patch",
        "quota",
        "q",
        "-n",
        "quota",
        "--type=merge",
        "-p",
        r#"{"spec":{"hard":{"pods":"5","secrets":"4"}}}"#,
    ]);
    let st = wait_used(s, "q", &[("secrets", "0")]);
    assert_eq!(st["hard"]["pods"], "5", "{st}");
}

fn refusals_carry_upstreams_messages(s: &TestServer) {
    namespace(s);
    s.apply_yaml(QUOTA);
    wait_used(s, "q", &[("pods", "0")]);
    s.apply_yaml(&pod("one", SIZED));
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &pod("two", SIZED));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pods \"two\" is forbidden: exceeded quota: q, requested: requests.example.com/gpu=1, used: requests.example.com/gpu=1, limited: requests.example.com/gpu=1"),
        "{err}"
    );
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &pod("bare", "{requests: {cpu: 100m, memory: 64Mi}}"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pods \"bare\" is forbidden: failed quota: q: must specify limits.cpu for: c; limits.memory for: c"),
        "{err}"
    );
    s.apply_yaml(&pod("three", SMALL));
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &pod("four", SMALL));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"),
        "{err}"
    );

    let err = s.fails(&[
        "create",
        "service",
        "nodeport",
        "np",
        "-n",
        "quota",
        "--tcp=80,443",
    ]);
    assert!(
        err.contains("services \"np\" is forbidden: exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1"),
        "{err}"
    );
    s.ok(&["create", "deployment", "d1", "-n", "quota", "--image=nginx"]);
    wait_used(s, "q", &[("count/deployments.apps", "1")]);
    let err = s.fails(&["create", "deployment", "d2", "-n", "quota", "--image=nginx"]);
    assert!(
        err.contains("exceeded quota: q, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"),
        "{err}"
    );
}

fn scopes_select_what_they_name(s: &TestServer) {
    namespace(s);
    s.apply_yaml(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: best, namespace: quota}\n\
         spec:\n  hard: {pods: \"1\"}\n  scopes: [BestEffort]\n---\n\
         apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: high, namespace: quota}\n\
         spec:\n  hard: {pods: \"0\"}\n  scopeSelector:\n    matchExpressions:\n\
         \x20   - {scopeName: PriorityClass, operator: In, values: [high]}\n",
    );
    wait_used(s, "best", &[("pods", "0")]);
    wait_used(s, "high", &[("pods", "0")]);
    s.apply_yaml(&pod("free", "{}"));
    wait_used(s, "best", &[("pods", "1")]);
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &pod("free2", "{}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exceeded quota: best, requested: pods=1, used: pods=1, limited: pods=1"),
        "{err}"
    );
    // A pod with requests is not BestEffort: the scoped quota ignores it.
    s.apply_yaml(&pod("sized", SMALL));
    let st = wait_used(s, "best", &[("pods", "1")]);
    assert_eq!(st["hard"]["pods"], "1", "{st}");
}

fn limit_ranges_default_and_bound(s: &TestServer) {
    namespace(s);
    s.apply_yaml(
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr, namespace: quota}\nspec:\n  limits:\n\
         \x20 - {type: Container, min: {cpu: 100m}, max: {cpu: \"1\"}, maxLimitRequestRatio: {cpu: \"4\"}}\n\
         \x20 - {type: PersistentVolumeClaim, max: {storage: 1Gi}}\n",
    );
    // Upstream's defaulting: the default limit from max, the request from it.
    let out = s.ok(&["get", "limitrange", "lr", "-n", "quota", "-o", "json"]);
    let lr: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    assert_eq!(lr["spec"]["limits"][0]["default"]["cpu"], "1", "{lr}");
    assert_eq!(
        lr["spec"]["limits"][0]["defaultRequest"]["cpu"], "1",
        "{lr}"
    );

    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &pod("small", "{requests: {cpu: 50m}, limits: {cpu: 100m}}"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pods \"small\" is forbidden: minimum cpu usage per Container is 100m, but request is 50m"),
        "{err}"
    );
    let out = s.kubectl_stdin(
        &["apply", "-f", "-"],
        &pod("big", "{requests: {cpu: 100m}, limits: {cpu: \"2\"}}"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pods \"big\" is forbidden: [maximum cpu usage per Container is 1, but limit is 2, cpu max limit to request ratio per Container is 4, but provided ratio is 20.000000]"),
        "{err}"
    );
    s.apply_yaml(&pod("plain", "{}"));
    let out = s.ok(&["get", "pod", "plain", "-n", "quota", "-o", "json"]);
    let p: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    let res = &p["spec"]["containers"][0]["resources"];
    assert_eq!(res["requests"]["cpu"], "1", "{p}");
    assert_eq!(res["limits"]["cpu"], "1", "{p}");

    let claim =
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c, namespace: quota}\n\
        spec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 2Gi}}\n";
    let out = s.kubectl_stdin(&["apply", "-f", "-"], claim);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("persistentvolumeclaims \"c\" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi"),
        "{err}"
    );
}

fn invalid_quotas_and_limit_ranges_are_refused(s: &TestServer) {
    namespace(s);
    let quota = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: bad, namespace: quota}\n\
        spec:\n  hard: {foo: \"1\", requests.cpu: \"1\"}\n  scopes: [BestEffort, NotBestEffort]\n";
    let out = s.kubectl_stdin(&["apply", "-f", "-"], quota);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The ResourceQuota \"bad\" is invalid"),
        "{err}"
    );
    assert!(
        err.contains(
            "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource for quota"
        ),
        "{err}"
    );
    assert!(
        err.contains("unsupported scope applied to resource"),
        "{err}"
    );
    assert!(err.contains("conflicting scopes"), "{err}");
    let range = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: bad, namespace: quota}\n\
        spec:\n  limits:\n  - {type: Container, min: {cpu: 200m}, max: {cpu: 100m}}\n";
    let out = s.kubectl_stdin(&["apply", "-f", "-"], range);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.limits[0].min[cpu]: Invalid value: \"200m\": min value 200m is greater than max value 100m"),
        "{err}"
    );
    // Scopes cannot change once set.
    s.apply_yaml(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: scoped, namespace: quota}\n\
         spec:\n  hard: {pods: \"1\"}\n  scopes: [BestEffort]\n",
    );
    let err = s.fails(&[
        "patch",
        "quota",
        "scoped",
        "-n",
        "quota",
        "--type=merge",
        "-p",
        r#"{"spec":{"scopes":["NotBestEffort"]}}"#,
    ]);
    assert!(err.contains("spec.scopes: Invalid value"), "{err}");
    assert!(err.contains("field is immutable"), "{err}");
}

crate::harness::on_both_backends!(
    usage_follows_creates_and_deletes,
    refusals_carry_upstreams_messages,
    scopes_select_what_they_name,
    limit_ranges_default_and_bound,
    invalid_quotas_and_limit_ranges_are_refused,
);
