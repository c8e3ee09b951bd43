//! Resource quantities come back in upstream's canonical form whatever
//! form they were written in (`1000m` → `1`, `2048Mi` → `2Gi`, `0.5` →
//! `500m`), on create, update and patch; a value that is no quantity is
//! refused with upstream's decoding error. Pods get requests defaulted from
//! limits and upstream's QoS class.

use serde_json::Value;

use crate::harness::TestServer;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  overhead: {cpu: "0.25"}
  containers:
  - name: app
    image: nginx
    resources:
      limits: {cpu: 1000m, memory: 2048Mi}
      requests: {cpu: 0.5, memory: 1.5Gi, ephemeral-storage: 2000M}
"#;

fn json(s: &TestServer, args: &[&str]) -> Value {
    serde_json::from_str(&s.ok(args)).expect("kubectl prints JSON")
}

fn quantities_are_canonical_on_every_write(s: &TestServer) {
    let out = s.kubectl_stdin(&["create", "-f", "-"], POD);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pod = json(s, &["get", "pod", "sized", "-o", "json"]);
    let resources = &pod["spec"]["containers"][0]["resources"];
    assert_eq!(resources["limits"]["cpu"], "1");
    assert_eq!(resources["limits"]["memory"], "2Gi");
    assert_eq!(resources["requests"]["cpu"], "500m");
    assert_eq!(resources["requests"]["memory"], "1536Mi");
    assert_eq!(resources["requests"]["ephemeral-storage"], "2G");
    assert_eq!(pod["spec"]["overhead"]["cpu"], "250m");

    s.ok(&[
        "create",
        "quota",
        "q",
        "--hard=cpu=2000m,memory=2048Mi,pods=10",
    ]);
    s.ok(&[
        "patch",
        "quota",
        "q",
        "--type=merge",
        "-p",
        r#"{"spec":{"hard":{"requests.storage":"1000Gi","limits.cpu":0.1}}}"#,
    ]);
    let quota = json(s, &["get", "quota", "q", "-o", "json"]);
    assert_eq!(quota["spec"]["hard"]["cpu"], "2");
    assert_eq!(quota["spec"]["hard"]["memory"], "2Gi");
    assert_eq!(quota["spec"]["hard"]["pods"], "10");
    assert_eq!(quota["spec"]["hard"]["requests.storage"], "1000Gi");
    assert_eq!(quota["spec"]["hard"]["limits.cpu"], "100m");

    // Not a quantity: refused while decoding, as upstream (kubectl's own
    // validation is off so that the server sees it).
    let bad =
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: bad}\nspec:\n  hard: {cpu: lots}\n";
    let out = s.kubectl_stdin(&["create", "--validate=false", "-f", "-"], bad);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ResourceQuota in version \"v1\" cannot be handled as a ResourceQuota: quantities must match the regular expression"),
        "{err}"
    );
}

const GUARANTEED: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: guaranteed}
spec:
  containers:
  - name: app
    image: nginx
    resources:
      limits: {cpu: 500m, memory: 256Mi, ephemeral-storage: 1Gi}
      requests: {memory: 0.25Gi}
"#;

fn pods_default_requests_and_get_upstreams_qos_class(s: &TestServer) {
    for pod in [POD, GUARANTEED] {
        let out = s.kubectl_stdin(&["create", "-f", "-"], pod);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let pod = json(s, &["get", "pod", "guaranteed", "-o", "json"]);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"],
        serde_json::json!({"cpu": "500m", "memory": "256Mi", "ephemeral-storage": "1Gi"})
    );
    assert_eq!(pod["status"]["qosClass"], "Guaranteed");
    let class = |name: &str| s.ok(&["get", "pod", name, "-o", "jsonpath={.status.qosClass}"]);
    assert_eq!(class("sized"), "Burstable");
    s.ok(&["run", "plain", "--image=nginx"]);
    assert_eq!(class("plain"), "BestEffort");
    let described = s.ok(&["describe", "pod", "guaranteed"]);
    assert!(
        described.contains("QoS Class:                   Guaranteed"),
        "{described}"
    );
}

crate::harness::on_both_backends!(
    quantities_are_canonical_on_every_write,
    pods_default_requests_and_get_upstreams_qos_class
);
