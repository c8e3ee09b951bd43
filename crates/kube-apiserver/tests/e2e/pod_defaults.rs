//! Pods, templates and replication controllers get upstream's v1 defaults
//! (`SetDefaults_*` of core/v1): a volume without a source is an emptyDir,
//! projected and secret volumes get mode 0644, probes get their timings and
//! httpGet its path and scheme, `serviceAccount` mirrors
//! `serviceAccountName`, and a stored pod replaced as read is unchanged;
//! the workload kinds get theirs (`SetDefaults_*` of apps/v1, batch/v1 and
//! autoscaling/v2) and templates only the pod spec's.

use serde_json::{json, Value};

use crate::harness::TestServer;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: defaulted}
spec:
  volumes:
  - name: scratch
  - name: creds
    secret: {secretName: creds}
  containers:
  - name: app
    image: nginx:1.27
    livenessProbe:
      httpGet: {port: 80}
    env:
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
"#;

const RC: &str = r#"
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  template:
    metadata: {labels: {app: rc}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

fn json(s: &TestServer, args: &[&str]) -> Value {
    serde_json::from_str(&s.ok(args)).expect("kubectl prints JSON")
}

fn create(s: &TestServer, yaml: &str) {
    let out = s.kubectl_stdin(&["create", "-f", "-"], yaml);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
}

fn pods_get_upstreams_defaults(s: &TestServer) {
    create(s, POD);
    let pod = json(s, &["get", "pod", "defaulted", "-o", "json"]);
    let spec = &pod["spec"];
    assert_eq!(spec["volumes"][0]["emptyDir"], json!({}));
    assert_eq!(spec["volumes"][1]["secret"]["defaultMode"], 420);
    let probe = &spec["containers"][0]["livenessProbe"];
    assert_eq!(probe["timeoutSeconds"], 1);
    assert_eq!(probe["periodSeconds"], 10);
    assert_eq!(probe["successThreshold"], 1);
    assert_eq!(probe["failureThreshold"], 3);
    assert_eq!(probe["httpGet"]["path"], "/");
    assert_eq!(probe["httpGet"]["scheme"], "HTTP");
    let env = &spec["containers"][0]["env"][0]["valueFrom"]["fieldRef"];
    assert_eq!(env["apiVersion"], "v1");
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
    // The ServiceAccount plugin names the account; the alias follows it.
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    // What was read can be written back unchanged.
    let read = s.ok(&["get", "pod", "defaulted", "-o", "json"]);
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &read);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
}

fn replication_controllers_take_selector_and_replicas_from_the_template(s: &TestServer) {
    create(s, RC);
    let rc = json(s, &["get", "rc", "rc", "-o", "json"]);
    assert_eq!(rc["spec"]["selector"], json!({"app": "rc"}));
    assert_eq!(rc["metadata"]["labels"], json!({"app": "rc"}));
    assert_eq!(rc["spec"]["replicas"], 1);
    let container = &rc["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
}

/// The apps/v1 kinds (one selected template each), then the others.
fn workloads() -> String {
    let selected = "selector: {matchLabels: {app: w}}
  template: {metadata: {labels: {app: w}}, spec: {containers: [{name: c, image: nginx:1.27}]}}";
    let claims = "volumeClaimTemplates: [{metadata: {name: data},
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]";
    let apps = |kind: &str, extra: &str| {
        format!("apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: w}}\nspec:\n  {selected}\n  {extra}\n---\n")
    };
    let mut all = apps("Deployment", "");
    all.push_str(&apps("StatefulSet", claims));
    all.push_str(&apps("DaemonSet", ""));
    all + OTHERS
}

const OTHERS: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: w}
spec:
  template:
    metadata: {labels: {app: w}}
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox:1.36}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: w}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: c, image: busybox:1.36}]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: w}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: w}
  maxReplicas: 3
  behavior: {scaleDown: {selectPolicy: Min}}
"#;

/// Each (JSON pointer, value) of `obj`; null: the field is unset.
fn assert_fields<P: AsRef<str>>(obj: &Value, expected: &[(P, Value)]) {
    for (pointer, want) in expected {
        let pointer = pointer.as_ref();
        let got = obj.pointer(pointer);
        let unset = want.is_null() && got.is_none_or(Value::is_null);
        assert!(
            unset || got == Some(want),
            "{} {pointer}: want {want}, got {got:?}",
            obj["kind"]
        );
    }
}

