use serde_json::{json, Value};

use super::*;

fn defaulted(spec: Value) -> Value {
    let mut spec = spec;
    default_pod_spec(&mut spec);
    spec
}

#[test]
fn containers_probes_and_handlers() {
    let spec = defaulted(json!({"containers": [{
        "name": "a", "image": "nginx:1.27",
        "livenessProbe": {"httpGet": {"port": 80}, "periodSeconds": 0},
        "readinessProbe": {"tcpSocket": {"port": 80}, "failureThreshold": 5},
        "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}],
        "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}));
    let c = &spec["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
            "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c["readinessProbe"]["failureThreshold"], 5);
    assert_eq!(
        c["lifecycle"]["preStop"]["httpGet"],
        json!({"port": 80, "path": "/stop", "scheme": "HTTP"})
    );
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    let debug = &spec["ephemeralContainers"][0];
    assert_eq!(debug["imagePullPolicy"], "Always");
    assert_eq!(debug["terminationMessagePolicy"], "File");
    // Templates get no service links default; pods do.
    assert!(spec.get("enableServiceLinks").is_none());
}

#[test]
fn volumes_get_their_sources_defaults() {
    let spec = defaulted(json!({"containers": [], "volumes": [
        {"name": "scratch"},
        {"name": "s", "secret": {"secretName": "x"}},
        {"name": "c", "configMap": {"name": "x", "defaultMode": 256}},
        {"name": "d", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
        {"name": "h", "hostPath": {"path": "/tmp"}},
        {"name": "r", "rbd": {"monitors": ["m"], "image": "i"}},
        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}]}));
    let v = &spec["volumes"];
    assert_eq!(v[0], json!({"name": "scratch", "emptyDir": {}}));
    assert_eq!(v[1]["secret"]["defaultMode"], 420);
    assert_eq!(v[2]["configMap"]["defaultMode"], 256);
    assert_eq!(v[3]["downwardAPI"]["defaultMode"], 420);
    assert_eq!(
        v[3]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(v[4]["projected"]["defaultMode"], 420);
    assert_eq!(
        v[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
    assert_eq!(v[5]["hostPath"]["type"], "");
    assert_eq!(
        v[6]["rbd"],
        json!({"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin",
            "keyring": "/etc/ceph/keyring"})
    );
    assert_eq!(
        v[7]["ephemeral"]["volumeClaimTemplate"]["spec"]["volumeMode"],
        "Filesystem"
    );
}

#[test]
fn service_account_is_an_alias_of_the_name() {
    let spec = defaulted(json!({"containers": [], "serviceAccount": "old"}));
    assert_eq!(spec["serviceAccountName"], "old");
    assert_eq!(spec["serviceAccount"], "old");
    let spec =
        defaulted(json!({"containers": [], "serviceAccountName": "new", "serviceAccount": "old"}));
    assert_eq!(spec["serviceAccount"], "new");
    let spec = defaulted(json!({"containers": []}));
    assert!(spec.get("serviceAccount").is_none());
}

#[test]
fn pods_alone_get_service_links_and_host_ports() {
    let mut spec = json!({"hostNetwork": true, "containers": [
        {"name": "a", "ports": [{"containerPort": 8080}, {"containerPort": 9090, "hostPort": 9091}]}]});
    default_pod(&mut spec);
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["containers"][0]["ports"][0]["hostPort"], 8080);
    assert_eq!(spec["containers"][0]["ports"][1]["hostPort"], 9091);
}

#[test]
fn replication_controllers_take_selector_and_labels_from_the_template() {
    let mut rc = json!({"metadata": {"name": "rc"}, "spec": {"template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    replication_controller_defaults(&mut rc);
    assert_eq!(rc["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(rc["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(rc["spec"]["replicas"], 1);
    assert_eq!(rc["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    let mut own = json!({"metadata": {"labels": {"tier": "x"}}, "spec": {"selector": {"app": "a"},
        "template": {"metadata": {"labels": {"app": "a", "v": "1"}}}}});
    replication_controller_defaults(&mut own);
    assert_eq!(own["spec"]["selector"], json!({"app": "a"}));
    assert_eq!(own["metadata"]["labels"], json!({"tier": "x"}));
}

#[test]
fn odd_shapes_never_panic() {
    for spec in [
        json!(null),
        json!({"containers": [1, {"ports": ["x", {"containerPort": "y"}]}], "volumes": [null, 3]}),
        json!({"containers": [{"livenessProbe": 3, "lifecycle": {"preStop": []}, "env": [{"valueFrom": 1}]}]}),
        json!({"hostNetwork": true, "containers": [{"ports": [7]}]}),
    ] {
        let mut spec = spec;
        default_pod_spec(&mut spec);
        default_pod(&mut spec);
    }
    replication_controller_defaults(&mut json!({"spec": 1, "metadata": []}));
    pod_template_defaults(&mut json!({"template": {"spec": "x"}}));
}
