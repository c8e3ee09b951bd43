//! Printers of the kinds users meet first: core/v1 Pod, Node, Namespace,
//! ConfigMap, Secret, ServiceAccount and Event (also events.k8s.io/v1
//! Event, which upstream prints through the same function), apps/v1
//! Deployment, ReplicaSet, StatefulSet, DaemonSet and batch/v1 Job, CronJob
//! — columns and cells as upstream's `printPod`, `printNode`, ...

use std::collections::BTreeSet;

use apiserver::registry::rest::table::human_duration;
use chrono::{DateTime, FixedOffset, Utc};
use serde_json::{json, Value};

use super::{age_cell, count, int, integer, map_selector, name_cell, selector, string, text};
use super::{Printer, TableColumn};
use super::{AGE_COLUMN, NAME_COLUMN};

pub const PRINTERS: &[Printer] = &[
    printer("", "Pod", super::pod::columns, super::pod::row),
    printer("", "Node", node_columns, node_row),
    printer("", "Namespace", namespace_columns, namespace_row),
    printer("", "ConfigMap", configmap_columns, configmap_row),
    printer("", "Secret", secret_columns, secret_row),
    printer(
        "",
        "ServiceAccount",
        service_account_columns,
        service_account_row,
    ),
    printer("", "Event", event_columns, core_event_row),
    printer("events.k8s.io", "Event", event_columns, events_event_row),
    printer("apps", "Deployment", deployment_columns, deployment_row),
    printer("apps", "ReplicaSet", replicaset_columns, replicaset_row),
    printer("apps", "StatefulSet", statefulset_columns, statefulset_row),
    printer("apps", "DaemonSet", daemonset_columns, daemonset_row),
    printer("batch", "Job", job_columns, job_row),
    printer("batch", "CronJob", cronjob_columns, cronjob_row),
];

const fn printer(
    group: &'static str,
    kind: &'static str,
    columns: fn() -> Vec<TableColumn>,
    row: fn(&Value) -> Vec<Value>,
) -> Printer {
    Printer {
        group,
        version: "v1",
        kind,
        columns,
        row,
    }
}

/// A timestamp (metav1.Time or MicroTime) at a pointer; absent, null and
/// unparsable values are upstream's zero time.
pub(super) fn timestamp(obj: &Value, pointer: &str) -> Option<DateTime<FixedOffset>> {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
}

/// Upstream's `translateTimestampSince`: the age of a timestamp, or
/// `<unknown>` for the zero time.
pub(super) fn since(time: Option<DateTime<FixedOffset>>) -> String {
    match time {
        Some(t) => human_duration(Utc::now().signed_duration_since(t)),
        None => "<unknown>".to_owned(),
    }
}

/// Upstream's `layoutContainerCells`: container names and images, each
/// comma-joined (empty strings for no containers).
fn container_cells(obj: &Value, pointer: &str) -> [Value; 2] {
    let containers = obj
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let join = |field: &str| {
        let parts: Vec<&str> = containers.iter().map(|c| text(c, field)).collect();
        json!(parts.join(","))
    };
    [join("/name"), join("/image")]
}

const CONTAINERS_COLUMN: TableColumn =
    string("Containers", "Names of each container in the template.").wide();
const IMAGES_COLUMN: TableColumn = string(
    "Images",
    "Images referenced by each container in the template.",
)
.wide();

fn node_columns() -> Vec<TableColumn> {
    const ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
    vec![
        NAME_COLUMN,
        string("Status", "The status of the node"),
        string("Roles", "The roles of the node"),
        AGE_COLUMN,
        string("Version", "Kubelet Version reported by the node."),
        string("Internal-IP", ADDRESSES).wide(),
        string("External-IP", ADDRESSES).wide(),
        string("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).").wide(),
        string("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).").wide(),
        string("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).").wide(),
    ]
}

fn node_row(node: &Value) -> Vec<Value> {
    let conditions = node.pointer("/status/conditions").and_then(Value::as_array);
    // The last Ready condition wins, as in upstream's condition map.
    let ready = conditions
        .and_then(|cs| cs.iter().rev().find(|c| c["type"] == "Ready"))
        .map(|c| {
            if c["status"] == "True" {
                "Ready"
            } else {
                "NotReady"
            }
        });
    let mut status = ready.unwrap_or("Unknown").to_owned();
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = node.pointer("/metadata/labels").and_then(Value::as_object) {
        for (key, value) in labels {
            let value = value.as_str().unwrap_or("");
            match key.strip_prefix("node-role.kubernetes.io/") {
                Some(role) if !role.is_empty() => {
                    roles.insert(role);
                }
                _ if key == "kubernetes.io/role" && !value.is_empty() => {
                    roles.insert(value);
                }
                _ => {}
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |kind: &str| {
        let addresses = node.pointer("/status/addresses").and_then(Value::as_array);
        let found = addresses.and_then(|a| a.iter().find(|a| a["type"] == kind));
        json!(found.map_or("<none>", |a| text(a, "/address")))
    };
    let info = |field: &str| match text(node, &format!("/status/nodeInfo/{field}")) {
        "" => json!("<unknown>"),
        v => json!(v),
    };
    vec![
        name_cell(node),
        json!(status),
        json!(roles),
        age_cell(node),
        json!(text(node, "/status/nodeInfo/kubeletVersion")),
        address("InternalIP"),
        address("ExternalIP"),
        info("osImage"),
        info("kernelVersion"),
        info("containerRuntimeVersion"),
    ]
}

fn namespace_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Status", "The status of the namespace"),
        AGE_COLUMN,
    ]
}

fn namespace_row(ns: &Value) -> Vec<Value> {
    vec![
        name_cell(ns),
        json!(text(ns, "/status/phase")),
        age_cell(ns),
    ]
}

fn configmap_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Data", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."),
        AGE_COLUMN,
    ]
}

