//! Printers of rbac.authorization.k8s.io (RoleBinding, ClusterRoleBinding),
//! storage.k8s.io (StorageClass, VolumeAttributesClass, VolumeAttachment,
//! CSINode, CSIDriver, CSIStorageCapacity) and core/v1
//! PersistentVolumeClaim, as upstream's `pkg/printers/internalversion`.
//! Role and ClusterRole have no printer upstream and keep the default
//! NAME / CREATED AT table.

use apimachinery::quantity::canonicalize_json;
use serde_json::{json, Value};

use super::{age_cell, integer, name_cell, string, text, Printer, TableColumn};
use super::{AGE_COLUMN, NAME_COLUMN};

pub const PRINTERS: &[Printer] = &[
    Printer {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "RoleBinding",
        columns: role_binding_columns,
        row: binding_row,
    },
    Printer {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRoleBinding",
        columns: cluster_role_binding_columns,
        row: binding_row,
    },
    Printer {
        group: "storage.k8s.io",
        version: "v1",
        kind: "StorageClass",
        columns: storage_class_columns,
        row: storage_class_row,
    },
    Printer {
        group: "storage.k8s.io",
        version: "v1",
        kind: "VolumeAttributesClass",
        columns: volume_attributes_class_columns,
        row: volume_attributes_class_row,
    },
    Printer {
        group: "storage.k8s.io",
        version: "v1",
        kind: "VolumeAttachment",
        columns: volume_attachment_columns,
        row: volume_attachment_row,
    },
    Printer {
        group: "storage.k8s.io",
        version: "v1",
        kind: "CSINode",
        columns: csi_node_columns,
        row: csi_node_row,
    },
    Printer {
        group: "storage.k8s.io",
        version: "v1",
        kind: "CSIDriver",
        columns: csi_driver_columns,
        row: csi_driver_row,
    },
    Printer {
        group: "storage.k8s.io",
        version: "v1",
        kind: "CSIStorageCapacity",
        columns: csi_storage_capacity_columns,
        row: csi_storage_capacity_row,
    },
    Printer {
        group: "",
        version: "v1",
        kind: "PersistentVolumeClaim",
        columns: pvc_columns,
        row: pvc_row,
    },
];

const fn boolean(name: &'static str, description: &'static str) -> TableColumn {
    TableColumn::new(name, "boolean", description)
}

/// The string at a pointer, or `fallback` when the field is absent (a
/// pointer field left nil upstream).
fn or_default(obj: &Value, pointer: &str, fallback: &'static str) -> Value {
    match obj.pointer(pointer).and_then(Value::as_str) {
        Some(s) => json!(s),
        None => json!(fallback),
    }
}

/// The boolean at a pointer, or `fallback` when it is absent.
fn flag(obj: &Value, pointer: &str, fallback: bool) -> Value {
    json!(obj
        .pointer(pointer)
        .and_then(Value::as_bool)
        .unwrap_or(fallback))
}

/// The object's name, with " (default)" when one of `annotations` is
/// "true" on it.
fn name_marked_default(obj: &Value, annotations: &[&str]) -> Value {
    let name = text(obj, "/metadata/name");
    let is_default = annotations.iter().any(|a| {
        obj.pointer("/metadata/annotations")
            .and_then(|m| m.get(*a))
            .and_then(Value::as_str)
            == Some("true")
    });
    if is_default {
        json!(format!("{name} (default)"))
    } else {
        json!(name)
    }
}

fn binding_columns(
    role_ref: &'static str,
    users: &'static str,
    groups: &'static str,
    service_accounts: &'static str,
) -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Role", role_ref),
        AGE_COLUMN,
        string("Users", users).wide(),
        string("Groups", groups).wide(),
        string("ServiceAccounts", service_accounts).wide(),
    ]
}

fn role_binding_columns() -> Vec<TableColumn> {
    binding_columns(
        "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        "Users in the roleBinding",
        "Groups in the roleBinding",
        "ServiceAccounts in the roleBinding",
    )
}

fn cluster_role_binding_columns() -> Vec<TableColumn> {
    binding_columns(
        "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        "Users in the clusterRoleBinding",
        "Groups in the clusterRoleBinding",
        "ServiceAccounts in the clusterRoleBinding",
    )
}

/// Upstream's `rbac.SubjectsStrings` joined with ", ": users and groups by
/// name, service accounts as `namespace/name`; other kinds are not shown.
fn subjects(binding: &Value) -> [String; 3] {
    let mut lists: [Vec<String>; 3] = Default::default();
    let all = binding.pointer("/subjects").and_then(Value::as_array);
    for subject in all.into_iter().flatten() {
        let name = text(subject, "/name");
        match text(subject, "/kind") {
            "User" => lists[0].push(name.to_owned()),
            "Group" => lists[1].push(name.to_owned()),
            "ServiceAccount" => lists[2].push(format!("{}/{name}", text(subject, "/namespace"))),
            _ => {}
        }
    }
    lists.map(|l| l.join(", "))
}

