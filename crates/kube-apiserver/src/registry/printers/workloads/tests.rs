//! Cells of representative objects, as upstream's print functions give them.

use chrono::{SecondsFormat, TimeDelta, Utc};
use serde_json::{json, Value};

use super::super::pod;
use super::*;

/// An RFC 3339 timestamp `secs` seconds ago.
fn ago(secs: i64) -> String {
    (Utc::now() - TimeDelta::seconds(secs)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn pod_with(status: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": status})
}

/// READY, STATUS and RESTARTS of a pod.
fn pod_cells(pod: &Value) -> (String, String, String) {
    let row = pod::row(pod);
    let s = |i: usize| row[i].as_str().unwrap_or("?").to_owned();
    (s(1), s(2), s(3))
}

fn running(ready: bool, restarts: i64) -> Value {
    json!({"ready": ready, "restartCount": restarts, "state": {"running": {}}})
}

#[test]
fn running_pods_count_ready_containers_and_restarts_with_age() {
    let mut b = running(false, 3);
    b["lastState"] = json!({"terminated": {"exitCode": 1, "finishedAt": ago(1800)}});
    let pod = pod_with(json!({"phase": "Running", "containerStatuses": [running(true, 0), b]}));
    let cells = pod_cells(&pod);
    assert_eq!(
        cells,
        ("1/2".into(), "Running".into(), "3 (30m ago)".into())
    );
    let quiet = pod_with(json!({"phase": "Pending"}));
    assert_eq!(
        pod_cells(&quiet),
        ("0/2".into(), "Pending".into(), "0".into())
    );
}

#[test]
fn container_reasons_win_over_the_phase() {
    let waiting = json!({"restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}});
    let pod =
        pod_with(json!({"phase": "Running", "containerStatuses": [running(true, 0), waiting]}));
    assert_eq!(pod_cells(&pod).1, "CrashLoopBackOff");
    let signal = json!({"state": {"terminated": {"exitCode": 137, "signal": 9}}});
    let pod = pod_with(json!({"phase": "Failed", "containerStatuses": [signal]}));
    assert_eq!(pod_cells(&pod).1, "Signal:9");
    let code = json!({"state": {"terminated": {"exitCode": 2}}});
    let pod = pod_with(json!({"phase": "Failed", "containerStatuses": [code]}));
    assert_eq!(pod_cells(&pod).1, "ExitCode:2");
    let done = json!({"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
    let pod = pod_with(json!({"phase": "Succeeded", "containerStatuses": [done.clone(), done]}));
    assert_eq!(pod_cells(&pod).1, "Completed");
}

#[test]
fn completed_containers_beside_running_ones_print_running_or_not_ready() {
    let done = json!({"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
    let mut pod =
        pod_with(json!({"phase": "Running", "containerStatuses": [done, running(true, 0)]}));
    assert_eq!(pod_cells(&pod).1, "NotReady");
    pod["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
    assert_eq!(pod_cells(&pod).1, "Running");
}

fn with_init(pod: &mut Value, statuses: Value) {
    pod["spec"]["initContainers"] = json!([{"name": "i1"}, {"name": "i2"}]);
    pod["status"]["initContainerStatuses"] = statuses;
}

#[test]
fn init_containers_name_the_initialization_step() {
    let ok = json!({"name": "i1", "state": {"terminated": {"exitCode": 0}}});
    let cases = [
        (json!({"name": "i2", "state": {"running": {}}}), "Init:1/2"),
        (
            json!({"name": "i2", "state": {"waiting": {"reason": "PodInitializing"}}}),
            "Init:1/2",
        ),
        (
            json!({"name": "i2", "state": {"waiting": {"reason": "ImagePullBackOff"}}}),
            "Init:ImagePullBackOff",
        ),
        (
            json!({"name": "i2", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}),
            "Init:Error",
        ),
        (
            json!({"name": "i2", "state": {"terminated": {"exitCode": 3}}}),
            "Init:ExitCode:3",
        ),
        (
            json!({"name": "i2", "state": {"terminated": {"exitCode": 1, "signal": 15}}}),
            "Init:Signal:15",
        ),
    ];
    for (second, want) in cases {
        let mut pod = pod_with(json!({"phase": "Pending"}));
        with_init(&mut pod, json!([ok.clone(), second]));
        assert_eq!(pod_cells(&pod).1, want);
    }
}

#[test]
fn initializing_pods_count_init_restarts_only() {
    let mut pod = pod_with(json!({"phase": "Pending", "containerStatuses": [
        {"restartCount": 7, "state": {"waiting": {"reason": "PodInitializing"}}}]}));
    with_init(
        &mut pod,
        json!([{"name": "i1", "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]),
    );
    assert_eq!(
        pod_cells(&pod),
        ("0/2".into(), "Init:CrashLoopBackOff".into(), "2".into())
    );
}

#[test]
fn started_sidecars_count_as_ready_containers() {
    let mut pod = json!({"metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "side", "restartPolicy": "Always"}],
            "containers": [{"name": "main"}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "side", "started": true, "ready": true,
                "restartCount": 2, "state": {"running": {}}}],
            "containerStatuses": [running(true, 1)]}});
    assert_eq!(
        pod_cells(&pod),
        ("2/2".into(), "Running".into(), "3".into())
    );
    // A sidecar not yet started holds the pod in initialization.
    pod["status"]["initContainerStatuses"][0]["started"] = json!(false);
    pod["status"]["conditions"] = json!([]);
    assert_eq!(
        pod_cells(&pod),
        ("0/2".into(), "Init:0/1".into(), "2".into())
    );
}

#[test]
fn deleted_and_gated_pods() {
    let mut pod = pod_with(json!({"phase": "Running", "containerStatuses": [running(true, 0)]}));
    pod["metadata"]["deletionTimestamp"] = json!(ago(1));
    assert_eq!(pod_cells(&pod).1, "Terminating");
    pod["status"]["reason"] = json!("NodeLost");
    assert_eq!(pod_cells(&pod).1, "Unknown");
    let mut done = pod_with(json!({"phase": "Succeeded"}));
    done["metadata"]["deletionTimestamp"] = json!(ago(1));
    assert_eq!(pod_cells(&done).1, "Succeeded");
    let gated = pod_with(json!({"phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}));
    assert_eq!(pod_cells(&gated).1, "SchedulingGated");
}

#[test]
fn pod_wide_cells() {
    let mut pod = pod_with(json!({"phase": "Running", "podIP": "10.0.0.9",
        "podIPs": [{"ip": "10.0.0.9"}, {"ip": "fd00::9"}], "nominatedNodeName": "n2",
        "conditions": [{"type": "g1", "status": "True"}, {"type": "g2", "status": "False"}]}));
    pod["spec"]["nodeName"] = json!("n1");
    pod["spec"]["readinessGates"] = json!([{"conditionType": "g1"}, {"conditionType": "g2"}]);
    assert_eq!(
        pod::row(&pod)[5..],
        [json!("10.0.0.9"), json!("n1"), json!("n2"), json!("1/2")]
    );
    let bare = pod_with(json!({}));
    assert_eq!(
        pod::row(&bare)[5..],
        [
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn node_rows() {
    let node = json!({"metadata": {"name": "n1", "labels": {
            "node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "",
            "node-role.kubernetes.io/": "", "kubernetes.io/role": "master"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.1.0.1"}],
            "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Debian"}}});
    let row = node_row(&node);
    assert_eq!(row[1], "Ready,SchedulingDisabled");
    assert_eq!(row[2], "control-plane,master,worker");
    assert_eq!(row[4], "v1.37.0");
    assert_eq!(
        row[5..],
        [
            json!("10.1.0.1"),
            json!("<none>"),
            json!("Debian"),
            json!("<unknown>"),
            json!("<unknown>")
        ]
    );
    let bare = node_row(&json!({"metadata": {"name": "n2"}}));
    assert_eq!((&bare[1], &bare[2]), (&json!("Unknown"), &json!("<none>")));
    let not_ready =
        node_row(&json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}));
    assert_eq!(not_ready[1], "NotReady");
}

#[test]
fn simple_core_rows() {
    let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!(configmap_row(&cm)[1], 3);
    assert_eq!(configmap_row(&json!({}))[1], 0);
    let secret = json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"k": "dg=="}});
    assert_eq!(secret_row(&secret)[1..3], [json!("Opaque"), json!(1)]);
    let sa = json!({"metadata": {"name": "default"}, "secrets": [{"name": "x"}]});
    assert_eq!(service_account_row(&sa)[1], 1);
    let ns = json!({"metadata": {"name": "n"}, "status": {"phase": "Terminating"}});
    assert_eq!(namespace_row(&ns)[1], "Terminating");
}

#[test]
fn core_events() {
    let ev = json!({"metadata": {"name": "p.1"}, "type": "Warning", "reason": "BackOff",
        "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
        "source": {"component": "kubelet", "host": "n1"}, "message": " Back-off restarting \n",
        "firstTimestamp": ago(3600), "lastTimestamp": ago(1200), "count": 0});
    let row = core_event_row(&ev);
    let want = [
        "20m",
        "Warning",
        "BackOff",
        "pod/p",
        "spec.containers{a}",
        "kubelet, n1",
        "Back-off restarting",
        "60m",
    ];
    assert_eq!(row[..8], want.map(|s| json!(s)));
    assert_eq!(row[8..], [json!(1), json!("p.1")]);
    // No timestamps: the event time, else unknown; a series gives count and last seen.
    let ev = json!({"involvedObject": {"kind": "Node"}, "eventTime": ago(7200),
        "reportingComponent": "scheduler", "reportingInstance": "s-1",
        "series": {"count": 4, "lastObservedTime": ago(900)}});
    let row = core_event_row(&ev);
    assert_eq!(
        (&row[0], &row[3], &row[5], &row[7], &row[8]),
        (
            &json!("15m"),
            &json!("node"),
            &json!("scheduler, s-1"),
            &json!("120m"),
            &json!(4)
        )
    );
    let row = core_event_row(&json!({"count": 2}));
    assert_eq!(
        (&row[0], &row[7], &row[8]),
        (&json!("<unknown>"), &json!("<unknown>"), &json!(2))
    );
}

#[test]
fn events_k8s_io_events_print_as_core_ones() {
    let ev = json!({"metadata": {"name": "e"}, "type": "Normal", "reason": "Scheduled",
        "regarding": {"kind": "Pod", "name": "p"}, "note": "assigned", "eventTime": ago(1500),
        "reportingController": "default-scheduler", "reportingInstance": "",
        "deprecatedCount": 3});
    let row = events_event_row(&ev);
    let want = [
        json!("25m"),
        json!("Normal"),
        json!("Scheduled"),
        json!("pod/p"),
        json!(""),
        json!("default-scheduler"),
        json!("assigned"),
        json!("25m"),
        json!(3),
        json!("e"),
    ];
    assert_eq!(row, want);
}

fn workload(spec: Value, status: Value) -> Value {
    json!({"metadata": {"name": "w"}, "spec": spec, "status": status})
}

#[test]
fn deployment_rows() {
    let template = json!({"spec": {"containers": [
        {"name": "web", "image": "nginx"}, {"name": "side", "image": "busybox"}]}});
    let d = workload(
        json!({"replicas": 3, "template": template,
            "selector": {"matchLabels": {"tier": "web", "app": "shop"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["qa", "prod"]}]}}),
        json!({"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 1}),
    );
    let want = [json!("w"), json!("2/3"), json!(3), json!(1)];
    let row = deployment_row(&d);
    assert_eq!(row[..4], want);
    assert_eq!(
        row[5..],
        [
            json!("web,side"),
            json!("nginx,busybox"),
            json!("app=shop,env in (prod,qa),tier=web")
        ]
    );
    let bare = deployment_row(&workload(json!({}), json!({})));
    assert_eq!(bare[1], "0/0");
    assert_eq!(bare[5..], [json!(""), json!(""), json!("")]);
    let bad = workload(
        json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}}),
        json!({}),
    );
    assert_eq!(deployment_row(&bad)[7], "<invalid>");
}

#[test]
fn replicaset_statefulset_daemonset_rows() {
    let spec = json!({"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
        "template": {"spec": {"nodeSelector": {"zone": "b", "disk": "ssd"},
            "containers": [{"name": "c", "image": "i"}]}}});
    let rs = replicaset_row(&workload(
        spec.clone(),
        json!({"replicas": 2, "readyReplicas": 1}),
    ));
    assert_eq!(rs[1..4], [json!(2), json!(2), json!(1)]);
    assert_eq!(rs[5..], [json!("c"), json!("i"), json!("app=a")]);
    let sts = statefulset_row(&workload(spec.clone(), json!({"readyReplicas": 1})));
    assert_eq!(sts[1], "1/2");
    assert_eq!(sts.len(), 5);
    let status = json!({"desiredNumberScheduled": 3, "currentNumberScheduled": 2, "numberReady": 1,
        "updatedNumberScheduled": 2, "numberAvailable": 1});
    let ds = daemonset_row(&workload(spec, status));
    assert_eq!(
        ds[1..7],
        [
            json!(3),
            json!(2),
            json!(1),
            json!(2),
            json!(1),
            json!("disk=ssd,zone=b")
        ]
    );
    let bare = daemonset_row(&workload(json!({}), json!({})));
    assert_eq!((&bare[6], &bare[10]), (&json!("<none>"), &json!("<none>")));
}

#[test]
fn job_status_completions_and_duration() {
    let condition = |kind: &str| json!({"conditions": [{"type": kind, "status": "True"}]});
    let cases = [
        (condition("Complete"), "Complete"),
        (condition("Failed"), "Failed"),
        (condition("Suspended"), "Suspended"),
        (condition("FailureTarget"), "FailureTarget"),
        (
            json!({"conditions": [{"type": "Complete", "status": "False"}]}),
            "Running",
        ),
        (json!({}), "Running"),
    ];
    for (status, want) in cases {
        assert_eq!(job_row(&workload(json!({}), status))[1], want);
    }
    let mut deleted = workload(json!({}), condition("Suspended"));
    deleted["metadata"]["deletionTimestamp"] = json!(ago(1));
    assert_eq!(job_row(&deleted)[1], "Terminating");

    let completions = |spec: Value| job_row(&workload(spec, json!({"succeeded": 1})))[2].clone();
    assert_eq!(
        completions(json!({"completions": 3, "parallelism": 2})),
        "1/3"
    );
    assert_eq!(completions(json!({"parallelism": 4})), "1/1 of 4");
    assert_eq!(completions(json!({"parallelism": 1})), "1/1");

    let duration = |status: Value| job_row(&workload(json!({}), status))[3].clone();
    assert_eq!(
        duration(
            json!({"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:03:00Z"})
        ),
        "3m"
    );
    assert_eq!(duration(json!({"startTime": ago(1800)})), "30m");
    assert_eq!(duration(json!({})), "");
}

#[test]
fn cronjob_rows() {
    let c = json!({"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *",
            "timeZone": "Etc/UTC", "suspend": true,
            "jobTemplate": {"spec": {"selector": {"matchLabels": {"job": "x"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}},
        "status": {"active": [{"name": "j1"}, {"name": "j2"}], "lastScheduleTime": ago(1980)}});
    let row = cronjob_row(&c);
    let want = [
        json!("cj"),
        json!("*/5 * * * *"),
        json!("Etc/UTC"),
        json!("True"),
        json!(2),
        json!("33m"),
    ];
    assert_eq!(row[..6], want);
    assert_eq!(row[7..], [json!("c"), json!("busybox"), json!("job=x")]);
    let bare = cronjob_row(&json!({"spec": {"schedule": "@daily"}}));
    assert_eq!(
        bare[2..6],
        [json!("<none>"), json!("<unset>"), json!(0), json!("<none>")]
    );
    assert_eq!(bare[7..], [json!(""), json!(""), json!("<none>")]);
}

/// Name, type and priority of each column.
fn shape(columns: Vec<TableColumn>) -> Vec<(&'static str, &'static str, u32)> {
    columns
        .iter()
        .map(|c| (c.name, c.kind, c.priority))
        .collect()
}

#[test]
fn columns_match_upstream_definitions() {
    assert_eq!(
        shape(pod::columns()),
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1)
        ]
    );
    assert_eq!(
        shape(event_columns()),
        [
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string", 0),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1)
        ]
    );
    assert_eq!(
        shape(cronjob_columns())[1..6],
        [
            ("Schedule", "string", 0),
            ("Timezone", "string", 0),
            ("Suspend", "boolean", 0),
            ("Active", "integer", 0),
            ("Last Schedule", "string", 0)
        ]
    );
    assert_eq!(
        shape(deployment_columns())[1..4],
        [
            ("Ready", "string", 0),
            ("Up-to-date", "string", 0),
            ("Available", "string", 0)
        ]
    );
    assert_eq!(shape(node_columns()).iter().filter(|c| c.2 == 1).count(), 5);
    assert_eq!(shape(secret_columns())[2], ("Data", "string", 0));
    for p in PRINTERS {
        let (columns, row) = ((p.columns)(), (p.row)(&json!({})));
        assert_eq!(columns.len(), row.len(), "{} cells", p.kind);
    }
}
