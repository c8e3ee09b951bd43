//! Strategies of the workload resources (apps/v1, batch/v1): upstream's
//! defaults and printer columns.

use serde_json::{json, Value};

use super::core::{default_field, default_pod_spec};
use super::printers::*;
use super::ResourceStrategy;

fn default_template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

/// Upstream's defaults of an update strategy: type `RollingUpdate` when
/// unset, and for that type each missing rolling-update parameter (an
/// empty `strategy: {}`, as clients send it, is filled in too).
fn default_update_strategy(spec: &mut Value, key: &str, rolling: Value) {
    default_field(spec, key, json!({}));
    let Some(strategy) = spec.get_mut(key).filter(|s| s.is_object()) else {
        return;
    };
    default_field(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] != "RollingUpdate" {
        return;
    }
    default_field(strategy, "rollingUpdate", json!({}));
    if let (Some(params), Value::Object(defaults)) = (strategy.get_mut("rollingUpdate"), rolling) {
        for (name, value) in defaults {
            default_field(params, &name, value);
        }
    }
}

fn deployment_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "replicas", json!(1));
        default_update_strategy(
            spec,
            "strategy",
            json!({"maxUnavailable": "25%", "maxSurge": "25%"}),
        );
        default_field(spec, "revisionHistoryLimit", json!(10));
        default_field(spec, "progressDeadlineSeconds", json!(600));
    }
    default_template(obj);
}

fn replicaset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "replicas", json!(1));
    }
    default_template(obj);
}

fn statefulset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "replicas", json!(1));
        default_field(spec, "podManagementPolicy", json!("OrderedReady"));
        default_update_strategy(spec, "updateStrategy", json!({"partition": 0}));
        default_field(spec, "revisionHistoryLimit", json!(10));
        default_field(
            spec,
            "persistentVolumeClaimRetentionPolicy",
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
        );
    }
    default_template(obj);
}

fn daemonset_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_update_strategy(
            spec,
            "updateStrategy",
            json!({"maxUnavailable": 1, "maxSurge": 0}),
        );
        default_field(spec, "revisionHistoryLimit", json!(10));
    }
    default_template(obj);
}

fn job_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "parallelism", json!(1));
        default_field(spec, "backoffLimit", json!(6));
        default_field(spec, "completionMode", json!("NonIndexed"));
        default_field(spec, "suspend", json!(false));
        default_field(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
        if spec.get("completions").is_none() && spec.get("parallelism") == Some(&json!(1)) {
            default_field(spec, "completions", json!(1));
        }
    }
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

fn cronjob_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "concurrencyPolicy", json!("Allow"));
        default_field(spec, "suspend", json!(false));
        default_field(spec, "successfulJobsHistoryLimit", json!(3));
        default_field(spec, "failedJobsHistoryLimit", json!(1));
    }
    if let Some(spec) = obj.pointer_mut("/spec/jobTemplate/spec/template/spec") {
        default_pod_spec(spec);
    }
}

fn containers_column() -> TableColumn {
    string("Containers", "Names of each container in the template.").wide()
}

fn images_column() -> TableColumn {
    string(
        "Images",
        "Images referenced by each container in the template.",
    )
    .wide()
}

fn selector_column() -> TableColumn {
    string("Selector", "Label selector for pods.").wide()
}

const CONTAINERS: &str = "/spec/template/spec/containers";

fn deployment_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Ready", "Number of the pod with ready state"),
        integer("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
        integer("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
        AGE_COLUMN,
        containers_column(),
        images_column(),
        selector_column(),
    ]
}

fn deployment_row(d: &Value) -> Vec<Value> {
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
        join(d, CONTAINERS, "name"),
        join(d, CONTAINERS, "image"),
        selector(d, "/spec/selector"),
    ]
}

fn replicaset_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer("Desired", "Number of desired pods."),
        integer("Current", "Number of actual pods."),
        integer("Ready", "Number of ready pods."),
        AGE_COLUMN,
        containers_column(),
        images_column(),
        selector_column(),
    ]
}

fn replicaset_row(r: &Value) -> Vec<Value> {
    vec![
        name_cell(r),
        json!(int(r, "/spec/replicas")),
        json!(int(r, "/status/replicas")),
        json!(int(r, "/status/readyReplicas")),
        age_cell(r),
        join(r, CONTAINERS, "name"),
        join(r, CONTAINERS, "image"),
        selector(r, "/spec/selector"),
    ]
}

fn statefulset_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Ready", "Number of the pod with ready state"),
        AGE_COLUMN,
        containers_column(),
        images_column(),
    ]
}

fn statefulset_row(s: &Value) -> Vec<Value> {
    vec![
        name_cell(s),
        json!(format!(
            "{}/{}",
            int(s, "/status/readyReplicas"),
            int(s, "/spec/replicas")
        )),
        age_cell(s),
        join(s, CONTAINERS, "name"),
        join(s, CONTAINERS, "image"),
    ]
}

