//! The roles of kube-controller-manager's controllers in upstream's
//! bootstrap policy: one ClusterRole `system:controller:<name>` per
//! controller, bound to the ServiceAccount `kube-system/<name>` the
//! controller manager runs it as (with `--use-service-account-credentials`).
//!
//! The set is the one upstream creates with 1.37's default feature gates;
//! every string list is sorted, as upstream's rule builder leaves it.

use serde_json::{json, Value};

use super::{
    cluster_role, cluster_role_binding, events_rule, named, rule,
    service_account as account_subject, GROUP, RESOURCE,
};

const PREFIX: &str = "system:controller:";

const CORE: &[&str] = &[""];
const ALL: &[&str] = &["*"];
const APPS: &[&str] = &["apps"];
const APPS_EXT: &[&str] = &["apps", "extensions"];
const BATCH: &[&str] = &["batch"];
const CERTIFICATES: &[&str] = &["certificates.k8s.io"];
const DISCOVERY: &[&str] = &["discovery.k8s.io"];
const NETWORKING: &[&str] = &["networking.k8s.io"];
const POLICY: &[&str] = &["policy"];
const STORAGE: &[&str] = &["storage.k8s.io"];

const READ: &[&str] = &["get", "list", "watch"];
const LIST_WATCH: &[&str] = &["list", "watch"];
const UPDATE: &[&str] = &["update"];
const PATCH_UPDATE: &[&str] = &["patch", "update"];
/// Everything but `deletecollection`.
const MANAGE: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// What the endpoint controllers do with the objects they own.
const OWN: &[&str] = &["create", "delete", "get", "list", "update", "watch"];
const READ_UPDATE: &[&str] = &["get", "list", "update", "watch"];
const CREATE_PODS: &[&str] = &["create", "delete", "list", "patch", "watch"];

/// A controller's rules.
type Rules = fn() -> Vec<Value>;

/// Every controller with a role, in the order upstream's policy adds them.
const CONTROLLERS: &[(&str, Rules)] = &[
    ("attachdetach-controller", attach_detach),
    (
        "clusterrole-aggregation-controller",
        clusterrole_aggregation,
    ),
    ("cronjob-controller", cronjob),
    ("daemon-set-controller", daemon_set),
    ("deployment-controller", deployment),
    ("disruption-controller", disruption),
    ("endpoint-controller", endpoint),
    ("endpointslice-controller", endpointslice),
    ("endpointslicemirroring-controller", endpointslice_mirroring),
    ("expand-controller", expand),
    ("ephemeral-volume-controller", ephemeral_volume),
    ("resource-claim-controller", resource_claim),
    ("device-taint-eviction-controller", device_taint_eviction),
    ("generic-garbage-collector", generic_garbage_collector),
    ("horizontal-pod-autoscaler", horizontal_pod_autoscaler),
    ("job-controller", job),
    ("namespace-controller", namespace),
    ("node-controller", node),
    ("persistent-volume-binder", persistent_volume_binder),
    ("pod-garbage-collector", pod_garbage_collector),
    ("replicaset-controller", replicaset),
    ("replication-controller", replication),
    ("resourcequota-controller", resourcequota),
    ("route-controller", route),
    ("service-account-controller", service_account),
    ("service-controller", service),
    ("service-cidrs-controller", service_cidrs),
    ("statefulset-controller", statefulset),
    ("ttl-controller", ttl),
    ("certificate-controller", certificate),
    ("pvc-protection-controller", pvc_protection),
    ("pv-protection-controller", pv_protection),
    (
        "volumeattributesclass-protection-controller",
        volumeattributesclass_protection,
    ),
    ("ttl-after-finished-controller", ttl_after_finished),
    ("root-ca-cert-publisher", root_ca_cert_publisher),
    (
        "validatingadmissionpolicy-status-controller",
        validatingadmissionpolicy_status,
    ),
    (
        "legacy-service-account-token-cleaner",
        legacy_service_account_token_cleaner,
    ),
    ("selinux-warning-controller", selinux_warning),
];