fn configmap_row(cm: &Value) -> Vec<Value> {
    let n = count(cm, "/data") + count(cm, "/binaryData");
    vec![name_cell(cm), json!(n), age_cell(cm)]
}

fn secret_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Type", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
        string("Data", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
        AGE_COLUMN,
    ]
}

fn secret_row(s: &Value) -> Vec<Value> {
    vec![
        name_cell(s),
        json!(text(s, "/type")),
        json!(count(s, "/data")),
        age_cell(s),
    ]
}

fn service_account_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret"),
        AGE_COLUMN,
    ]
}

fn service_account_row(sa: &Value) -> Vec<Value> {
    let n = count(sa, "/secrets");
    vec![name_cell(sa), json!(n), age_cell(sa)]
}

fn event_columns() -> Vec<TableColumn> {
    vec![
        string("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
        string("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
        string("Reason", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
        string("Object", "The object that this event is about."),
        string("Subobject", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.").wide(),
        string("Source", "The component reporting this event. Should be a short machine understandable string.").wide(),
        string("Message", "A human-readable description of the status of this operation."),
        string("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)").wide(),
        string("Count", "The number of times this event has occurred.").wide(),
        NAME_COLUMN.wide(),
    ]
}

/// Where an Event's fields are: core/v1 and events.k8s.io/v1 name them
/// differently, and upstream prints both as its internal Event.
struct EventFields {
    object: &'static str,
    message: &'static str,
    first: &'static str,
    last: &'static str,
    count: &'static str,
    source: &'static str,
    controller: &'static str,
}

fn core_event_row(ev: &Value) -> Vec<Value> {
    event_row(
        ev,
        &EventFields {
            object: "/involvedObject",
            message: "/message",
            first: "/firstTimestamp",
            last: "/lastTimestamp",
            count: "/count",
            source: "/source",
            controller: "/reportingComponent",
        },
    )
}

fn events_event_row(ev: &Value) -> Vec<Value> {
    event_row(
        ev,
        &EventFields {
            object: "/regarding",
            message: "/note",
            first: "/deprecatedFirstTimestamp",
            last: "/deprecatedLastTimestamp",
            count: "/deprecatedCount",
            source: "/deprecatedSource",
            controller: "/reportingController",
        },
    )
}

/// Upstream's `printEvent`.
fn event_row(ev: &Value, f: &EventFields) -> Vec<Value> {
    let first = match timestamp(ev, f.first) {
        Some(t) => since(Some(t)),
        None => since(timestamp(ev, "/eventTime")),
    };
    let mut last = match timestamp(ev, f.last) {
        Some(t) => since(Some(t)),
        None => first.clone(),
    };
    let mut count = int(ev, f.count);
    if ev.get("series").is_some_and(Value::is_object) {
        last = since(timestamp(ev, "/series/lastObservedTime"));
        count = int(ev, "/series/count");
    } else if count == 0 {
        // Singleton events of the new API carry no count.
        count = 1;
    }
    let object = ev.pointer(f.object).unwrap_or(&Value::Null);
    let kind = text(object, "/kind").to_lowercase();
    let target = match text(object, "/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let first_set = |a: &str, b: &str| -> String {
        let a = text(ev, a);
        if a.is_empty() { text(ev, b) } else { a }.to_owned()
    };
    let component = first_set(&format!("{}/component", f.source), f.controller);
    let instance = first_set(&format!("{}/host", f.source), "/reportingInstance");
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(text(ev, "/type")),
        json!(text(ev, "/reason")),
        json!(target),
        json!(text(object, "/fieldPath")),
        json!(source),
        json!(text(ev, f.message).trim()),
        json!(first),
        json!(count),
        name_cell(ev),
    ]
}

const TEMPLATE_CONTAINERS: &str = "/spec/template/spec/containers";

fn deployment_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Ready", "Number of the pod with ready state"),
        string("Up-to-date", "Total number of non-terminating pods targeted by this deployment that have the desired template spec."),
        string("Available", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment."),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        string("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.").wide(),
    ]
}

fn deployment_row(d: &Value) -> Vec<Value> {
    let [names, images] = container_cells(d, TEMPLATE_CONTAINERS);
    // Unlike the other workloads, upstream prints the selector's plain string here.
    let sel = match selector(d, "/spec/selector") {
        s if s == "<none>" => json!(""),
        s if s == "<error>" => json!("<invalid>"),
        s => s,
    };
    vec![
        name_cell(d),
        json!(format!(
            "{}/{}",
            int(d, "/status/readyReplicas"),
            int(d, "/spec/replicas")
        )),
        json!(int(d, "/status/updatedReplicas")),
        json!(int(d, "/status/availableReplicas")),
        age_cell(d),
        names,
        images,
        sel,
    ]
}

fn replicaset_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer("Desired", "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
        integer("Current", "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
        integer("Ready", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        string("Selector", "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors").wide(),
    ]
}

fn replicaset_row(r: &Value) -> Vec<Value> {
    let [names, images] = container_cells(r, TEMPLATE_CONTAINERS);
    vec![
        name_cell(r),
        json!(int(r, "/spec/replicas")),
        json!(int(r, "/status/replicas")),
        json!(int(r, "/status/readyReplicas")),
        age_cell(r),
        names,
        images,
        selector(r, "/spec/selector"),
    ]
}

fn statefulset_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Ready", "Number of the pod with ready state"),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
    ]
}

fn statefulset_row(s: &Value) -> Vec<Value> {
    let [names, images] = container_cells(s, TEMPLATE_CONTAINERS);
    vec![
        name_cell(s),
        json!(format!(
            "{}/{}",
            int(s, "/status/readyReplicas"),
            int(s, "/spec/replicas")
        )),
        age_cell(s),
        names,
        images,
    ]
}

fn daemonset_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer("Desired", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
        integer("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
        integer("Ready", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready."),
        integer("Up-to-date", "The total number of nodes that are running updated daemon pod"),
        integer("Available", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)"),
        string("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        string("Selector", "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors").wide(),
    ]
}

fn daemonset_row(d: &Value) -> Vec<Value> {
    let [names, images] = container_cells(d, TEMPLATE_CONTAINERS);
    vec![
        name_cell(d),
        json!(int(d, "/status/desiredNumberScheduled")),
        json!(int(d, "/status/currentNumberScheduled")),
        json!(int(d, "/status/numberReady")),
        json!(int(d, "/status/updatedNumberScheduled")),
        json!(int(d, "/status/numberAvailable")),
        map_selector(d, "/spec/template/spec/nodeSelector"),
        age_cell(d),
        names,
        images,
        selector(d, "/spec/selector"),
    ]
}

const JOB_SELECTOR: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

fn job_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Status", "Status of the job."),
        string("Completions", "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs."),
        string("Duration", "Time required to complete the job."),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        string("Selector", JOB_SELECTOR).wide(),
    ]
}

/// Upstream's `hasJobCondition`: the first condition of the type decides.
fn has_job_condition(job: &Value, kind: &str) -> bool {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .is_some_and(|c| c["status"] == "True")
}

fn job_status(job: &Value) -> &'static str {
    if has_job_condition(job, "Complete") {
        "Complete"
    } else if has_job_condition(job, "Failed") {
        "Failed"
    } else if job
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        "Terminating"
    } else if has_job_condition(job, "Suspended") {
        "Suspended"
    } else if has_job_condition(job, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

fn job_row(j: &Value) -> Vec<Value> {
    let succeeded = int(j, "/status/succeeded");
    let completions = match j.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(n) => format!("{succeeded}/{n}"),
        None => match int(j, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (
        timestamp(j, "/status/startTime"),
        timestamp(j, "/status/completionTime"),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => since(Some(start)),
        (Some(start), Some(end)) => human_duration(end.signed_duration_since(start)),
    };
    let [names, images] = container_cells(j, TEMPLATE_CONTAINERS);
    vec![
        name_cell(j),
        json!(job_status(j)),
        json!(completions),
        json!(duration),
        age_cell(j),
        names,
        images,
        selector(j, "/spec/selector"),
    ]
}

fn cronjob_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
        string("Timezone", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"),
        TableColumn::new("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false."),
        integer("Active", "A list of pointers to currently running jobs."),
        string("Last Schedule", "Information when was the last time the job was successfully scheduled."),
        AGE_COLUMN,
        CONTAINERS_COLUMN,
        IMAGES_COLUMN,
        string("Selector", JOB_SELECTOR).wide(),
    ]
}

fn cronjob_row(c: &Value) -> Vec<Value> {
    let suspend = match c.pointer("/spec/suspend").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let time_zone = c
        .pointer("/spec/timeZone")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let last_schedule = match timestamp(c, "/status/lastScheduleTime") {
        Some(t) => since(Some(t)),
        None => "<none>".to_owned(),
    };
    let active = count(c, "/status/active");
    let [names, images] = container_cells(c, "/spec/jobTemplate/spec/template/spec/containers");
    vec![
        name_cell(c),
        json!(text(c, "/spec/schedule")),
        json!(time_zone),
        json!(suspend),
        json!(active),
        json!(last_schedule),
        age_cell(c),
        names,
        images,
        selector(c, "/spec/jobTemplate/spec/selector"),
    ]
}

#[cfg(test)]
mod tests;