fn binding_row(binding: &Value) -> Vec<Value> {
    let role_ref = format!(
        "{}/{}",
        text(binding, "/roleRef/kind"),
        text(binding, "/roleRef/name")
    );
    let [users, groups, service_accounts] = subjects(binding);
    vec![
        name_cell(binding),
        json!(role_ref),
        age_cell(binding),
        json!(users),
        json!(groups),
        json!(service_accounts),
    ]
}

fn storage_class_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Provisioner", "provisioner indicates the type of the provisioner."),
        string("ReclaimPolicy", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete."),
        string("VolumeBindingMode", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature."),
        string("AllowVolumeExpansion", "allowVolumeExpansion shows whether the storage class allow volume expand."),
        AGE_COLUMN,
    ]
}

fn storage_class_row(class: &Value) -> Vec<Value> {
    const DEFAULT_ANNOTATIONS: [&str; 2] = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ];
    vec![
        name_marked_default(class, &DEFAULT_ANNOTATIONS),
        json!(text(class, "/provisioner")),
        or_default(class, "/reclaimPolicy", "Delete"),
        or_default(class, "/volumeBindingMode", "Immediate"),
        flag(class, "/allowVolumeExpansion", false),
        age_cell(class),
    ]
}

fn volume_attributes_class_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string(
            "DriverName",
            "driverName is the name of the CSI driver This field is immutable.",
        ),
        AGE_COLUMN,
    ]
}

fn volume_attributes_class_row(class: &Value) -> Vec<Value> {
    const DEFAULT_ANNOTATION: &str = "volumeattributesclass.alpha.kubernetes.io/is-default-class";
    vec![
        name_marked_default(class, &[DEFAULT_ANNOTATION]),
        json!(text(class, "/driverName")),
        age_cell(class),
    ]
}

fn volume_attachment_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Attacher", "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().").format("name"),
        string("PV", "persistentVolumeName represents the name of the persistent volume to attach."),
        string("Node", "nodeName represents the node that the volume should be attached to."),
        boolean("Attached", "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher."),
        AGE_COLUMN,
    ]
}

fn volume_attachment_row(attachment: &Value) -> Vec<Value> {
    vec![
        name_cell(attachment),
        json!(text(attachment, "/spec/attacher")),
        json!(text(attachment, "/spec/source/persistentVolumeName")),
        json!(text(attachment, "/spec/nodeName")),
        flag(attachment, "/status/attached", false),
        age_cell(attachment),
    ]
}

fn csi_node_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer(
            "Drivers",
            "Drivers indicates the number of CSI drivers registered on the node",
        ),
        AGE_COLUMN,
    ]
}

fn csi_node_row(node: &Value) -> Vec<Value> {
    let drivers = node
        .pointer("/spec/drivers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    vec![name_cell(node), json!(drivers), age_cell(node)]
}

fn csi_driver_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        boolean("AttachRequired", "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable."),
        boolean("PodInfoOnMount", "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable."),
        boolean("StorageCapacity", "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable."),
        string("TokenRequests", "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    \"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically."),
        boolean("RequiresRepublish", "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container."),
        string("Modes", "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable."),
        AGE_COLUMN,
    ]
}

/// Comma-joined strings of a list at a pointer (`field` of each entry, or
/// the entries themselves when `field` is empty); `None` when absent.
fn joined(obj: &Value, pointer: &str, field: &str) -> Option<String> {
    let items = obj.pointer(pointer)?.as_array()?;
    let parts: Vec<&str> = items
        .iter()
        .filter_map(|i| {
            if field.is_empty() {
                Some(i)
            } else {
                i.get(field)
            }
        })
        .filter_map(Value::as_str)
        .collect();
    Some(parts.join(","))
}

fn csi_driver_row(driver: &Value) -> Vec<Value> {
    let token_requests =
        joined(driver, "/spec/tokenRequests", "audience").unwrap_or_else(|| "<unset>".to_owned());
    let modes = match joined(driver, "/spec/volumeLifecycleModes", "") {
        Some(m) if !m.is_empty() => m,
        _ => "<none>".to_owned(),
    };
    vec![
        name_cell(driver),
        flag(driver, "/spec/attachRequired", true),
        flag(driver, "/spec/podInfoOnMount", false),
        flag(driver, "/spec/storageCapacity", false),
        json!(token_requests),
        flag(driver, "/spec/requiresRepublish", false),
        json!(modes),
        age_cell(driver),
    ]
}

