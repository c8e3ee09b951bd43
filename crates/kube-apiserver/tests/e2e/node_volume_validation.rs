//! Create and update validation of PersistentVolumes and Nodes (upstream's
//! `ValidatePersistentVolume` and `ValidateNode`/`ValidateNodeUpdate`):
//! bad objects created or changed with kubectl are refused with upstream's
//! field messages, raw creates get upstream's 422 Status, and valid objects
//! (a hostPath, local and CSI volume, a Node as the kubelet registers it)
//! still go through.

use serde_json::{json, Value};

use crate::harness::TestServer;
use crate::spec_validation::refused;
use crate::support::http::request;

const RFC1123: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
characters, '-' or '.', and must start and end with an alphanumeric character (e.g. \
'example.com', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn created(s: &TestServer, path: &str, body: &Value) -> crate::support::http::Answer {
    request(
        s,
        "POST",
        path,
        &["Content-Type: application/json"],
        Some(&body.to_string()),
    )
}

fn invalid_status(kind: &str, name: &str, messages: &[(&str, &str, &str)]) -> Value {
    let lines: Vec<String> = messages
        .iter()
        .map(|(_, field, body)| format!("{field}: {body}"))
        .collect();
    let joined = match lines.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let causes: Vec<Value> = messages
        .iter()
        .map(|(reason, field, body)| json!({"reason": reason, "message": body, "field": field}))
        .collect();
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{kind} \"{name}\" is invalid: {joined}"), "reason": "Invalid",
        "details": {"name": name, "kind": kind, "causes": causes}, "code": 422})
}

#[test]
fn bad_persistent_volumes_are_refused() {
    let s = TestServer::start();
    let empty = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec: {}\n";
    let err = refused(&s, empty);
    assert!(
        err.contains("The PersistentVolume \"pv1\" is invalid: \n* spec.accessModes: Required value\n* spec.capacity: Required value\n* spec.capacity: Unsupported value: null: supported values: \"storage\"\n* spec: Required value: must specify a volume type\n"),
        "{err}"
    );
    let iscsi = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv2}\nspec:\n  \
        capacity: {storage: 0}\n  accessModes: [ReadWriteOnce]\n  \
        iscsi: {targetPortal: '10.0.0.1:3260', iqn: iqn.bad, lun: 300, chapAuthSession: true}\n";
    let err = refused(&s, iscsi);
    assert!(
        err.contains("The PersistentVolume \"pv2\" is invalid: \n* spec.capacity[storage]: Invalid value: \"0\": must be greater than zero\n* spec.iscsi.iqn: Invalid value: \"iqn.bad\": must be valid format\n* spec.iscsi.lun: Invalid value: 300: must be between 0 and 255, inclusive\n* spec.iscsi.secretRef: Required value\n"),
        "{err}"
    );
    let local = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv3}\nspec:\n  \
        capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  local: {path: /mnt/../etc}\n  \
        nfs: {server: nfs.example.com, path: /exports}\n";
    let err = refused(&s, local);
    assert!(
        err.contains("The PersistentVolume \"pv3\" is invalid: spec.local: Forbidden: may not specify more than 1 volume type"),
        "{err}"
    );
    let body = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv4"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/"}, "persistentVolumeReclaimPolicy": "Recycle",
            "storageClassName": "Fast"}});
    let a = created(&s, "/api/v1/persistentvolumes", &body);
    assert_eq!(a.code, 422, "{}", a.body);
    let class = format!("Invalid value: \"Fast\": {RFC1123}");
    let want = invalid_status(
        "PersistentVolume",
        "pv4",
        &[
            (
                "FieldValueForbidden",
                "spec.persistentVolumeReclaimPolicy",
                "Forbidden: may not be 'recycle' for a hostPath mount of '/'",
            ),
            ("FieldValueInvalid", "spec.storageClassName", &class),
        ],
    );
    assert_eq!(a.body, want);
}