fn workloads_get_upstreams_defaults(s: &TestServer) {
    create(s, &workloads());
    let list = json(
        s,
        &[
            "get", "deploy/w", "sts/w", "ds/w", "job/w", "cj/w", "hpa/w", "-o", "json",
        ],
    );
    let items = list["items"].as_array().expect("a List");
    let [deploy, sts, ds, job, cj, hpa] = &items[..] else {
        panic!("six objects: {list}");
    };
    let template = |prefix: &str| {
        vec![
            (format!("{prefix}/dnsPolicy"), json!("ClusterFirst")),
            (
                format!("{prefix}/schedulerName"),
                json!("default-scheduler"),
            ),
            (format!("{prefix}/terminationGracePeriodSeconds"), json!(30)),
            (
                format!("{prefix}/containers/0/imagePullPolicy"),
                json!("IfNotPresent"),
            ),
            (format!("{prefix}/enableServiceLinks"), Value::Null),
        ]
    };
    for (obj, prefix) in [
        (deploy, "/spec/template/spec"),
        (sts, "/spec/template/spec"),
        (ds, "/spec/template/spec"),
        (job, "/spec/template/spec"),
        (cj, "/spec/jobTemplate/spec/template/spec"),
    ] {
        assert_fields(obj, &template(prefix));
    }
    apps_defaults(deploy, sts, ds);
    batch_defaults(job, cj);
    hpa_defaults(hpa);
    // autoscaling/v1 reads the same object: the CPU target, and the
    // defaulted behavior in upstream's annotation.
    let v1 = json(
        s,
        &[
            "get",
            "--raw",
            "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/w",
        ],
    );
    assert_fields(
        &v1,
        &[
            ("/spec/minReplicas", json!(1)),
            ("/spec/targetCPUUtilizationPercentage", json!(80)),
        ],
    );
    let behavior = &v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/behavior"];
    let behavior: Value = serde_json::from_str(behavior.as_str().unwrap_or("null")).expect("JSON");
    assert_eq!(behavior["ScaleUp"]["StabilizationWindowSeconds"], 0, "{v1}");
    assert_eq!(behavior["ScaleDown"]["SelectPolicy"], "Min", "{v1}");
    // What was read, defaults and all, can be written back.
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &list.to_string());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
}

/// A spec without its selector and templates: what the kind's own
/// defaulting gave it, exactly.
fn own_spec(obj: &Value) -> Value {
    let mut spec = obj["spec"].clone();
    if let Some(map) = spec.as_object_mut() {
        for key in ["selector", "template", "volumeClaimTemplates"] {
            map.remove(key);
        }
    }
    spec
}

/// apps/v1 `SetDefaults_Deployment`, `_StatefulSet` (claim templates
/// included) and `_DaemonSet`.
fn apps_defaults(deploy: &Value, sts: &Value, ds: &Value) {
    let rolling = |params: Value| json!({"type": "RollingUpdate", "rollingUpdate": params});
    let deployment = json!({"replicas": 1, "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
        "strategy": rolling(json!({"maxUnavailable": "25%", "maxSurge": "25%"}))});
    assert_eq!(own_spec(deploy), deployment);
    let retain = json!({"whenDeleted": "Retain", "whenScaled": "Retain"});
    // `serviceName` is no omitempty field: Go writes it empty.
    let statefulset = json!({"replicas": 1, "revisionHistoryLimit": 10, "serviceName": "",
        "podManagementPolicy": "OrderedReady", "persistentVolumeClaimRetentionPolicy": retain,
        "updateStrategy": rolling(json!({"partition": 0, "maxUnavailable": 1}))});
    assert_eq!(own_spec(sts), statefulset);
    let claim = &sts["spec"]["volumeClaimTemplates"][0];
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem", "{claim}");
    assert_eq!(claim["status"], json!({"phase": "Pending"}), "{claim}");
    let daemonset = json!({"revisionHistoryLimit": 10,
        "updateStrategy": rolling(json!({"maxUnavailable": 1, "maxSurge": 0}))});
    assert_eq!(own_spec(ds), daemonset);
}

/// batch/v1 `SetDefaults_Job` (with the generated selector) and
/// `SetDefaults_CronJob` (its job template is no Job).
fn batch_defaults(job: &Value, cj: &Value) {
    let uid = job["metadata"]["uid"].clone();
    assert_fields(
        job,
        &[
            ("/spec/completions", json!(1)),
            ("/spec/parallelism", json!(1)),
            ("/spec/backoffLimit", json!(6)),
            ("/spec/completionMode", json!("NonIndexed")),
            ("/spec/suspend", json!(false)),
            ("/spec/manualSelector", json!(false)),
            ("/spec/podReplacementPolicy", json!("TerminatingOrFailed")),
            (
                "/spec/selector/matchLabels/batch.kubernetes.io~1controller-uid",
                uid,
            ),
            ("/metadata/labels/app", json!("w")),
        ],
    );
    assert_fields(
        cj,
        &[
            ("/spec/concurrencyPolicy", json!("Allow")),
            ("/spec/suspend", json!(false)),
            ("/spec/successfulJobsHistoryLimit", json!(3)),
            ("/spec/failedJobsHistoryLimit", json!(1)),
            ("/spec/jobTemplate/spec/backoffLimit", Value::Null),
        ],
    );
}

/// autoscaling/v2 `SetDefaults_HorizontalPodAutoscaler`: the scale-down
/// rules keep no stabilization window (the controller's flag applies).
fn hpa_defaults(hpa: &Value) {
    assert_fields(
        hpa,
        &[
            ("/apiVersion", json!("autoscaling/v2")),
            ("/spec/minReplicas", json!(1)),
            ("/spec/metrics/0/resource/name", json!("cpu")),
            (
                "/spec/metrics/0/resource/target/averageUtilization",
                json!(80),
            ),
            (
                "/spec/behavior/scaleUp/stabilizationWindowSeconds",
                json!(0),
            ),
            ("/spec/behavior/scaleUp/selectPolicy", json!("Max")),
            (
                "/spec/behavior/scaleUp/policies/0",
                json!({"type": "Pods", "value": 4, "periodSeconds": 15}),
            ),
            ("/spec/behavior/scaleDown/selectPolicy", json!("Min")),
            (
                "/spec/behavior/scaleDown/stabilizationWindowSeconds",
                Value::Null,
            ),
        ],
    );
}

crate::harness::on_both_backends!(
    pods_get_upstreams_defaults,
    replication_controllers_take_selector_and_replicas_from_the_template,
    workloads_get_upstreams_defaults
);