fn csi_storage_capacity_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("StorageClassName", "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that object no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its creator. This field is immutable."),
        string("Capacity", "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec 1.2) defined as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, that information is currently unavailable."),
    ]
}

/// A quantity in its canonical form, as upstream's `Quantity.String()`.
fn quantity(value: &Value) -> String {
    canonicalize_json(value).unwrap_or_else(|_| value.as_str().unwrap_or("").to_owned())
}

fn csi_storage_capacity_row(capacity: &Value) -> Vec<Value> {
    let amount = capacity
        .get("capacity")
        .filter(|c| !c.is_null())
        .map_or_else(|| "<unset>".to_owned(), quantity);
    vec![
        name_cell(capacity),
        json!(text(capacity, "/storageClassName")),
        json!(amount),
    ]
}

fn pvc_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Status", "phase represents the current phase of PersistentVolumeClaim."),
        string("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim."),
        string("Capacity", "capacity represents the actual resources of the underlying volume."),
        string("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"),
        string("StorageClass", "StorageClass of the pvc"),
        string("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        AGE_COLUMN,
        string("VolumeMode", "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.").wide(),
    ]
}

/// Upstream's `GetAccessModesAsString`: the short forms, deduplicated, in
/// a fixed order.
fn access_modes(obj: &Value, pointer: &str) -> String {
    const MODES: [(&str, &str); 4] = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ];
    let present = obj.pointer(pointer).and_then(Value::as_array);
    let has = |long: &str| present.is_some_and(|a| a.iter().any(|m| m.as_str() == Some(long)));
    let short: Vec<&str> = MODES
        .iter()
        .filter(|(long, _)| has(long))
        .map(|(_, short)| *short)
        .collect();
    short.join(",")
}

