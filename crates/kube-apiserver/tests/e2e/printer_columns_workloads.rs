//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/workloads`: pods (init containers, sidecars, restarts
//! with the time of the last one, terminating), nodes, namespaces,
//! configmaps, secrets, service accounts, events and the apps/batch
//! workloads — what real kubectl prints, plus the raw Table's column
//! definitions.

use chrono::{SecondsFormat, TimeDelta, Utc};
use serde_json::{json, Value};

use crate::harness::TestServer;
use crate::support::tables::{is_age, raw_table, table};

/// An RFC 3339 timestamp `minutes` ago: ages of 10 minutes to 3 hours print
/// as whole minutes, so cells stay stable while the test runs.
fn minutes_ago(minutes: i64) -> String {
    (Utc::now() - TimeDelta::minutes(minutes)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Checks a printed row with the fresh age at `age` and the other cells
/// equal to `want` (in order, the age left out).
fn assert_row(row: &[String], age: usize, want: &[&str]) {
    assert!(
        row.get(age).is_some_and(|a| is_age(a)),
        "age cell {age} in {row:?}"
    );
    let rest: Vec<&str> = row
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != age)
        .map(|(_, c)| c.as_str())
        .collect();
    assert_eq!(rest, want, "row {row:?}");
}

fn patch_status(s: &TestServer, kind: &str, name: &str, status: &Value) {
    s.ok(&[
        "patch",
        kind,
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        &json!({ "status": status }).to_string(),
    ]);
}

/// (name, type, format, priority) of each column definition of a Table.
fn column_shapes(table: &Value) -> Vec<(String, String, String, i64)> {
    let columns = table["columnDefinitions"].as_array().cloned();
    columns
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("?").to_owned();
            (
                s("name"),
                s("type"),
                s("format"),
                c["priority"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

const WORKLOADS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector:
    matchLabels: {tier: web, app: shop}
    matchExpressions:
    - {key: env, operator: In, values: [qa, prod]}
  template:
    metadata: {labels: {tier: web, app: shop, env: qa}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
      - {name: side, image: busybox}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 2
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec:
      containers: [{name: c, image: "registry.example/rs:2"}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: pg, image: "postgres:17"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {zone: b, disk: ssd}
      containers: [{name: a, image: "agent:1"}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: done}
spec:
  completions: 3
  parallelism: 2
  manualSelector: true
  selector: {matchLabels: {job: done}}
  template:
    metadata: {labels: {job: done}}
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: busy}
spec:
  parallelism: 4
  manualSelector: true
  selector: {matchLabels: {job: busy}}
  template:
    metadata: {labels: {job: busy}}
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  timeZone: Etc/UTC
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: backup, image: "backup:3"}]
"#;

fn set_workload_statuses(s: &TestServer) {
    let statuses = [
        (
            "deployment",
            "web",
            json!({"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 1}),
        ),
        (
            "replicaset",
            "rs",
            json!({"replicas": 2, "readyReplicas": 1}),
        ),
        (
            "statefulset",
            "db",
            json!({"replicas": 2, "readyReplicas": 1}),
        ),
        (
            "daemonset",
            "agent",
            json!({"desiredNumberScheduled": 3, "currentNumberScheduled": 2,
            "numberReady": 1, "updatedNumberScheduled": 2, "numberAvailable": 1, "numberMisscheduled": 0}),
        ),
        (
            "job",
            "done",
            json!({"succeeded": 3, "startTime": "2026-01-01T00:00:00Z",
            "completionTime": "2026-01-01T00:03:00Z", "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": "2026-01-01T00:03:00Z", "lastTransitionTime": "2026-01-01T00:03:00Z"},
                {"type": "Complete", "status": "True", "lastProbeTime": "2026-01-01T00:03:00Z", "lastTransitionTime": "2026-01-01T00:03:00Z"}]}),
        ),
        (
            "job",
            "busy",
            json!({"active": 4, "ready": 0, "startTime": minutes_ago(30)}),
        ),
        (
            "cronjob",
            "nightly",
            json!({"lastScheduleTime": minutes_ago(33), "active": [
            {"kind": "Job", "apiVersion": "batch/v1", "namespace": "default", "name": "nightly-1"}]}),
        ),
    ];
    for (kind, name, status) in statuses {
        patch_status(s, kind, name, &status);
    }
}

#[test]
fn workloads_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(WORKLOADS);
    set_workload_statuses(&s);

    let (header, row) = table(&s, &["deployments", "web", "-o", "wide"]);
    let want = [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ];
    assert_eq!(header, want);
    let want = [
        "web",
        "2/3",
        "3",
        "1",
        "web,side",
        "nginx:1.27,busybox",
        "app=shop,env in (prod,qa),tier=web",
    ];
    assert_row(&row, 4, &want);

    let (header, row) = table(&s, &["replicasets", "rs", "-o", "wide"]);
    let want = [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ];
    assert_eq!(header, want);
    assert_row(
        &row,
        4,
        &["rs", "2", "2", "1", "c", "registry.example/rs:2", "app=rs"],
    );

    let (header, row) = table(&s, &["statefulsets", "db", "-o", "wide"]);
    assert_eq!(header, ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]);
    assert_row(&row, 2, &["db", "1/2", "pg", "postgres:17"]);

    let (header, row) = table(&s, &["daemonsets", "agent"]);
    let want = [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "NODE SELECTOR",
        "AGE",
    ];
    assert_eq!(header, want);
    assert_row(
        &row,
        7,
        &["agent", "3", "2", "1", "2", "1", "disk=ssd,zone=b"],
    );

    let (header, row) = table(&s, &["jobs", "done", "-o", "wide"]);
    let want = [
        "NAME",
        "STATUS",
        "COMPLETIONS",
        "DURATION",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ];
    assert_eq!(header, want);
    assert_row(
        &row,
        4,
        &[
            "done", "Complete", "3/3", "3m", "work", "busybox", "job=done",
        ],
    );
    let (_, row) = table(&s, &["jobs", "busy"]);
    assert_row(&row, 4, &["busy", "Running", "0/1 of 4", "30m"]);

    let (header, row) = table(&s, &["cronjobs", "nightly", "-o", "wide"]);
    let want = [
        "NAME",
        "SCHEDULE",
        "TIMEZONE",
        "SUSPEND",
        "ACTIVE",
        "LAST SCHEDULE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ];
    assert_eq!(header, want);
    let want = [
        "nightly",
        "0 3 * * *",
        "Etc/UTC",
        "True",
        "1",
        "33m",
        "backup",
        "backup:3",
        "<none>",
    ];
    assert_row(&row, 6, &want);

    let jobs = raw_table(&s, "/apis/batch/v1/namespaces/default/jobs");
    let shapes = column_shapes(&jobs);
    let want = [
        ("Name", "string", "name", 0),
        ("Status", "string", "", 0),
        ("Completions", "string", "", 0),
        ("Duration", "string", "", 0),
        ("Age", "string", "", 0),
        ("Containers", "string", "", 1),
        ("Images", "string", "", 1),
        ("Selector", "string", "", 1),
    ];
    let want: Vec<(String, String, String, i64)> = want
        .iter()
        .map(|(n, t, f, p)| (n.to_string(), t.to_string(), f.to_string(), *p))
        .collect();
    assert_eq!(shapes, want);
    let cronjobs = raw_table(&s, "/apis/batch/v1/namespaces/default/cronjobs");
    assert_eq!(cronjobs["columnDefinitions"][3]["type"], "boolean");
    assert_eq!(cronjobs["rows"][0]["cells"][3], "True");
    assert_eq!(cronjobs["rows"][0]["cells"][4], 1);
}

fn core_objects() -> String {
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge"}}
---
apiVersion: v1
kind: Pod
metadata: {{name: app}}
spec:
  nodeName: n1
  readinessGates: [{{conditionType: example.com/ready}}]
  initContainers:
  - {{name: init, image: busybox}}
  - {{name: side, image: envoy, restartPolicy: Always}}
  containers: [{{name: main, image: nginx}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: stuck}}
spec:
  initContainers: [{{name: init, image: busybox}}]
  containers: [{{name: main, image: nginx}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: leaving, finalizers: [example.com/hold]}}
spec:
  containers: [{{name: main, image: nginx}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings}}
data: {{a: "1", b: "2"}}
binaryData: {{c: AAE=}}
---
apiVersion: v1
kind: Secret
metadata: {{name: creds}}
stringData: {{user: admin, pass: hunter2}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: robot}}
secrets: [{{name: creds}}]
---
apiVersion: v1
kind: Event
metadata: {{name: app.1}}
involvedObject: {{kind: Pod, name: app, namespace: default, fieldPath: "spec.containers{{main}}"}}
type: Warning
reason: BackOff
message: "Back-off restarting failed container"
source: {{component: kubelet, host: n1}}
firstTimestamp: "{first}"
lastTimestamp: "{last}"
count: 5
"#,
        first = minutes_ago(60),
        last = minutes_ago(20),
    )
}

