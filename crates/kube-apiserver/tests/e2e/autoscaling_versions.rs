//! HorizontalPodAutoscalers at both GA versions: `autoscaling/v2` (stored)
//! and `autoscaling/v1` (converted), as `kubectl autoscale` and older
//! clients use them.

use serde_json::Value;

use crate::harness::TestServer;

fn raw(s: &TestServer, path: &str) -> Value {
    serde_json::from_str(&s.ok(&["get", "--raw", path])).expect("json")
}

const V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";

fn kubectl_autoscale_is_served_at_both_versions(s: &TestServer) {
    s.ok(&["create", "deployment", "web", "--image=nginx"]);
    let out = s.ok(&[
        "autoscale",
        "deployment",
        "web",
        "--max=5",
        "--cpu-percent=60",
    ]);
    assert!(
        out.contains("horizontalpodautoscaler.autoscaling/web autoscaled"),
        "{out}"
    );
    let v1 = raw(s, &format!("{V1}/web"));
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    assert_eq!(v1["spec"]["minReplicas"], 1);
    let v2 = raw(s, &format!("{V2}/web"));
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["name"], "cpu");
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        60
    );
    let versions = s.ok(&["api-versions"]);
    assert!(versions.contains("autoscaling/v1") && versions.contains("autoscaling/v2"));
    let group = raw(s, "/apis/autoscaling");
    assert_eq!(group["preferredVersion"]["version"], "v2");
}

/// A v2 HPA with metrics v1 cannot express survives an update through v1.
fn v2_only_fields_survive_a_v1_update(s: &TestServer) {
    s.apply_yaml(
        "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: mem}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 500Mi}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 120}
",
    );
    let v1 = raw(s, &format!("{V1}/mem"));
    let annotations = &v1["metadata"]["annotations"];
    assert!(
        annotations["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .is_some_and(|m| m.contains("500Mi")),
        "{v1}"
    );
    assert!(v1["spec"].get("targetCPUUtilizationPercentage").is_none());
    // Raise maxReplicas through v1 (a read-modify-write of the v1 form).
    s.ok(&[
        "patch",
        "horizontalpodautoscalers.v1.autoscaling",
        "mem",
        "--type=merge",
        "-p",
        r#"{"spec":{"maxReplicas":7}}"#,
    ]);
    let v2 = raw(s, &format!("{V2}/mem"));
    assert_eq!(v2["spec"]["maxReplicas"], 7);
    assert_eq!(
        v2["spec"]["metrics"].as_array().map(Vec::len),
        Some(1),
        "{v2}"
    );
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["name"], "memory");
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        120
    );
    let annotations = v2["metadata"]["annotations"].as_object();
    assert!(
        annotations.is_some_and(|a| !a.keys().any(|k| k.starts_with("autoscaling.alpha"))),
        "{v2}"
    );
    // Lists and deletes work at v1 too.
    let list = raw(s, V1);
    assert_eq!(list["kind"], "HorizontalPodAutoscalerList");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    s.ok(&["delete", "horizontalpodautoscalers.v1.autoscaling", "mem"]);
    assert!(s.fails(&["get", "hpa", "mem"]).contains("NotFound"));
}

crate::harness::on_both_backends!(
    kubectl_autoscale_is_served_at_both_versions,
    v2_only_fields_survive_a_v1_update,
);