fn pvc_row(claim: &Value) -> Vec<Value> {
    let phase = if claim.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        text(claim, "/status/phase")
    };
    let volume = text(claim, "/spec/volumeName");
    // Capacity and access modes are the bound volume's, so only shown once
    // the claim names one; a bound claim without status prints "0".
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        let capacity = claim
            .pointer("/status/capacity/storage")
            .map_or_else(|| "0".to_owned(), quantity);
        (capacity, access_modes(claim, "/status/accessModes"))
    };
    // The beta annotation wins over the field, as upstream's helper has it.
    let class = claim
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .unwrap_or_else(|| text(claim, "/spec/storageClassName"));
    vec![
        name_cell(claim),
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        or_default(claim, "/spec/volumeAttributesClassName", "<unset>"),
        age_cell(claim),
        or_default(claim, "/spec/volumeMode", "<unset>"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row without its Age cell (at `age`), which depends on the clock.
    fn cells(mut row: Vec<Value>, age: usize) -> Vec<Value> {
        row.remove(age);
        row
    }

    #[test]
    fn bindings_print_role_ref_and_subjects_by_kind() {
        let binding = json!({
            "metadata": {"name": "rb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
                {"kind": "Group", "name": "devs"},
                {"kind": "User", "name": "bob"},
                {"kind": "ServiceAccount", "name": "bare"},
            ],
        });
        assert_eq!(
            cells(binding_row(&binding), 2),
            vec![
                json!("rb"),
                json!("ClusterRole/view"),
                json!("alice, bob"),
                json!("devs"),
                json!("ci/builder, /bare"),
            ]
        );
        let empty = json!({"metadata": {"name": "e"}, "roleRef": {"kind": "Role", "name": "r"}});
        assert_eq!(
            cells(binding_row(&empty), 2),
            vec![json!("e"), json!("Role/r"), json!(""), json!(""), json!("")]
        );
        assert_eq!(role_binding_columns().len(), binding_row(&empty).len());
        let wide: Vec<u32> = cluster_role_binding_columns()
            .iter()
            .map(|c| c.priority)
            .collect();
        assert_eq!(wide, [0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn storage_classes_mark_defaults_and_fill_unset_fields() {
        let bare = json!({"metadata": {"name": "plain"}, "provisioner": "example.com/p"});
        assert_eq!(
            cells(storage_class_row(&bare), 5),
            vec![
                json!("plain"),
                json!("example.com/p"),
                json!("Delete"),
                json!("Immediate"),
                json!(false),
            ]
        );
        let default = json!({
            "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "example.com/p",
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": true,
        });
        assert_eq!(
            cells(storage_class_row(&default), 5),
            vec![
                json!("fast (default)"),
                json!("example.com/p"),
                json!("Retain"),
                json!("WaitForFirstConsumer"),
                json!(true),
            ]
        );
        let beta = json!({"metadata": {"name": "b", "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"}}});
        assert_eq!(storage_class_row(&beta)[0], json!("b (default)"));
        let not = json!({"metadata": {"name": "n", "annotations": {"storageclass.kubernetes.io/is-default-class": "false"}}});
        assert_eq!(storage_class_row(&not)[0], json!("n"));
        assert_eq!(storage_class_columns().len(), 6);
    }

    #[test]
    fn volume_attachments_and_attributes_classes() {
        let attachment = json!({
            "metadata": {"name": "va"},
            "spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}},
            "status": {"attached": true},
        });
        assert_eq!(
            cells(volume_attachment_row(&attachment), 5),
            vec![
                json!("va"),
                json!("csi.example.com"),
                json!("pv1"),
                json!("n1"),
                json!(true)
            ]
        );
        let inline = json!({"metadata": {"name": "v2"}, "spec": {"attacher": "a", "nodeName": "n", "source": {}}});
        assert_eq!(volume_attachment_row(&inline)[2], json!(""));
        assert_eq!(volume_attachment_row(&inline)[4], json!(false));
        assert_eq!(volume_attachment_columns()[1].format, "name");

        let vac = json!({"metadata": {"name": "gold"}, "driverName": "csi.example.com"});
        assert_eq!(
            cells(volume_attributes_class_row(&vac), 2),
            vec![json!("gold"), json!("csi.example.com")]
        );
    }

    #[test]
    fn csi_objects_print_upstream_defaults() {
        let node = json!({"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(cells(csi_node_row(&node), 2), vec![json!("n1"), json!(2)]);
        let empty_node = json!({"metadata": {"name": "n2"}, "spec": {}});
        assert_eq!(csi_node_row(&empty_node)[1], json!(0));

        let bare = json!({"metadata": {"name": "d"}, "spec": {}});
        assert_eq!(
            cells(csi_driver_row(&bare), 7),
            vec![
                json!("d"),
                json!(true),
                json!(false),
                json!(false),
                json!("<unset>"),
                json!(false),
                json!("<none>"),
            ]
        );
        let full = json!({"metadata": {"name": "d"}, "spec": {
            "attachRequired": false, "podInfoOnMount": true, "storageCapacity": true,
            "tokenRequests": [{"audience": "a1"}, {"audience": "a2", "expirationSeconds": 3600}],
            "requiresRepublish": true, "volumeLifecycleModes": ["Persistent", "Ephemeral"],
        }});
        assert_eq!(
            cells(csi_driver_row(&full), 7),
            vec![
                json!("d"),
                json!(false),
                json!(true),
                json!(true),
                json!("a1,a2"),
                json!(true),
                json!("Persistent,Ephemeral"),
            ]
        );
        assert_eq!(csi_driver_columns().len(), csi_driver_row(&full).len());

        let cap =
            json!({"metadata": {"name": "c"}, "storageClassName": "fast", "capacity": "1024Mi"});
        assert_eq!(
            csi_storage_capacity_row(&cap),
            vec![json!("c"), json!("fast"), json!("1Gi")]
        );
        let unknown = json!({"metadata": {"name": "c"}, "storageClassName": "fast"});
        assert_eq!(csi_storage_capacity_row(&unknown)[2], json!("<unset>"));
    }

    #[test]
    fn claims_show_capacity_only_once_bound() {
        let pending = json!({
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": "fast", "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"},
        });
        assert_eq!(
            cells(pvc_row(&pending), 7),
            vec![
                json!("data"),
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!("fast"),
                json!("<unset>"),
                json!("Filesystem"),
            ]
        );
        let bound = json!({
            "metadata": {"name": "db", "deletionTimestamp": "2024-01-01T00:00:00Z",
                         "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"volumeName": "pv-1", "storageClassName": "fast", "volumeAttributesClassName": "gold"},
            "status": {"phase": "Bound", "capacity": {"storage": "2048Mi"},
                       "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"]},
        });
        assert_eq!(
            cells(pvc_row(&bound), 7),
            vec![
                json!("db"),
                json!("Terminating"),
                json!("pv-1"),
                json!("2Gi"),
                json!("RWO,RWX"),
                json!("old"),
                json!("gold"),
                json!("<unset>"),
            ]
        );
        let no_status = json!({"metadata": {"name": "x"}, "spec": {"volumeName": "pv"}});
        assert_eq!(pvc_row(&no_status)[3], json!("0"));
        let wide: Vec<u32> = pvc_columns().iter().map(|c| c.priority).collect();
        assert_eq!(wide, [0, 0, 0, 0, 0, 0, 0, 0, 1]);
    }
}