fn set_core_statuses(s: &TestServer) {
    let terminated = json!({"exitCode": 0, "reason": "Completed", "startedAt": minutes_ago(50), "finishedAt": minutes_ago(40)});
    let running = json!({"running": {"startedAt": minutes_ago(30)}});
    let app = json!({"phase": "Running", "podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.7"}],
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "False"},
            {"type": "example.com/ready", "status": "False"}],
        "initContainerStatuses": [
            {"name": "init", "image": "busybox", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": terminated}},
            {"name": "side", "image": "envoy", "imageID": "", "ready": true, "started": true,
                "restartCount": 1, "state": running,
                "lastState": {"terminated": {"exitCode": 1, "startedAt": minutes_ago(50), "finishedAt": minutes_ago(30)}}}],
        "containerStatuses": [
            {"name": "main", "image": "nginx", "imageID": "", "ready": true, "restartCount": 1,
                "state": running}]});
    patch_status(s, "pod", "app", &app);
    let stuck = json!({"phase": "Pending", "initContainerStatuses": [
        {"name": "init", "image": "busybox", "imageID": "", "ready": false, "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]});
    patch_status(s, "pod", "stuck", &stuck);
    let node = json!({
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "lastHeartbeatTime": minutes_ago(1), "lastTransitionTime": minutes_ago(50)}],
        "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.1.0.1"}],
        "nodeInfo": {"machineID": "m", "systemUUID": "u", "bootID": "b", "kernelVersion": "6.1.0-13-amd64",
            "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://1.7.0",
            "kubeletVersion": "v1.37.0", "kubeProxyVersion": "", "operatingSystem": "linux",
            "architecture": "amd64"}});
    patch_status(s, "node", "n1", &node);
}

