//! API Priority and Fairness: the bootstrap configuration kubectl sees,
//! the response headers naming the matched schema and level, the Dangling
//! condition, 429s with Retry-After from a level without seats, the debug
//! dumps, a borrowing level's limits in /metrics, and restoration of
//! deleted bootstrap objects.

use std::process::Command;
use std::time::Duration;

use crate::harness::TestServer;
use crate::support::http::split_response;
use crate::support::wait::eventually;

/// How long the server's background work may take here.
const WAIT: Duration = Duration::from_secs(20);

/// A raw request as `user` (impersonated by the admin): status code,
/// headers (lower-cased names) and body.
fn request_as(s: &TestServer, user: Option<&str>, path: &str) -> (u16, String, String) {
    let pki = s.dir.path().join("pki");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-i", "--cacert"])
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"));
    if let Some(user) = user {
        cmd.args(["-H", &format!("Impersonate-User: {user}")]);
        cmd.args(["-H", "Impersonate-Group: system:authenticated"]);
    }
    cmd.arg(format!("https://127.0.0.1:{}{path}", s.port));
    split_response(&cmd.output().expect("curl runs").stdout)
}

/// `count` concurrent GETs of `path` as `user`, multiplexed over one
/// HTTP/2 connection so that they arrive together: each one's status code
/// and `Retry-After`.
fn burst_as(s: &TestServer, user: &str, path: &str, count: usize) -> Vec<(u16, String)> {
    let pki = s.dir.path().join("pki");
    let url = format!("https://127.0.0.1:{}{path}", s.port);
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--http2", "-Z", "--parallel-max", "100", "--cacert"])
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .args(["-H", &format!("Impersonate-User: {user}")])
        .args(["-H", "Impersonate-Group: system:authenticated"])
        .args([
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %header{retry-after}\\n",
        ]);
    for _ in 0..count {
        cmd.arg(&url);
    }
    let out = cmd.output().expect("curl runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (code, retry) = l.split_once(' ').unwrap_or((l, ""));
            Some((code.parse().ok()?, retry.trim().to_owned()))
        })
        .collect()
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

fn names(s: &TestServer, resource: &str) -> Vec<String> {
    let out = s.ok(&["get", resource, "-o", "jsonpath={.items[*].metadata.name}"]);
    let mut names: Vec<String> = out.split_whitespace().map(str::to_owned).collect();
    names.sort();
    names
}

