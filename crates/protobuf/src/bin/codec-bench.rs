//! `codec-bench`: what storing an object costs in each storage encoding —
//! encode and decode time per object and the stored size, JSON (serde_json)
//! next to the Kubernetes protobuf encoding, for a typical Pod, Deployment
//! and ConfigMap. Prints a Markdown table. Run it optimised:
//! `cargo run --release -p protobuf-codec --bin codec-bench`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long each measurement runs.
const BUDGET: Duration = Duration::from_millis(700);

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-7d4b9c8f6d-x2k9p", "namespace": "default", "uid": "6f1e2f1c-0000-4000-8000-000000000001",
            "resourceVersion": "123456", "creationTimestamp": "2026-11-22T05:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6d", "uid": "u1", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m", "memory": "64Mi"}},
                "env": [{"name": "MODE", "value": "production"}],
                "volumeMounts": [{"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "schedulerName": "default-scheduler", "enableServiceLinks": true,
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}]},
        "status": {"phase": "Pending", "qosClass": "Burstable"}})
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "6f1e2f1c-0000-4000-8000-000000000002",
            "resourceVersion": "42", "generation": 3, "creationTimestamp": "2026-11-22T05:00:00Z", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                    "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}}},
        "status": {"observedGeneration": 3, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3}})
}

fn config_map() -> Value {
    let data: serde_json::Map<String, Value> = (0..20)
        .map(|i| {
            (
                format!("key-{i}"),
                json!(format!("value number {i} with some text")),
            )
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default", "uid": "u3", "resourceVersion": "7",
            "creationTimestamp": "2026-11-22T05:00:00Z"},
        "data": data})
}

/// Mean time of one call of `f`, repeated for [`BUDGET`].
fn time_per_call(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut calls = 0u32;
    while start.elapsed() < BUDGET {
        for _ in 0..64 {
            f();
        }
        calls += 64;
    }
    start.elapsed() / calls
}

fn micros(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

fn main() {
    println!("| object | encoding | bytes | encode µs | decode µs |");
    println!("|---|---|---:|---:|---:|");
    for (name, obj) in [
        ("Pod", pod()),
        ("Deployment", deployment()),
        ("ConfigMap (20 keys)", config_map()),
    ] {
        let json = serde_json::to_vec(&obj).unwrap_or_default();
        let encode = time_per_call(|| {
            black_box(serde_json::to_vec(black_box(&obj)).ok());
        });
        let decode = time_per_call(|| {
            black_box(serde_json::from_slice::<Value>(black_box(&json)).ok());
        });
        println!(
            "| {name} | JSON | {} | {} | {} |",
            json.len(),
            micros(encode),
            micros(decode)
        );
        let Ok(pb) = protobuf_codec::encode(&obj) else {
            println!("| {name} | protobuf | not encodable | | |");
            continue;
        };
        let encode = time_per_call(|| {
            black_box(protobuf_codec::encode(black_box(&obj)).ok());
        });
        let decode = time_per_call(|| {
            black_box(protobuf_codec::decode(black_box(&pb)).ok());
        });
        println!(
            "| {name} | protobuf | {} | {} | {} |",
            pb.len(),
            micros(encode),
            micros(decode)
        );
    }
}
