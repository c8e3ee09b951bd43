//! Printers of core/v1 (Endpoints, PersistentVolume, PodTemplate,
//! ReplicationController, ResourceQuota), apps ControllerRevision,
//! coordination Lease, node RuntimeClass and scheduling PriorityClass, as
//! upstream's `pkg/printers/internalversion`; autoscaling and certificates
//! have files of their own. LimitRange has no printer upstream and keeps the
//! default table.

use apimachinery::quantity::canonicalize_json;
use serde_json::{json, Value};

use super::{age_cell, int, integer, name_cell, string, text, Printer, TableColumn};
use super::{AGE_COLUMN, NAME_COLUMN};

pub const PRINTERS: &[Printer] = &[
    Printer {
        group: "",
        version: "v1",
        kind: "Endpoints",
        columns: endpoints_columns,
        row: endpoints_row,
    },
    Printer {
        group: "",
        version: "v1",
        kind: "PersistentVolume",
        columns: persistent_volume_columns,
        row: persistent_volume_row,
    },
    Printer {
        group: "",
        version: "v1",
        kind: "PodTemplate",
        columns: pod_template_columns,
        row: pod_template_row,
    },
    Printer {
        group: "",
        version: "v1",
        kind: "ReplicationController",
        columns: replication_controller_columns,
        row: replication_controller_row,
    },
    Printer {
        group: "",
        version: "v1",
        kind: "ResourceQuota",
        columns: resource_quota_columns,
        row: resource_quota_row,
    },
    Printer {
        group: "apps",
        version: "v1",
        kind: "ControllerRevision",
        columns: controller_revision_columns,
        row: controller_revision_row,
    },
    Printer {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        columns: lease_columns,
        row: lease_row,
    },
    Printer {
        group: "node.k8s.io",
        version: "v1",
        kind: "RuntimeClass",
        columns: runtime_class_columns,
        row: runtime_class_row,
    },
    Printer {
        group: "scheduling.k8s.io",
        version: "v1",
        kind: "PriorityClass",
        columns: priority_class_columns,
        row: priority_class_row,
    },
    super::autoscaling::V2,
    super::autoscaling::V1,
    super::certificates::CSR,
    super::certificates::CLUSTER_TRUST_BUNDLE,
];

/// A quantity as upstream's `Quantity.String()` prints it after decoding.
pub(super) fn quantity(value: &Value) -> String {
    canonicalize_json(value).unwrap_or_else(|_| value.as_str().unwrap_or("").to_owned())
}

/// A string→string map as upstream's `labels.FormatLabels`: sorted by key,
/// `<none>` when empty.
fn format_labels(obj: &Value, pointer: &str) -> Value {
    let Some(map) = obj.pointer(pointer).and_then(Value::as_object) else {
        return json!("<none>");
    };
    let mut pairs: Vec<(&String, &str)> = map
        .iter()
        .map(|(k, v)| (k, v.as_str().unwrap_or("")))
        .collect();
    if pairs.is_empty() {
        return json!("<none>");
    }
    pairs.sort_unstable();
    let parts: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    json!(parts.join(","))
}

/// Upstream's `layoutContainerCells`: container names and images, each
/// comma-joined (empty when there are none).
fn container_cells(obj: &Value, pointer: &str) -> [Value; 2] {
    let containers = obj
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let field = |name: &str| -> Value {
        let items: Vec<&str> = containers.iter().map(|c| text(c, name)).collect();
        json!(items.join(","))
    };
    [field("/name"), field("/image")]
}

fn endpoints_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Endpoints", "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service."),
        AGE_COLUMN,
    ]
}

fn endpoints_row(obj: &Value) -> Vec<Value> {
    vec![name_cell(obj), json!(format_endpoints(obj)), age_cell(obj)]
}

