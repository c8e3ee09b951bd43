//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/rbac_storage`: role bindings, the storage.k8s.io
//! kinds and PersistentVolumeClaims as real kubectl prints them (Roles and
//! ClusterRoles keep the default NAME / CREATED AT table), plus raw Table
//! column definitions and the empty cells kubectl leaves blank.

use serde_json::Value;

use crate::harness::TestServer;
use crate::support::tables::{assert_row_then_age, is_age, raw_table, table};

const RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: builder, namespace: ci}
- {kind: Group, name: devs, apiGroup: rbac.authorization.k8s.io}
- {kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: auditors}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: Group, name: audit, apiGroup: rbac.authorization.k8s.io}
"#;

const STORAGE: &str = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: csi.example.com
reclaimPolicy: Retain
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: slow}
provisioner: csi.example.com
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: gold}
driverName: csi.example.com
parameters: {iops: "5000"}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csi.example.com}
spec:
  attachRequired: false
  podInfoOnMount: true
  tokenRequests: [{audience: vault}, {audience: gcp}]
  volumeLifecycleModes: [Persistent, Ephemeral]
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: plain.example.com}
spec: {}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1}
spec:
  drivers:
  - {name: csi.example.com, nodeID: node-1}
  - {name: plain.example.com, nodeID: node-1}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: va-1}
spec:
  attacher: csi.example.com
  nodeName: node-1
  source: {persistentVolumeName: pv-1}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: cap-1}
storageClassName: fast
capacity: 1024Mi
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce, ReadWriteMany]
  resources: {requests: {storage: 1Gi}}
  storageClassName: fast
  volumeName: pv-1
  volumeAttributesClassName: gold
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pending}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  storageClassName: slow
"#;

/// (name, type, format, priority) of each column definition.
fn definitions(table: &Value) -> Vec<(String, String, String, u64)> {
    let defs = table["columnDefinitions"].as_array().cloned();
    defs.unwrap_or_default()
        .iter()
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap_or("").to_owned();
            (
                s("name"),
                s("type"),
                s("format"),
                d["priority"].as_u64().unwrap_or(9),
            )
        })
        .collect()
}

#[test]
fn rbac_kinds_print_role_refs_and_subjects() {
    let s = TestServer::start();
    s.apply_yaml(RBAC);

    // Roles have no printer upstream: the default table.
    let (header, row) = table(&s, &["roles", "reader"]);
    assert_eq!(header, ["NAME", "CREATED AT"]);
    assert_eq!(row[0], "reader");
    assert!(row[1].ends_with('Z'), "{row:?}");

    let (header, row) = table(&s, &["rolebindings", "readers"]);
    assert_eq!(header, ["NAME", "ROLE", "AGE"]);
    assert_row_then_age(&row, &["readers", "ClusterRole/view"]);

    let (header, row) = table(&s, &["rolebindings", "readers", "-o", "wide"]);
    assert_eq!(
        header,
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    assert_eq!(row[..2], ["readers", "ClusterRole/view"]);
    assert!(is_age(&row[2]), "{row:?}");
    assert_eq!(row[3..], ["alice, bob", "devs", "ci/builder"]);

    // Empty subject lists are empty cells (kubectl leaves them blank).
    let (header, row) = table(&s, &["clusterrolebindings", "auditors", "-o", "wide"]);
    assert_eq!(
        header,
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    assert_eq!(row[..2], ["auditors", "ClusterRole/view"]);
    assert_eq!(row[3..], ["audit"]);
    let crb = raw_table(
        &s,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/auditors",
    );
    let cells = &crb["rows"][0]["cells"];
    assert_eq!(cells[3], "", "{crb}");
    assert_eq!(cells[4], "audit");
    assert_eq!(cells[5], "");
    let defs = definitions(&crb);
    assert_eq!(defs[1], ("Role".into(), "string".into(), "".into(), 0));
    assert_eq!(
        defs[5],
        ("ServiceAccounts".into(), "string".into(), "".into(), 1)
    );
    assert_eq!(
        crb["columnDefinitions"][3]["description"],
        "Users in the clusterRoleBinding"
    );
}

#[test]
fn storage_kinds_and_claims_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(STORAGE);
    s.ok(&[
        "patch",
        "volumeattachment",
        "va-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"attached":true}}"#,
    ]);
    s.ok(&[
        "patch",
        "pvc",
        "data",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Bound","capacity":{"storage":"2048Mi"},"accessModes":["ReadWriteMany","ReadWriteOnce"]}}"#,
    ]);

    let (header, row) = table(&s, &["storageclasses", "fast"]);
    assert_eq!(
        header,
        [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE"
        ]
    );
    assert_row_then_age(
        &row,
        &[
            "fast (default)",
            "csi.example.com",
            "Retain",
            "WaitForFirstConsumer",
            "true",
        ],
    );
    let (_, row) = table(&s, &["sc", "slow"]);
    assert_row_then_age(
        &row,
        &["slow", "csi.example.com", "Delete", "Immediate", "false"],
    );

    let (header, row) = table(&s, &["volumeattributesclasses", "gold"]);
    assert_eq!(header, ["NAME", "DRIVERNAME", "AGE"]);
    assert_row_then_age(&row, &["gold", "csi.example.com"]);

    let (header, row) = table(&s, &["csidrivers", "csi.example.com"]);
    assert_eq!(
        header,
        [
            "NAME",
            "ATTACHREQUIRED",
            "PODINFOONMOUNT",
            "STORAGECAPACITY",
            "TOKENREQUESTS",
            "REQUIRESREPUBLISH",
            "MODES",
            "AGE"
        ]
    );
    assert_row_then_age(
        &row,
        &[
            "csi.example.com",
            "false",
            "true",
            "false",
            "vault,gcp",
            "false",
            "Persistent,Ephemeral",
        ],
    );
    // Unset pointer fields print upstream's defaults; tokenRequests has none.
    let (_, row) = table(&s, &["csidrivers", "plain.example.com"]);
    assert_eq!(
        row[..6],
        [
            "plain.example.com",
            "true",
            "false",
            "false",
            "<unset>",
            "false"
        ]
    );

    let (header, row) = table(&s, &["csinodes", "node-1"]);
    assert_eq!(header, ["NAME", "DRIVERS", "AGE"]);
    assert_row_then_age(&row, &["node-1", "2"]);

    let (header, row) = table(&s, &["volumeattachments", "va-1"]);
    assert_eq!(
        header,
        ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
    );
    assert_row_then_age(&row, &["va-1", "csi.example.com", "pv-1", "node-1", "true"]);

    // Upstream declares no Age column for CSIStorageCapacity.
    let (header, row) = table(&s, &["csistoragecapacities", "cap-1"]);
    assert_eq!(header, ["NAME", "STORAGECLASSNAME", "CAPACITY"]);
    assert_eq!(row, ["cap-1", "fast", "1Gi"]);

    let (header, row) = table(&s, &["pvc", "data", "-o", "wide"]);
    assert_eq!(
        header,
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE",
            "VOLUMEMODE"
        ]
    );
    assert_eq!(
        row[..7],
        ["data", "Bound", "pv-1", "2Gi", "RWO,RWX", "fast", "gold"]
    );
    assert!(is_age(&row[7]), "{row:?}");
    assert_eq!(row[8], "Filesystem");
}