#[test]
fn valid_persistent_volumes_pass_and_updates_are_checked() {
    let s = TestServer::start();
    s.apply_yaml(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: data}\nspec:\n  \
         capacity: {storage: 5Gi}\n  accessModes: [ReadWriteOnce]\n  hostPath: {path: /srv/data}\n\
         ---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: local}\nspec:\n  \
         capacity: {storage: 100Gi}\n  accessModes: [ReadWriteOnce]\n  storageClassName: local-storage\n  \
         local: {path: /mnt/disks/ssd1}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      \
         - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-1]}]\n\
         ---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: ebs}\nspec:\n  \
         capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOncePod]\n  volumeMode: Block\n  \
         csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123}\n",
    );
    let names = s.ok(&["get", "pv", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(names, "data ebs local");
    let out = s.kubectl(&[
        "patch",
        "pv",
        "data",
        "--type=merge",
        "-p",
        r#"{"spec":{"capacity":{"storage":"0"},"accessModes":["Sometimes"]}}"#,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The PersistentVolume \"data\" is invalid: \n* spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"\n* spec.capacity[storage]: Invalid value: \"0\": must be greater than zero\n"),
        "{err}"
    );
}

const KUBELET_NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\n  \
    labels: {kubernetes.io/hostname: worker-1, kubernetes.io/os: linux}\nspec:\n  \
    podCIDR: 10.244.1.0/24\n  podCIDRs: [10.244.1.0/24, 'fd00:10:244:1::/64']\n  \
    taints: [{key: node.kubernetes.io/not-ready, effect: NoSchedule}]\nstatus:\n  \
    capacity: {cpu: '8', memory: 16Gi, pods: '110', ephemeral-storage: 100Gi}\n  \
    allocatable: {cpu: 7500m, memory: 15Gi, pods: '110'}\n  \
    addresses: [{type: InternalIP, address: 172.18.0.2}, {type: Hostname, address: worker-1}]\n  \
    nodeInfo: {kubeletVersion: v1.37.0, architecture: amd64, operatingSystem: linux, \
    bootID: b, containerRuntimeVersion: containerd://2.1.0, kernelVersion: '6.8', \
    kubeProxyVersion: '', machineID: m, osImage: Debian, systemUUID: s}\n";

#[test]
fn nodes_are_validated_as_upstream() {
    let s = TestServer::start();
    // A node as the kubelet registers it: accepted, status kept.
    s.apply_yaml(KUBELET_NODE);
    let cpu = s.ok(&[
        "get",
        "node",
        "worker-1",
        "-o",
        "jsonpath={.status.capacity.cpu}",
    ]);
    assert_eq!(cpu, "8");

    let bad = "apiVersion: v1\nkind: Node\nmetadata: {name: worker-2}\nspec:\n  \
        podCIDRs: [10.1.0.0/24, 10.1.0.0/24]\n  \
        taints: [{key: gpu, effect: Sometimes}, {key: a, value: blue, effect: NoSchedule}, \
        {key: a, value: green, effect: NoSchedule}]\n";
    let err = refused(&s, bad);
    assert!(
        err.contains("The Node \"worker-2\" is invalid: \n* metadata.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"\n* metadata.taints[2]: Duplicate value: {\"Key\":\"a\",\"Value\":\"green\",\"Effect\":\"NoSchedule\",\"TimeAdded\":null}: taints must be unique by key and effect pair\n* spec.podCIDRs: Invalid value: [\"10.1.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one CIDR for each IP family\n* spec.podCIDRs[1]: Duplicate value: \"10.1.0.0/24\"\n"),
        "{err}"
    );

    let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-3"},
        "spec": {"podCIDR": "10.2.0.0"}, "status": {"capacity": {"pods": "1500m"}}});
    let a = created(&s, "/api/v1/nodes", &body);
    assert_eq!(a.code, 422, "{}", a.body);
    let want = invalid_status(
        "Node",
        "worker-3",
        &[
            (
                "FieldValueInvalid",
                "status.capacity.pods",
                "Invalid value: \"1500m\": must be an integer",
            ),
            (
                "FieldValueInvalid",
                "spec.podCIDRs[0]",
                "Invalid value: \"10.2.0.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            ),
        ],
    );
    assert_eq!(a.body, want);

    // Status writes are checked as upstream's ValidateNodeUpdate.
    let out = s.kubectl(&[
        "patch",
        "node",
        "worker-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"},{"type":"InternalIP","address":"10.0.0.1"}]}}"#,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The Node \"worker-1\" is invalid: status.addresses[1]: Duplicate value: {\"Type\":\"InternalIP\",\"Address\":\"10.0.0.1\"}"),
        "{err}"
    );
    let out = s.kubectl(&[
        "patch",
        "node",
        "worker-1",
        "--type=merge",
        "-p",
        r#"{"spec":{"taints":[{"key":"k","effect":""}]}}"#,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The Node \"worker-1\" is invalid: metadata.taints[0].effect: Required value"),
        "{err}"
    );
}

#[test]
fn volume_attachments_check_inline_volume_specs() {
    let s = TestServer::start();
    let inline = |name: &str, spec: &str| {
        format!(
            "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {{name: {name}}}\n\
             spec:\n  attacher: ebs.csi.aws.com\n  nodeName: node-1\n  source:\n    inlineVolumeSpec:\n{spec}"
        )
    };
    s.apply_yaml(&inline(
        "good",
        "      accessModes: [ReadWriteOnce]\n      csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}\n",
    ));
    let err = refused(
        &s,
        &inline(
            "bad",
            "      capacity: {storage: 1Gi}\n      accessModes: [ReadWriteOnce]\n      \
             persistentVolumeReclaimPolicy: Delete\n      nfs: {server: nfs.example.com, path: /exports}\n",
        ),
    );
    assert!(
        err.contains("The VolumeAttachment \"bad\" is invalid: \n* spec.source.inlineVolumeSpec.capacity: Forbidden: may not be specified in the context of inline volumes\n* spec.source.inlineVolumeSpec.csi: Required value: has to be specified in the context of inline volumes\n* spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy: Forbidden: may only be Retain in the context of inline volumes\n"),
        "{err}"
    );
}