fn daemonset_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer("Desired", "The total number of nodes that should be running the daemon pod."),
        integer("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod."),
        integer("Ready", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready."),
        integer("Up-to-date", "The total number of nodes that are running updated daemon pod"),
        integer("Available", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available."),
        string("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node."),
        AGE_COLUMN,
        containers_column(),
        images_column(),
        selector_column(),
    ]
}

fn daemonset_row(d: &Value) -> Vec<Value> {
    vec![
        name_cell(d),
        json!(int(d, "/status/desiredNumberScheduled")),
        json!(int(d, "/status/currentNumberScheduled")),
        json!(int(d, "/status/numberReady")),
        json!(int(d, "/status/updatedNumberScheduled")),
        json!(int(d, "/status/numberAvailable")),
        map_selector(d, "/spec/template/spec/nodeSelector"),
        age_cell(d),
        join(d, CONTAINERS, "name"),
        join(d, CONTAINERS, "image"),
        selector(d, "/spec/selector"),
    ]
}

fn job_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Status", "Status of the job."),
        string("Completions", "The completion status of the job"),
        string("Duration", "Time required to complete the job."),
        AGE_COLUMN,
        containers_column(),
        images_column(),
        selector_column(),
    ]
}

fn job_row(j: &Value) -> Vec<Value> {
    let completions = match j.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(n) => format!("{}/{n}", int(j, "/status/succeeded")),
        None => format!(
            "{}/1 of {}",
            int(j, "/status/succeeded"),
            int(j, "/spec/parallelism")
        ),
    };
    let status = if int(j, "/status/active") > 0 {
        "Running"
    } else {
        "Pending"
    };
    vec![
        name_cell(j),
        json!(status),
        json!(completions),
        json!(""),
        age_cell(j),
        join(j, CONTAINERS, "name"),
        join(j, CONTAINERS, "image"),
        selector(j, "/spec/selector"),
    ]
}

fn cronjob_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Schedule", "The schedule in Cron format"),
        string("Timezone", "The time zone for the given schedule"),
        string("Suspend", "Whether to suspend subsequent executions"),
        integer("Active", "A list of pointers to currently running jobs."),
        string(
            "Last Schedule",
            "Information when was the last time the job was successfully scheduled.",
        ),
        AGE_COLUMN,
    ]
}

fn cronjob_row(c: &Value) -> Vec<Value> {
    let suspend = c.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    vec![
        name_cell(c),
        json!(text(c, "/spec/schedule")),
        or_none(c, "/spec/timeZone"),
        json!(if suspend { "True" } else { "False" }),
        json!(count(c, "/status/active")),
        or_none(c, "/status/lastScheduleTime"),
        age_cell(c),
    ]
}

fn workload(defaults: fn(&mut Value)) -> ResourceStrategy {
    ResourceStrategy {
        defaults,
        ..ResourceStrategy::spec_status()
    }
}

pub fn deployments() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_deployment,
        validate_update: super::validation::update_workloads::validate_selector_update,
        ..workload(deployment_defaults)
    }
    .printed(deployment_columns, deployment_row)
}

pub fn replicasets() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_replicaset,
        validate_update: super::validation::update_workloads::validate_selector_update,
        ..workload(replicaset_defaults)
    }
    .printed(replicaset_columns, replicaset_row)
}

pub fn statefulsets() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_statefulset,
        validate_update: super::validation::update_workloads::validate_statefulset_update,
        ..workload(statefulset_defaults)
    }
    .printed(statefulset_columns, statefulset_row)
}

pub fn daemonsets() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_daemonset,
        validate_update: super::validation::update_workloads::validate_selector_update,
        ..workload(daemonset_defaults)
    }
    .printed(daemonset_columns, daemonset_row)
}

pub fn jobs() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_job,
        validate_update: super::validation::update_workloads::validate_job_update,
        ..workload(job_defaults)
    }
    .printed(job_columns, job_row)
}

pub fn cronjobs() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::workloads::validate_cronjob,
        ..workload(cronjob_defaults)
    }
    .printed(cronjob_columns, cronjob_row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_defaults_follow_upstream() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}});
        deployment_defaults(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
    }

    #[test]
    fn empty_update_strategies_are_filled_in() {
        let mut d = json!({"spec": {"strategy": {}}});
        deployment_defaults(&mut d);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        let mut d = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}}});
        deployment_defaults(&mut d);
        assert_eq!(
            d["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": 2, "maxUnavailable": "25%"})
        );
        let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
        deployment_defaults(&mut d);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        let mut ds = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
        daemonset_defaults(&mut ds);
        assert_eq!(ds["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        let mut sts = json!({"spec": {"updateStrategy": {}}});
        statefulset_defaults(&mut sts);
        assert_eq!(
            sts["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
    }

    #[test]
    fn deployment_rows() {
        let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        let row = deployment_row(&d);
        assert_eq!(row[1], "2/3");
        assert_eq!(row[2], 3);
        assert_eq!(row[7], "app=web");
    }
}
