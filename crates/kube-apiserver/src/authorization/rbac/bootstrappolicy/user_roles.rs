//! The rules of the roles that `view`, `edit` and `admin` aggregate
//! (upstream's `system:aggregate-to-*`), in upstream's rule order.

use serde_json::Value;

use super::{rule, GROUP, READ, READ_WRITE, RESOURCE};

/// Every write verb but reading (upstream's `Write`).
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const CORE: &[&str] = &[""];

/// What view may read of the core group.
fn core_view_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            CORE,
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            CORE,
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        // Reading namespaces at namespace scope means reading this namespace.
        rule(READ, CORE, &["namespaces"]),
    ]
}

pub(super) fn view_rules() -> Vec<Value> {
    let mut rules = core_view_rules();
    rules.extend([
        rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
        rule(
            READ,
            &["apps"],
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
            ],
        ),
        rule(
            READ,
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            &["batch"],
            &["jobs", "jobs/status", "cronjobs", "cronjobs/status"],
        ),
        rule(
            READ,
            &["extensions"],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(
            READ,
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            &["networking.k8s.io"],
            &["ingresses", "ingresses/status", "networkpolicies"],
        ),
        // DynamicResourceAllocation (GA, on by default).
        rule(
            READ,
            RESOURCE,
            &[
                "resourceclaims",
                "resourceclaims/status",
                "resourceclaimtemplates",
            ],
        ),
    ]);
    rules
}

/// What edit may do in the core group.
fn core_edit_rules() -> Vec<Value> {
    vec![
        // Reading what view leaves out as too powerful to read.
        rule(
            READ,
            CORE,
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], CORE, &["serviceaccounts"]),
        rule(
            WRITE,
            CORE,
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        rule(&["create"], CORE, &["pods/eviction"]),
        rule(
            WRITE,
            CORE,
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        rule(&["create"], CORE, &["serviceaccounts/token"]),
    ]
}

pub(super) fn edit_rules() -> Vec<Value> {
    let mut rules = core_edit_rules();
    rules.extend([
        rule(
            WRITE,
            &["apps"],
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
        rule(WRITE, &["batch"], &["jobs", "cronjobs"]),
        rule(
            WRITE,
            &["extensions"],
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
        rule(
            WRITE,
            &["networking.k8s.io"],
            &["networkpolicies", "ingresses"],
        ),
        // Applications' own leader election.
        rule(READ_WRITE, &["coordination.k8s.io"], &["leases"]),
        // DynamicResourceAllocation (GA, on by default).
        rule(
            WRITE,
            RESOURCE,
            &["resourceclaims", "resourceclaimtemplates"],
        ),
    ]);
    rules
}

pub(super) fn admin_rules() -> Vec<Value> {
    vec![
        rule(
            &["create"],
            &["authorization.k8s.io"],
            &["localsubjectaccessreviews"],
        ),
        rule(READ_WRITE, &[GROUP], &["roles", "rolebindings"]),
    ]
}
