//! Pods, templates and replication controllers get upstream's v1 defaults
//! (`SetDefaults_*` of core/v1): a volume without a source is an emptyDir,
//! projected and secret volumes get mode 0644, probes get their timings and
//! httpGet its path and scheme, `serviceAccount` mirrors
//! `serviceAccountName`, and a stored pod replaced as read is unchanged.

use serde_json::Value;

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
    assert_eq!(spec["volumes"][0]["emptyDir"], serde_json::json!({}));
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
    assert_eq!(rc["spec"]["selector"], serde_json::json!({"app": "rc"}));
    assert_eq!(rc["metadata"]["labels"], serde_json::json!({"app": "rc"}));
    assert_eq!(rc["spec"]["replicas"], 1);
    let container = &rc["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
}

crate::harness::on_both_backends!(
    pods_get_upstreams_defaults,
    replication_controllers_take_selector_and_replicas_from_the_template
);