/// The controllers' ClusterRoles.
pub fn roles() -> Vec<Value> {
    CONTROLLERS
        .iter()
        .map(|(name, rules)| cluster_role(&format!("{PREFIX}{name}"), json!({}), rules()))
        .collect()
}

/// Each controller role bound to the controller's ServiceAccount.
pub fn role_bindings() -> Vec<Value> {
    CONTROLLERS
        .iter()
        .map(|(account, _)| {
            cluster_role_binding(
                &format!("{PREFIX}{account}"),
                vec![account_subject(account)],
            )
        })
        .collect()
}

fn attach_detach() -> Vec<Value> {
    vec![
        rule(
            LIST_WATCH,
            CORE,
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(READ, CORE, &["nodes"]),
        rule(PATCH_UPDATE, CORE, &["nodes/status"]),
        rule(LIST_WATCH, CORE, &["pods"]),
        events_rule(),
        rule(
            &["create", "delete", "get", "list", "watch"],
            STORAGE,
            &["volumeattachments"],
        ),
        rule(READ, STORAGE, &["csidrivers"]),
        rule(READ, STORAGE, &["csinodes"]),
    ]
}

fn clusterrole_aggregation() -> Vec<Value> {
    // Full power over cluster roles, to write any rule into an aggregate.
    let verbs = &["escalate", "get", "list", "patch", "update", "watch"];
    vec![rule(verbs, &[GROUP], &["clusterroles"])]
}

fn cronjob() -> Vec<Value> {
    vec![
        rule(READ_UPDATE, BATCH, &["cronjobs"]),
        rule(MANAGE, BATCH, &["jobs"]),
        rule(UPDATE, BATCH, &["cronjobs/status"]),
        rule(UPDATE, BATCH, &["cronjobs/finalizers"]),
        rule(&["delete", "list", "watch"], CORE, &["pods"]),
        events_rule(),
    ]
}

fn daemon_set() -> Vec<Value> {
    vec![
        rule(READ, APPS_EXT, &["daemonsets"]),
        rule(UPDATE, APPS_EXT, &["daemonsets/status"]),
        rule(UPDATE, APPS_EXT, &["daemonsets/finalizers"]),
        rule(LIST_WATCH, CORE, &["nodes"]),
        rule(CREATE_PODS, CORE, &["pods"]),
        rule(&["create"], CORE, &["pods/binding"]),
        rule(MANAGE, APPS, &["controllerrevisions"]),
        events_rule(),
    ]
}

fn deployment() -> Vec<Value> {
    vec![
        rule(READ_UPDATE, APPS_EXT, &["deployments"]),
        rule(UPDATE, APPS_EXT, &["deployments/status"]),
        rule(UPDATE, APPS_EXT, &["deployments/finalizers"]),
        rule(MANAGE, APPS_EXT, &["replicasets"]),
        rule(READ_UPDATE, CORE, &["pods"]),
        events_rule(),
    ]
}

fn disruption() -> Vec<Value> {
    vec![
        rule(READ, APPS_EXT, &["deployments"]),
        rule(READ, APPS_EXT, &["replicasets"]),
        rule(READ, CORE, &["replicationcontrollers"]),
        rule(READ, POLICY, &["poddisruptionbudgets"]),
        rule(READ, APPS, &["statefulsets"]),
        rule(UPDATE, POLICY, &["poddisruptionbudgets/status"]),
        rule(PATCH_UPDATE, CORE, &["pods/status"]),
        rule(&["get"], ALL, &["*/scale"]),
        events_rule(),
    ]
}

fn endpoint() -> Vec<Value> {
    vec![
        rule(READ, CORE, &["pods", "services"]),
        rule(OWN, CORE, &["endpoints"]),
        rule(&["create"], CORE, &["endpoints/restricted"]),
        events_rule(),
    ]
}

fn endpointslice() -> Vec<Value> {
    vec![
        rule(READ, CORE, &["nodes", "pods", "services"]),
        // Slices owned by a service block its deletion, which needs this.
        rule(UPDATE, CORE, &["services/finalizers"]),
        rule(OWN, DISCOVERY, &["endpointslices"]),
        events_rule(),
    ]
}

fn endpointslice_mirroring() -> Vec<Value> {
    vec![
        rule(READ, CORE, &["endpoints", "services"]),
        rule(UPDATE, CORE, &["services/finalizers"]),
        rule(UPDATE, CORE, &["endpoints/finalizers"]),
        rule(OWN, DISCOVERY, &["endpointslices"]),
        events_rule(),
    ]
}

fn expand() -> Vec<Value> {
    vec![
        rule(
            &["get", "list", "patch", "update", "watch"],
            CORE,
            &["persistentvolumes"],
        ),
        rule(PATCH_UPDATE, CORE, &["persistentvolumeclaims/status"]),
        rule(READ, CORE, &["persistentvolumeclaims"]),
        events_rule(),
    ]
}

fn ephemeral_volume() -> Vec<Value> {
    vec![
        rule(READ, CORE, &["pods"]),
        rule(UPDATE, CORE, &["pods/finalizers"]),
        rule(
            &["create", "get", "list", "watch"],
            CORE,
            &["persistentvolumeclaims"],
        ),
        events_rule(),
    ]
}

fn resource_claim() -> Vec<Value> {
    vec![
        rule(READ, CORE, &["pods"]),
        rule(UPDATE, CORE, &["pods/finalizers"]),
        rule(
            &["create", "delete", "get", "list", "watch"],
            RESOURCE,
            &["resourceclaims"],
        ),
        rule(
            PATCH_UPDATE,
            RESOURCE,
            &["resourceclaims", "resourceclaims/status"],
        ),
        rule(PATCH_UPDATE, CORE, &["pods/status"]),
        events_rule(),
        // Allocation and reservedFor are authorized on this synthetic
        // subresource (DRAResourceClaimGranularStatusAuthorization).
        rule(PATCH_UPDATE, RESOURCE, &["resourceclaims/binding"]),
    ]
}

fn device_taint_eviction() -> Vec<Value> {
    vec![
        rule(&["delete", "get", "list", "watch"], CORE, &["pods"]),
        rule(PATCH_UPDATE, CORE, &["pods/status"]),
        rule(READ, RESOURCE, &["resourceclaims"]),
        rule(READ, RESOURCE, &["resourceslices"]),
        rule(READ, RESOURCE, &["deviceclasses"]),
        events_rule(),
        // DRADeviceTaintRules (GA, on by default).
        rule(PATCH_UPDATE, RESOURCE, &["devicetaintrules/status"]),
        rule(READ, RESOURCE, &["devicetaintrules"]),
    ]
}

fn generic_garbage_collector() -> Vec<Value> {
    let verbs = &["delete", "get", "list", "patch", "update", "watch"];
    vec![rule(verbs, ALL, &["*"]), events_rule()]
}

fn horizontal_pod_autoscaler() -> Vec<Value> {
    vec![
        rule(READ, &["autoscaling"], &["horizontalpodautoscalers"]),
        rule(
            UPDATE,
            &["autoscaling"],
            &["horizontalpodautoscalers/status"],
        ),
        rule(&["get", "update"], ALL, &["*/scale"]),
        rule(LIST_WATCH, CORE, &["pods"]),
        rule(LIST_WATCH, &["metrics.k8s.io"], &["pods"]),
        rule(READ, &["custom.metrics.k8s.io"], &["*"]),
        rule(READ, &["external.metrics.k8s.io"], &["*"]),
        events_rule(),
    ]
}

fn job() -> Vec<Value> {
    vec![
        rule(
            &["get", "list", "patch", "update", "watch"],
            BATCH,
            &["jobs"],
        ),
        rule(UPDATE, BATCH, &["jobs/status"]),
        rule(UPDATE, BATCH, &["jobs/finalizers"]),
        rule(CREATE_PODS, CORE, &["pods"]),
        events_rule(),
    ]
}

fn namespace() -> Vec<Value> {
    vec![
        rule(&["delete", "get", "list", "watch"], CORE, &["namespaces"]),
        rule(UPDATE, CORE, &["namespaces/finalize", "namespaces/status"]),
        rule(
            &["delete", "deletecollection", "get", "list", "watch"],
            ALL,
            &["*"],
        ),
    ]
}

fn node() -> Vec<Value> {
    vec![
        rule(
            &["delete", "get", "list", "patch", "update", "watch"],
            CORE,
            &["nodes"],
        ),
        rule(PATCH_UPDATE, CORE, &["nodes/status"]),
        rule(PATCH_UPDATE, CORE, &["pods/status"]),
        rule(&["delete", "get", "list", "watch"], CORE, &["pods"]),
        events_rule(),
    ]
}

fn persistent_volume_binder() -> Vec<Value> {
    vec![
        rule(OWN, CORE, &["persistentvolumes"]),
        rule(UPDATE, CORE, &["persistentvolumes/status"]),
        rule(READ_UPDATE, CORE, &["persistentvolumeclaims"]),
        rule(UPDATE, CORE, &["persistentvolumeclaims/status"]),
        rule(
            &["create", "delete", "get", "list", "watch"],
            CORE,
            &["pods"],
        ),
        rule(READ, STORAGE, &["storageclasses"]),
        rule(LIST_WATCH, CORE, &["nodes"]),
        events_rule(),
        // The recycler watches its pod's events.
        rule(&["watch"], CORE, &["events"]),
    ]
}

fn pod_garbage_collector() -> Vec<Value> {
    vec![
        rule(&["delete", "list", "watch"], CORE, &["pods"]),
        rule(READ, CORE, &["nodes"]),
        rule(&["patch"], CORE, &["pods/status"]),
    ]
}

fn replicaset() -> Vec<Value> {
    vec![
        rule(READ_UPDATE, APPS_EXT, &["replicasets"]),
        rule(UPDATE, APPS_EXT, &["replicasets/status"]),
        rule(UPDATE, APPS_EXT, &["replicasets/finalizers"]),
        rule(CREATE_PODS, CORE, &["pods"]),
        events_rule(),
    ]
}

fn replication() -> Vec<Value> {
    vec![
        rule(READ_UPDATE, CORE, &["replicationcontrollers"]),
        rule(UPDATE, CORE, &["replicationcontrollers/status"]),
        rule(UPDATE, CORE, &["replicationcontrollers/finalizers"]),
        rule(CREATE_PODS, CORE, &["pods"]),
        events_rule(),
    ]
}

fn resourcequota() -> Vec<Value> {
    vec![
        // Quota may count anything.
        rule(LIST_WATCH, ALL, &["*"]),
        rule(UPDATE, CORE, &["resourcequotas/status"]),
        events_rule(),
    ]
}

fn route() -> Vec<Value> {
    vec![
        rule(LIST_WATCH, CORE, &["nodes"]),
        rule(&["patch"], CORE, &["nodes/status"]),
        events_rule(),
    ]
}

fn service_account() -> Vec<Value> {
    vec![rule(&["create"], CORE, &["serviceaccounts"]), events_rule()]
}

fn service() -> Vec<Value> {
    vec![
        rule(READ, CORE, &["services"]),
        rule(PATCH_UPDATE, CORE, &["services/status"]),
        rule(LIST_WATCH, CORE, &["nodes"]),
        events_rule(),
    ]
}

fn service_cidrs() -> Vec<Value> {
    vec![
        rule(
            &["get", "list", "patch", "update", "watch"],
            NETWORKING,
            &["servicecidrs"],
        ),
        rule(PATCH_UPDATE, NETWORKING, &["servicecidrs/finalizers"]),
        rule(PATCH_UPDATE, NETWORKING, &["servicecidrs/status"]),
        rule(READ, NETWORKING, &["ipaddresses"]),
        events_rule(),
    ]
}

fn statefulset() -> Vec<Value> {
    vec![
        rule(LIST_WATCH, CORE, &["pods"]),
        rule(READ, APPS, &["statefulsets"]),
        rule(UPDATE, APPS, &["statefulsets/status"]),
        rule(UPDATE, APPS, &["statefulsets/finalizers"]),
        rule(
            &["create", "delete", "get", "patch", "update"],
            CORE,
            &["pods"],
        ),
        rule(MANAGE, APPS, &["controllerrevisions"]),
        rule(
            &["create", "get", "list", "watch"],
            CORE,
            &["persistentvolumeclaims"],
        ),
        rule(&["delete", "update"], CORE, &["persistentvolumeclaims"]),
        rule(UPDATE, CORE, &["pods/finalizers"]),
        events_rule(),
    ]
}

fn ttl() -> Vec<Value> {
    vec![
        rule(&["list", "patch", "update", "watch"], CORE, &["nodes"]),
        events_rule(),
    ]
}

fn certificate() -> Vec<Value> {
    let signers = &["signers"];
    vec![
        rule(
            &["delete", "get", "list", "watch"],
            CERTIFICATES,
            &["certificatesigningrequests"],
        ),
        rule(
            UPDATE,
            CERTIFICATES,
            &[
                "certificatesigningrequests/approval",
                "certificatesigningrequests/status",
            ],
        ),
        named(
            &["approve"],
            CERTIFICATES,
            signers,
            &["kubernetes.io/kube-apiserver-client-kubelet"],
        ),
        named(
            &["sign"],
            CERTIFICATES,
            signers,
            &[
                "kubernetes.io/kube-apiserver-client",
                "kubernetes.io/kube-apiserver-client-kubelet",
                "kubernetes.io/kubelet-serving",
                "kubernetes.io/legacy-unknown",
            ],
        ),
        rule(
            &["create"],
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
        ),
        events_rule(),
    ]
}

fn pvc_protection() -> Vec<Value> {
    vec![
        rule(READ_UPDATE, CORE, &["persistentvolumeclaims"]),
        rule(UPDATE, CORE, &["persistentvolumeclaims/status"]),
        rule(READ, CORE, &["pods"]),
        events_rule(),
    ]
}

fn pv_protection() -> Vec<Value> {
    vec![
        rule(READ_UPDATE, CORE, &["persistentvolumes"]),
        events_rule(),
    ]
}

fn volumeattributesclass_protection() -> Vec<Value> {
    vec![
        rule(READ, CORE, &["persistentvolumeclaims"]),
        rule(READ, CORE, &["persistentvolumes"]),
        rule(READ_UPDATE, STORAGE, &["volumeattributesclasses"]),
        events_rule(),
    ]
}

fn ttl_after_finished() -> Vec<Value> {
    vec![
        rule(&["delete", "get", "list", "watch"], BATCH, &["jobs"]),
        events_rule(),
    ]
}

fn root_ca_cert_publisher() -> Vec<Value> {
    vec![
        rule(&["create", "update"], CORE, &["configmaps"]),
        events_rule(),
    ]
}

fn validatingadmissionpolicy_status() -> Vec<Value> {
    let group = &["admissionregistration.k8s.io"];
    vec![
        rule(READ, group, &["validatingadmissionpolicies"]),
        rule(
            &["get", "patch", "update"],
            group,
            &["validatingadmissionpolicies/status"],
        ),
        events_rule(),
    ]
}

fn legacy_service_account_token_cleaner() -> Vec<Value> {
    vec![
        // Only the ConfigMap recording since when legacy tokens are tracked.
        named(
            &["get"],
            CORE,
            &["configmaps"],
            &["kube-apiserver-legacy-service-account-token-tracking"],
        ),
        rule(&["delete", "patch"], CORE, &["secrets"]),
    ]
}

fn selinux_warning() -> Vec<Value> {
    vec![
        events_rule(),
        rule(READ, CORE, &["persistentvolumes"]),
        rule(READ, CORE, &["persistentvolumeclaims"]),
        rule(READ, CORE, &["pods"]),
        rule(READ, STORAGE, &["csidrivers"]),
    ]
}

#[cfg(test)]
mod tests;