#[test]
fn raw_tables_carry_upstreams_definitions_and_blank_cells() {
    let s = TestServer::start();
    s.apply_yaml(STORAGE);

    // A claim with no volume yet: volume, capacity and access modes empty.
    let pvc = raw_table(
        &s,
        "/api/v1/namespaces/default/persistentvolumeclaims/pending",
    );
    let cells = pvc["rows"][0]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(cells.len(), 9, "{pvc}");
    assert_eq!(
        cells[..7],
        [
            Value::from("pending"),
            Value::from("Pending"),
            Value::from(""),
            Value::from(""),
            Value::from(""),
            Value::from("slow"),
            Value::from("<unset>"),
        ]
    );
    assert_eq!(cells[8], "Filesystem");
    let defs = definitions(&pvc);
    assert_eq!(defs[0], ("Name".into(), "string".into(), "name".into(), 0));
    assert_eq!(
        defs[8],
        ("VolumeMode".into(), "string".into(), "".into(), 1)
    );
    assert_eq!(
        pvc["columnDefinitions"][5]["description"],
        "StorageClass of the pvc"
    );

    let va = raw_table(&s, "/apis/storage.k8s.io/v1/volumeattachments");
    let defs = definitions(&va);
    assert_eq!(
        defs[1],
        ("Attacher".into(), "string".into(), "name".into(), 0)
    );
    assert_eq!(defs[4], ("Attached".into(), "boolean".into(), "".into(), 0));
    // Not attached yet: a JSON false, not a string.
    assert_eq!(va["rows"][0]["cells"][4], Value::Bool(false), "{va}");

    let drivers = raw_table(&s, "/apis/storage.k8s.io/v1/csidrivers/csi.example.com");
    let types: Vec<String> = definitions(&drivers).into_iter().map(|d| d.1).collect();
    assert_eq!(
        types,
        ["string", "boolean", "boolean", "boolean", "string", "boolean", "string", "string"]
    );
    let nodes = raw_table(&s, "/apis/storage.k8s.io/v1/csinodes/node-1");
    assert_eq!(nodes["columnDefinitions"][1]["type"], "integer");
    assert_eq!(nodes["rows"][0]["cells"][1], 2);
}
