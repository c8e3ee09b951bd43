//! Round trips JSON → protobuf → JSON over example objects of many kinds,
//! in the JSON form k8s-openapi produces.

use protobuf_codec::{decode, encode};
use serde_json::{json, Value};

/// Asserts that `value` survives protobuf encoding unchanged.
fn assert_round_trip(value: Value) {
    let bytes = encode(&value).unwrap_or_else(|e| panic!("encoding {value}: {e}"));
    assert!(bytes.starts_with(b"k8s\0"));
    let back = decode(&bytes).unwrap_or_else(|e| panic!("decoding {value}: {e}"));
    assert_eq!(back, value, "\nexpected {value:#}\n     got {back:#}");
}

#[test]
fn pod_with_containers_ports_and_quantities() {
    assert_round_trip(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app": "web"},
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "uid": "6f1e2f1c-0000-4000-8000-000000000001",
            "resourceVersion": "42",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1", "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}}]
        },
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "nginx:1.27",
                "command": ["nginx", "-g", "daemon off;"],
                "ports": [{"containerPort": 80, "protocol": "TCP", "hostIP": "0.0.0.0", "hostPort": 8080}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "0.25"}},
                "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "b", "optional": false}}}],
                "livenessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"}, "periodSeconds": 10},
                "readinessProbe": {"tcpSocket": {"port": 80}},
                "stdin": false
            }],
            "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                        {"name": "cfg", "configMap": {"name": "cm", "defaultMode": 420}}],
            "hostIPC": true,
            "nodeName": "node-1",
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.5",
            "podIPs": [{"ip": "10.0.0.5"}],
            "hostIP": "192.168.1.2",
            "startTime": "2024-05-01T10:00:01Z",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:02Z"}]
        }
    }));
}