fn bootstrap_configuration_is_served(s: &TestServer) {
    eventually("the bootstrap flow schemas", WAIT, || {
        names(s, "flowschemas").len() == 11
    });
    assert_eq!(
        names(s, "flowschemas"),
        [
            "catch-all",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes"
        ]
    );
    assert_eq!(
        names(s, "prioritylevelconfigurations"),
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    let annotation = s.ok(&[
        "get",
        "flowschema",
        "global-default",
        "-o",
        "jsonpath={.metadata.annotations.apf\\.kubernetes\\.io/autoupdate-spec}",
    ]);
    assert_eq!(annotation, "true");
    // The consumer marks every bootstrap schema as not dangling.
    eventually("the Dangling condition", WAIT, || {
        s.ok(&[
            "get",
            "flowschema",
            "service-accounts",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Dangling\")].reason}",
        ]) == "Found"
    });
}

crate::harness::on_both_backends!(bootstrap_configuration_is_served);

#[test]
fn responses_name_the_matched_schema_and_level() {
    let s = TestServer::start();
    eventually("the bootstrap flow schemas", WAIT, || {
        names(&s, "flowschemas").len() == 11
    });
    let uid = |resource: &str, name: &str| {
        s.ok(&["get", resource, name, "-o", "jsonpath={.metadata.uid}"])
    };
    let (exempt_fs, exempt_pl) = (
        uid("flowschema", "exempt"),
        uid("prioritylevelconfiguration", "exempt"),
    );
    let global_fs = uid("flowschema", "global-default");
    let global_pl = uid("prioritylevelconfiguration", "global-default");
    // The consumer picks up the stored objects (and their UIDs) shortly.
    eventually("the stored configuration in use", WAIT, || {
        let (_, head, _) = request_as(&s, Some("alice"), "/api/v1/namespaces/default/configmaps");
        header(&head, "x-kubernetes-pf-flowschema-uid") == Some(global_fs.as_str())
    });
    let (_, head, _) = request_as(&s, Some("alice"), "/api/v1/namespaces/default/configmaps");
    assert_eq!(
        header(&head, "x-kubernetes-pf-prioritylevel-uid"),
        Some(global_pl.as_str())
    );
    // The admin is in system:masters: exempt.
    let (code, head, _) = request_as(&s, None, "/api/v1/namespaces");
    assert_eq!(code, 200);
    assert_eq!(
        header(&head, "x-kubernetes-pf-flowschema-uid"),
        Some(exempt_fs.as_str())
    );
    assert_eq!(
        header(&head, "x-kubernetes-pf-prioritylevel-uid"),
        Some(exempt_pl.as_str())
    );
}

#[test]
fn a_level_without_seats_rejects_and_a_missing_level_dangles() {
    // Impersonated users read pods: this is about seats, not permissions.
    let s = TestServer::start_with(&["--authorization-mode=AlwaysAllow"]);
    eventually("the bootstrap flow schemas", WAIT, || {
        names(&s, "flowschemas").len() == 11
    });
    s.apply_yaml(
        r#"apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: orphaned
spec:
  priorityLevelConfiguration: {name: not-there}
  matchingPrecedence: 300
  rules:
  - subjects: [{kind: User, user: {name: bob}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
"#,
    );
    eventually("the orphaned schema to dangle", WAIT, || {
        s.ok(&[
            "get",
            "flowschema",
            "orphaned",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Dangling\")].status}",
        ]) == "True"
    });
    let message = s.ok(&[
        "get",
        "flowschema",
        "orphaned",
        "-o",
        "jsonpath={.status.conditions[0].message}",
    ]);
    assert_eq!(
        message,
        "This FlowSchema references the PriorityLevelConfiguration object named \"not-there\" but there is no such object"
    );
    s.apply_yaml(
        r#"apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: no-seats
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: throttle-carol
spec:
  priorityLevelConfiguration: {name: no-seats}
  matchingPrecedence: 200
  rules:
  - subjects: [{kind: User, user: {name: carol}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
"#,
    );
    // A level without seats runs one request at a time (as upstream, a
    // request wider than its level runs alone): of requests arriving
    // together, the others are refused.
    let pods = "/api/v1/namespaces/default/pods";
    let mut refused = Vec::new();
    eventually("carol to be throttled", WAIT, || {
        refused = burst_as(&s, "carol", pods, 40)
            .into_iter()
            .filter(|(code, _)| *code == 429)
            .collect();
        !refused.is_empty()
    });
    for (_, retry_after) in &refused {
        let seconds: u32 = retry_after.parse().unwrap_or(0);
        assert!((1..=32).contains(&seconds), "Retry-After {retry_after:?}");
    }
    // The debug dump counts the refusals of the level.
    let dump = s.ok(&[
        "get",
        "--raw",
        "/debug/api_priority_and_fairness/dump_priority_levels",
    ]);
    assert!(dump.starts_with("PriorityLevelName,"), "{dump}");
    let row: Vec<&str> = dump
        .lines()
        .find(|l| l.starts_with("no-seats,"))
        .map(|l| l.split(',').map(str::trim).collect())
        .unwrap_or_default();
    assert_eq!(row.len(), 10, "{dump}");
    let rejected: u64 = row[7].parse().unwrap_or(0);
    assert!(rejected >= refused.len() as u64, "{dump}");
    // Others are unaffected.
    assert_eq!(
        request_as(&s, Some("dave"), "/api/v1/namespaces/default/pods").0,
        200
    );
    assert_eq!(
        request_as(&s, None, "/api/v1/namespaces/default/pods").0,
        200
    );
}

#[test]
fn deleted_bootstrap_objects_return_and_edited_ones_are_kept() {
    let mut s = TestServer::start();
    eventually("the bootstrap flow schemas", WAIT, || {
        names(&s, "flowschemas").len() == 11
    });
    s.ok(&["delete", "flowschema", "kube-scheduler"]);
    s.ok(&["delete", "prioritylevelconfiguration", "catch-all"]);
    // An operator who turns auto-update off keeps their edit.
    s.ok(&[
        "annotate",
        "--overwrite",
        "flowschema",
        "service-accounts",
        "apf.kubernetes.io/autoupdate-spec=false",
    ]);
    s.ok(&[
        "patch",
        "flowschema",
        "service-accounts",
        "--type=merge",
        "-p",
        r#"{"spec":{"matchingPrecedence":8000}}"#,
    ]);
    s.restart();
    eventually("the bootstrap objects to return", WAIT, || {
        names(&s, "flowschemas").len() == 11 && names(&s, "prioritylevelconfigurations").len() == 8
    });
    let precedence = s.ok(&[
        "get",
        "flowschema",
        "service-accounts",
        "-o",
        "jsonpath={.spec.matchingPrecedence}",
    ]);
    assert_eq!(precedence, "8000");
}

#[test]
fn without_priority_and_fairness_no_headers_are_set() {
    let s = TestServer::start_with(&["--enable-priority-and-fairness=false"]);
    let (code, head, _) = request_as(&s, None, "/api/v1/namespaces");
    assert_eq!(code, 200);
    assert_eq!(header(&head, "x-kubernetes-pf-flowschema-uid"), None);
    let out = Command::new(crate::harness::binary())
        .args([
            "--max-requests-inflight=0",
            "--max-mutating-requests-inflight=0",
        ])
        .arg(format!(
            "--data-dir={}",
            s.dir.path().join("other").display()
        ))
        .output()
        .expect("the server runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("they must add up to something positive"),
        "{stderr}"
    );
}

#[test]
fn the_queue_and_request_dumps_have_upstreams_columns() {
    let s = TestServer::start();
    let raw = |path: &str| s.ok(&["get", "--raw", path]);
    let columns =
        |line: &str| -> Vec<String> { line.split(',').map(|c| c.trim().to_owned()).collect() };
    let queues = raw("/debug/api_priority_and_fairness/dump_queues");
    assert_eq!(
        columns(queues.lines().next().unwrap_or_default()),
        [
            "PriorityLevelName",
            "Index",
            "PendingRequests",
            "ExecutingRequests",
            "SeatsInUse",
            "NextDispatchR",
            "InitialSeatsSum",
            "MaxSeatsSum",
            "TotalWorkSum"
        ]
    );
    eventually("the bootstrap levels' queues", WAIT, || {
        raw("/debug/api_priority_and_fairness/dump_queues")
            .lines()
            .any(|l| l.starts_with("workload-low,"))
    });
    let queues = raw("/debug/api_priority_and_fairness/dump_queues");
    // workload-low has 128 queues, each with its virtual time.
    let rows: Vec<Vec<String>> = queues
        .lines()
        .filter(|l| l.starts_with("workload-low,"))
        .map(columns)
        .collect();
    assert_eq!(rows.len(), 128, "{queues}");
    assert_eq!(rows[127][1], "127");
    assert!(rows[0][5].ends_with("ss"), "{queues}");
    let requests = raw("/debug/api_priority_and_fairness/dump_requests");
    let header = columns(requests.lines().next().unwrap_or_default());
    assert_eq!(
        header,
        [
            "PriorityLevelName",
            "FlowSchemaName",
            "QueueIndex",
            "RequestIndexInQueue",
            "FlowDistingsher",
            "ArriveTime",
            "InitialSeats",
            "FinalSeats",
            "AdditionalLatency",
            "StartTime"
        ]
    );
    let detailed = raw("/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1");
    let lines: Vec<Vec<String>> = detailed.lines().map(columns).collect();
    assert_eq!(
        lines[0][10..],
        [
            "UserName",
            "Verb",
            "APIPath",
            "Namespace",
            "Name",
            "APIVersion",
            "Resource",
            "SubResource"
        ]
    );
    // The dump's own request runs at the exempt level, without a queue.
    let own = lines
        .iter()
        .find(|l| {
            l.get(12).map(String::as_str) == Some("/debug/api_priority_and_fairness/dump_requests")
        })
        .unwrap_or_else(|| panic!("no row for the dump's request in\n{detailed}"));
    assert_eq!(own[..4], ["exempt", "exempt", "-1", "-1"]);
    assert_eq!(own[10], "kubernetes-admin");
    assert_eq!(own[11], "get");
}

#[test]
fn a_level_that_may_borrow_shows_its_limits_in_metrics() {
    let s = TestServer::start();
    eventually("the bootstrap flow schemas", WAIT, || {
        names(&s, "flowschemas").len() == 11
    });
    s.apply_yaml(
        r#"apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: borrower
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    lendablePercent: 40
    borrowingLimitPercent: 50
    limitResponse: {type: Queue, queuing: {queues: 8, handSize: 2, queueLengthLimit: 10}}
"#,
    );
    // 600 seats over 255 shares: 24 nominal seats, 10 of them lendable,
    // and 12 more that may be borrowed.
    let gauge = |text: &str, name: &str| -> Option<String> {
        let prefix = format!("apiserver_flowcontrol_{name}{{priority_level=\"borrower\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()).map(str::to_owned))
    };
    let mut metrics = String::new();
    eventually("the borrower's limits", WAIT, || {
        metrics = s.ok(&["get", "--raw", "/metrics"]);
        gauge(&metrics, "nominal_limit_seats").is_some()
    });
    assert_eq!(
        gauge(&metrics, "nominal_limit_seats").as_deref(),
        Some("24")
    );
    assert_eq!(gauge(&metrics, "lower_limit_seats").as_deref(), Some("14"));
    assert_eq!(gauge(&metrics, "upper_limit_seats").as_deref(), Some("36"));
    let current: u64 = gauge(&metrics, "current_limit_seats")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((14..=36).contains(&current), "{metrics}");
    assert!(gauge(&metrics, "target_seats").is_some(), "{metrics}");
    assert!(
        gauge(&metrics, "demand_seats_smoothed").is_some(),
        "{metrics}"
    );
    assert!(
        metrics.contains("apiserver_flowcontrol_seat_fair_frac "),
        "{metrics}"
    );
    // Waits and runs are timed.
    for series in [
        "apiserver_flowcontrol_request_wait_duration_seconds_count{priority_level=\"exempt\",flow_schema=\"exempt\",execute=\"true\"}",
        "apiserver_flowcontrol_request_execution_seconds_count{priority_level=\"exempt\",flow_schema=\"exempt\",type=\"regular\"}",
    ] {
        assert!(metrics.contains(series), "{series} missing from {metrics}");
    }
    // Requests are counted in seats as they run.
    assert!(
        metrics
            .contains("apiserver_flowcontrol_work_estimated_seats_count{priority_level=\"exempt\""),
        "{metrics}"
    );
}