#[test]
fn core_kinds_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(&core_objects());
    set_core_statuses(&s);
    s.ok(&["cordon", "n1"]);
    s.ok(&["delete", "pod", "leaving", "--wait=false"]);

    let (header, row) = table(&s, &["pods", "app", "-o", "wide"]);
    let want = [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED NODE",
        "READINESS GATES",
    ];
    assert_eq!(header, want);
    let want = [
        "app",
        "2/2",
        "Running",
        "2 (30m ago)",
        "10.0.0.7",
        "n1",
        "<none>",
        "0/1",
    ];
    assert_row(&row, 4, &want);
    let (_, row) = table(&s, &["pods", "stuck"]);
    assert_row(&row, 4, &["stuck", "0/1", "Init:CrashLoopBackOff", "4"]);
    let (_, row) = table(&s, &["pods", "leaving"]);
    assert_row(&row, 4, &["leaving", "0/1", "Terminating", "0"]);

    let (header, row) = table(&s, &["nodes", "n1", "-o", "wide"]);
    let want = [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ];
    assert_eq!(header, want);
    let want = [
        "n1",
        "Ready,SchedulingDisabled",
        "control-plane,edge",
        "v1.37.0",
        "10.1.0.1",
        "<none>",
        "Debian GNU/Linux 12 (bookworm)",
        "6.1.0-13-amd64",
        "containerd://1.7.0",
    ];
    assert_row(&row, 3, &want);

    let (header, row) = table(&s, &["configmaps", "settings"]);
    assert_eq!(header, ["NAME", "DATA", "AGE"]);
    assert_row(&row, 2, &["settings", "3"]);
    let (header, row) = table(&s, &["secrets", "creds"]);
    assert_eq!(header, ["NAME", "TYPE", "DATA", "AGE"]);
    assert_row(&row, 3, &["creds", "Opaque", "2"]);
    let (header, row) = table(&s, &["serviceaccounts", "robot"]);
    assert_eq!(header, ["NAME", "SECRETS", "AGE"]);
    assert_row(&row, 2, &["robot", "1"]);
    let (header, row) = table(&s, &["namespaces", "default"]);
    assert_eq!(header, ["NAME", "STATUS", "AGE"]);
    assert_eq!(row[..2], ["default", "Active"]);

    let (header, row) = table(&s, &["events"]);
    assert_eq!(header, ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    assert_eq!(
        row,
        [
            "20m",
            "Warning",
            "BackOff",
            "pod/app",
            "Back-off restarting failed container"
        ]
    );
    let (header, row) = table(&s, &["events", "-o", "wide"]);
    let want = [
        "LAST SEEN",
        "TYPE",
        "REASON",
        "OBJECT",
        "SUBOBJECT",
        "SOURCE",
        "MESSAGE",
        "FIRST SEEN",
        "COUNT",
        "NAME",
    ];
    assert_eq!(header, want);
    let want = [
        "20m",
        "Warning",
        "BackOff",
        "pod/app",
        "spec.containers{main}",
        "kubelet, n1",
        "Back-off restarting failed container",
        "60m",
        "5",
        "app.1",
    ];
    assert_eq!(row, want);

    let pods = raw_table(&s, "/api/v1/namespaces/default/pods/app");
    let shapes = column_shapes(&pods);
    let names: Vec<(&str, &str, i64)> = shapes
        .iter()
        .map(|(n, t, _, p)| (n.as_str(), t.as_str(), *p))
        .collect();
    let want = [
        ("Name", "string", 0),
        ("Ready", "string", 0),
        ("Status", "string", 0),
        ("Restarts", "string", 0),
        ("Age", "string", 0),
        ("IP", "string", 1),
        ("Node", "string", 1),
        ("Nominated Node", "string", 1),
        ("Readiness Gates", "string", 1),
    ];
    assert_eq!(names, want);
    assert_eq!(pods["columnDefinitions"][0]["format"], "name");
    let description = pods["columnDefinitions"][4]["description"]
        .as_str()
        .unwrap_or("");
    assert!(
        description.starts_with("CreationTimestamp is a timestamp"),
        "{description}"
    );
    assert!(
        description.ends_with("api-conventions.md#metadata"),
        "{description}"
    );
    let cells = pods["rows"][0]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        cells.get(..4).unwrap_or_default(),
        [
            json!("app"),
            json!("2/2"),
            json!("Running"),
            json!("2 (30m ago)")
        ]
    );
    let secrets = raw_table(&s, "/api/v1/namespaces/default/secrets/creds");
    assert_eq!(secrets["columnDefinitions"][2]["type"], "string");
    assert_eq!(secrets["rows"][0]["cells"][2], 2);
}
