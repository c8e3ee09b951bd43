//! Cells of the core printers against what upstream's print functions give
//! for the same objects.

use serde_json::{json, Value};

use super::*;

/// The row without its Age cell (at `age`), which depends on the clock.
fn without_age(mut row: Vec<Value>, age: usize) -> Vec<Value> {
    row.remove(age);
    row
}

#[test]
fn endpoints_are_listed_up_to_three() {
    let none = json!({"metadata": {"name": "e"}});
    assert_eq!(endpoints_row(&none)[1], json!("<none>"));
    let two = json!({"subsets": [{
        "addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
        "ports": [{"port": 80}]
    }]});
    assert_eq!(format_endpoints(&two), "10.0.0.1:80,[fd00::1]:80");
    let many = json!({"subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
         "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]},
        {"addresses": [{"ip": "10.0.0.9"}]}
    ]});
    assert_eq!(
        format_endpoints(&many),
        "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more..."
    );
    let headless = json!({"subsets": [{"addresses": [{"ip": "10.1.1.1"}]}]});
    assert_eq!(format_endpoints(&headless), "10.1.1.1");
    let not_ready = json!({"subsets": [{"notReadyAddresses": [{"ip": "10.1.1.1"}],
        "ports": [{"port": 1}]}]});
    assert_eq!(format_endpoints(&not_ready), "");
}

#[test]
fn persistent_volume_cells() {
    let pv = json!({
        "metadata": {"name": "pv1"},
        "spec": {
            "capacity": {"storage": "1024Mi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": "data"},
            "storageClassName": "fast",
            "volumeMode": "Filesystem"
        },
        "status": {"phase": "Bound"}
    });
    assert_eq!(
        without_age(persistent_volume_row(&pv), 9),
        vec![
            json!("pv1"),
            json!("1Gi"),
            json!("RWO,RWX"),
            json!("Retain"),
            json!("Bound"),
            json!("default/data"),
            json!("fast"),
            json!("<unset>"),
            json!(""),
            json!("Filesystem"),
        ]
    );
    let bare = json!({
        "metadata": {"name": "pv2", "deletionTimestamp": "2024-01-01T00:00:00Z",
            "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}},
        "spec": {"storageClassName": "ignored", "volumeAttributesClassName": "gold"},
        "status": {"phase": "Released", "reason": "Oops"}
    });
    assert_eq!(
        without_age(persistent_volume_row(&bare), 9),
        vec![
            json!("pv2"),
            json!("0"),
            json!(""),
            json!(""),
            json!("Terminating"),
            json!(""),
            json!("beta"),
            json!("gold"),
            json!("Oops"),
            json!("<unset>"),
        ]
    );
    let columns = persistent_volume_columns();
    assert_eq!(columns.len(), 11);
    assert_eq!((columns[10].name, columns[10].priority), ("VolumeMode", 1));
}

#[test]
fn pod_template_cells() {
    let template = json!({
        "metadata": {"name": "t"},
        "template": {
            "metadata": {"labels": {"tier": "web", "app": "x"}},
            "spec": {"containers": [
                {"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}
            ]}
        }
    });
    assert_eq!(
        pod_template_row(&template),
        vec![
            json!("t"),
            json!("a,b"),
            json!("nginx,busybox"),
            json!("app=x,tier=web")
        ]
    );
    let empty = json!({"metadata": {"name": "e"}, "template": {}});
    assert_eq!(
        pod_template_row(&empty),
        vec![json!("e"), json!(""), json!(""), json!("<none>")]
    );
    assert!(pod_template_columns().iter().all(|c| c.priority == 0));
}

#[test]
fn replication_controller_cells() {
    let rc = json!({
        "metadata": {"name": "rc"},
        "spec": {
            "replicas": 3,
            "selector": {"z": "1", "app": "web"},
            "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}
        },
        "status": {"replicas": 2, "readyReplicas": 1}
    });
    assert_eq!(
        without_age(replication_controller_row(&rc), 4),
        vec![
            json!("rc"),
            json!(3),
            json!(2),
            json!(1),
            json!("c"),
            json!("nginx:1"),
            json!("app=web,z=1"),
        ]
    );
    let wide: Vec<&str> = replication_controller_columns()
        .iter()
        .filter(|c| c.priority == 1)
        .map(|c| c.name)
        .collect();
    assert_eq!(wide, ["Containers", "Images", "Selector"]);
}

#[test]
fn resource_quota_splits_requests_and_limits() {
    let rq = json!({
        "metadata": {"name": "q"},
        "status": {
            "hard": {"pods": "10", "limits.cpu": "2", "requests.memory": "1Gi",
                "limits.memory": "2048Mi", "count/configmaps": "5"},
            "used": {"pods": "3", "limits.cpu": "500m", "requests.memory": "0"}
        }
    });
    assert_eq!(
        without_age(resource_quota_row(&rq), 3),
        vec![
            json!("q"),
            json!("count/configmaps: 0/5, pods: 3/10, requests.memory: 0/1Gi"),
            json!("limits.cpu: 500m/2, limits.memory: 0/2Gi"),
        ]
    );
    let empty = json!({"metadata": {"name": "e"}, "spec": {"hard": {"pods": "1"}}});
    assert_eq!(
        without_age(resource_quota_row(&empty), 3),
        vec![json!("e"), json!(""), json!("")]
    );
}

#[test]
fn controller_revision_cells() {
    let owned = json!({
        "metadata": {"name": "ds-1", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1"},
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "2",
             "controller": true}
        ]},
        "revision": 4
    });
    assert_eq!(
        without_age(controller_revision_row(&owned), 3),
        vec![json!("ds-1"), json!("daemonset.apps/ds"), json!(4)]
    );
    let core_owner = json!({"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "ReplicationController", "name": "r", "controller": true}
    ]}});
    assert_eq!(controller_name(&core_owner), "replicationcontroller/r");
    let orphan = json!({"metadata": {"name": "o"}, "revision": 1});
    assert_eq!(controller_name(&orphan), "<none>");
}

#[test]
fn lease_runtime_class_and_priority_class_cells() {
    let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "node-1"}});
    assert_eq!(
        without_age(lease_row(&lease), 2),
        vec![json!("l"), json!("node-1")]
    );
    let free = json!({"metadata": {"name": "f"}, "spec": {}});
    assert_eq!(lease_row(&free)[1], json!(""));

    let rc = json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
    assert_eq!(
        without_age(runtime_class_row(&rc), 2),
        vec![json!("gvisor"), json!("runsc")]
    );
    assert_eq!(runtime_class_columns()[1].description, "");

    let pc = json!({"metadata": {"name": "high"}, "value": 1000, "globalDefault": true,
        "preemptionPolicy": "Never"});
    assert_eq!(
        without_age(priority_class_row(&pc), 3),
        vec![json!("high"), json!(1000), json!(true), json!("Never")]
    );
    let low = json!({"metadata": {"name": "low"}, "value": -5});
    assert_eq!(
        without_age(priority_class_row(&low), 3),
        vec![json!("low"), json!(-5), json!(false), json!("")]
    );
    let columns = priority_class_columns();
    assert_eq!((columns[2].kind, columns[4].priority), ("boolean", 0));
}

#[test]
fn every_printer_row_matches_its_columns() {
    let obj = json!({"metadata": {"name": "x", "creationTimestamp": "2024-01-01T00:00:00Z"}});
    for printer in PRINTERS {
        assert_eq!(
            (printer.columns)().len(),
            (printer.row)(&obj).len(),
            "{}",
            printer.kind
        );
    }
}