/// Upstream's `formatEndpoints`: the first three ready `ip:port` pairs (or
/// bare IPs of subsets without ports), then how many more there are.
fn format_endpoints(obj: &Value) -> String {
    const MAX: usize = 3;
    let subsets = obj
        .pointer("/subsets")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if subsets.is_empty() {
        return "<none>".into();
    }
    let mut list: Vec<String> = Vec::with_capacity(MAX);
    let mut more = false;
    let mut count = 0;
    for subset in subsets {
        let addresses = subset
            .get("addresses")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let ports = subset
            .get("ports")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // Headless services may have addresses without ports.
        let port_numbers: Vec<Option<i64>> = if ports.is_empty() {
            vec![None]
        } else {
            ports.iter().map(|p| Some(int(p, "/port"))).collect()
        };
        for port in port_numbers {
            count += addresses.len();
            for address in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                let ip = text(address, "/ip");
                list.push(match port {
                    None => ip.to_owned(),
                    Some(port) if ip.contains(':') => format!("[{ip}]:{port}"),
                    Some(port) => format!("{ip}:{port}"),
                });
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

fn persistent_volume_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Capacity", "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
        string("Access Modes", "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
        string("Reclaim Policy", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
        string("Status", "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"),
        string("Claim", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
        string("StorageClass", "StorageClass of the pv"),
        string("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        string("Reason", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
        AGE_COLUMN,
        string("VolumeMode", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.").wide(),
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
    let present: Vec<&str> = obj
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let short: Vec<&str> = MODES
        .iter()
        .filter(|(long, _)| present.contains(long))
        .map(|(_, short)| *short)
        .collect();
    short.join(",")
}

fn or_unset(obj: &Value, pointer: &str) -> Value {
    match obj.pointer(pointer).and_then(Value::as_str) {
        Some(s) => json!(s),
        None => json!("<unset>"),
    }
}

fn persistent_volume_row(pv: &Value) -> Vec<Value> {
    let claim = match pv.pointer("/spec/claimRef") {
        Some(r) if !r.is_null() => format!("{}/{}", text(r, "/namespace"), text(r, "/name")),
        _ => String::new(),
    };
    let capacity = pv
        .pointer("/spec/capacity/storage")
        .map_or_else(|| "0".to_owned(), quantity);
    let phase = if pv.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        text(pv, "/status/phase")
    };
    // The beta annotation wins over the field, as upstream's helper has it.
    let class = pv
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .unwrap_or_else(|| text(pv, "/spec/storageClassName"));
    vec![
        name_cell(pv),
        json!(capacity),
        json!(access_modes(pv, "/spec/accessModes")),
        json!(text(pv, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase),
        json!(claim),
        json!(class),
        or_unset(pv, "/spec/volumeAttributesClassName"),
        json!(text(pv, "/status/reason")),
        age_cell(pv),
        or_unset(pv, "/spec/volumeMode"),
    ]
}

const CONTAINERS_DESCRIPTION: &str = "Names of each container in the template.";
const IMAGES_DESCRIPTION: &str = "Images referenced by each container in the template.";

fn pod_template_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Containers", CONTAINERS_DESCRIPTION),
        string("Images", IMAGES_DESCRIPTION),
        string("Pod Labels", "The labels for the pod template."),
    ]
}

fn pod_template_row(obj: &Value) -> Vec<Value> {
    let [names, images] = container_cells(obj, "/template/spec/containers");
    vec![
        name_cell(obj),
        names,
        images,
        format_labels(obj, "/template/metadata/labels"),
    ]
}

fn replication_controller_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"),
        integer("Current", "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"),
        integer("Ready", "The number of ready replicas for this replication controller."),
        AGE_COLUMN,
        string("Containers", CONTAINERS_DESCRIPTION).wide(),
        string("Images", IMAGES_DESCRIPTION).wide(),
        string("Selector", "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors").wide(),
    ]
}

fn replication_controller_row(rc: &Value) -> Vec<Value> {
    let [names, images] = container_cells(rc, "/spec/template/spec/containers");
    vec![
        name_cell(rc),
        json!(int(rc, "/spec/replicas")),
        json!(int(rc, "/status/replicas")),
        json!(int(rc, "/status/readyReplicas")),
        age_cell(rc),
        names,
        images,
        format_labels(rc, "/spec/selector"),
    ]
}

fn resource_quota_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
        string("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
        AGE_COLUMN,
    ]
}

/// `resource: used/hard` for every hard limit, sorted by resource name;
/// `limits.*` resources go to the Limit column, the rest to Request.
fn resource_quota_row(rq: &Value) -> Vec<Value> {
    let mut hard: Vec<(&String, &Value)> = rq
        .pointer("/status/hard")
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    hard.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut requests: Vec<String> = Vec::new();
    let mut limits: Vec<String> = Vec::new();
    for (resource, hard_quantity) in hard {
        let used = rq
            .pointer("/status/used")
            .and_then(|u| u.get(resource.as_str()))
            .map_or_else(|| "0".to_owned(), quantity);
        let entry = format!("{resource}: {used}/{}", quantity(hard_quantity));
        match resource.split_once('.') {
            Some(("limits", _)) => limits.push(entry),
            _ => requests.push(entry),
        }
    }
    vec![
        name_cell(rq),
        json!(requests.join(", ")),
        json!(limits.join(", ")),
        age_cell(rq),
    ]
}

fn controller_revision_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Controller", "Controller of the object"),
        string(
            "Revision",
            "revision indicates the revision of the state represented by Data.",
        ),
        AGE_COLUMN,
    ]
}

/// The controlling owner as `kind.group/name` in lower case (upstream's
/// `formatResourceName`), or `<none>`.
fn controller_name(obj: &Value) -> String {
    let owners = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(owner) = owners
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
    else {
        return "<none>".into();
    };
    let group = match text(owner, "/apiVersion").split_once('/') {
        Some((group, _)) => group,
        None => "",
    };
    let kind = text(owner, "/kind");
    let name = text(owner, "/name");
    match (group, kind) {
        ("", "") => name.to_owned(),
        ("", kind) => format!("{}/{name}", kind.to_lowercase()),
        (group, kind) => format!("{}.{}/{name}", kind.to_lowercase(), group.to_lowercase()),
    }
}

fn controller_revision_row(obj: &Value) -> Vec<Value> {
    vec![
        name_cell(obj),
        json!(controller_name(obj)),
        json!(int(obj, "/revision")),
        age_cell(obj),
    ]
}

fn lease_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Holder", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."),
        AGE_COLUMN,
    ]
}

fn lease_row(obj: &Value) -> Vec<Value> {
    vec![
        name_cell(obj),
        json!(text(obj, "/spec/holderIdentity")),
        age_cell(obj),
    ]
}

fn runtime_class_columns() -> Vec<TableColumn> {
    // Upstream looks the description up in ObjectMeta's docs, which have no
    // "handler" entry: it is empty.
    vec![NAME_COLUMN, string("Handler", ""), AGE_COLUMN]
}

fn runtime_class_row(obj: &Value) -> Vec<Value> {
    vec![name_cell(obj), json!(text(obj, "/handler")), age_cell(obj)]
}

fn priority_class_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer("Value", "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec."),
        TableColumn::new("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority."),
        AGE_COLUMN,
        string("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."),
    ]
}

fn priority_class_row(obj: &Value) -> Vec<Value> {
    let global_default = obj
        .get("globalDefault")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    vec![
        name_cell(obj),
        json!(int(obj, "/value")),
        json!(global_default),
        age_cell(obj),
        json!(text(obj, "/preemptionPolicy")),
    ]
}

#[cfg(test)]
mod tests;
