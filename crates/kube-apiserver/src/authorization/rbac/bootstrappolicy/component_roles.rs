//! The bootstrap ClusterRoles of the control-plane and node components and
//! of the certificate approvers (upstream's `system:kube-scheduler`,
//! `system:kube-controller-manager`, `system:node-proxier`,
//! `system:certificates.k8s.io:*`, …), with the ClusterRoleBindings upstream
//! creates for some of them.

use serde_json::{json, Value};

use super::{
    cluster_role, cluster_role_binding, events_rule, named, rule, service_account, user, READ,
    RESOURCE,
};

/// What may read and update an object (upstream's `ReadUpdate`).
const READ_UPDATE: &[&str] = &["get", "list", "patch", "update", "watch"];
const LIST_WATCH: &[&str] = &["list", "watch"];
const CERTIFICATES: &str = "certificates.k8s.io";
const STORAGE: &str = "storage.k8s.io";

fn role(name: &str, rules: Vec<Value>) -> Value {
    cluster_role(name, json!({}), rules)
}

/// The role that lets a signer's approvers approve its requests.
fn approver(role_name: &str, signer: &str) -> Value {
    let rules = vec![named(
        &["approve"],
        &[CERTIFICATES],
        &["signers"],
        &[signer],
    )];
    role(&format!("system:certificates.k8s.io:{role_name}"), rules)
}

/// Creating the CSR subresource that the CSR approver checks.
fn csr_kind(kind: &str) -> Value {
    let subresource = format!("certificatesigningrequests/{kind}");
    let rules = vec![rule(&["create"], &[CERTIFICATES], &[&subresource])];
    role(
        &format!("system:certificates.k8s.io:certificatesigningrequests:{kind}"),
        rules,
    )
}

fn kube_controller_manager() -> Value {
    role(
        "system:kube-controller-manager",
        vec![
            events_rule(),
            // Leader election.
            rule(&["create"], &["coordination.k8s.io"], &["leases"]),
            named(
                &["get", "update"],
                &["coordination.k8s.io"],
                &["leases"],
                &["kube-controller-manager"],
            ),
            // The identities it gives its controllers.
            rule(&["create"], &[""], &["secrets", "serviceaccounts"]),
            rule(&["delete"], &[""], &["secrets"]),
            rule(
                &["get"],
                &[""],
                &["configmaps", "namespaces", "secrets", "serviceaccounts"],
            ),
            rule(&["update"], &[""], &["secrets", "serviceaccounts"]),
            rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
            rule(
                &["create"],
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
            ),
            // Its shared informers.
            rule(LIST_WATCH, &["*"], &["*"]),
            rule(&["create"], &[""], &["serviceaccounts/token"]),
        ],
    )
}

fn kube_scheduler() -> Value {
    role(
        "system:kube-scheduler",
        vec![
            events_rule(),
            rule(&["create"], &["coordination.k8s.io"], &["leases"]),
            named(
                &["get", "update"],
                &["coordination.k8s.io"],
                &["leases"],
                &["kube-scheduler"],
            ),
            rule(READ, &[""], &["nodes"]),
            rule(&["delete", "get", "list", "watch"], &[""], &["pods"]),
            rule(&["create"], &[""], &["bindings", "pods/binding"]),
            rule(&["patch", "update"], &[""], &["pods/status"]),
            rule(READ, &[""], &["replicationcontrollers", "services"]),
            rule(READ, &["apps", "extensions"], &["replicasets"]),
            rule(READ, &["apps"], &["statefulsets"]),
            rule(READ, &["policy"], &["poddisruptionbudgets"]),
            rule(
                READ,
                &[""],
                &["persistentvolumeclaims", "persistentvolumes"],
            ),
            rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
            rule(
                &["create"],
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
            ),
            rule(READ, &[STORAGE], &["csinodes"]),
            // CSI volume limits count the attachments.
            rule(READ, &[STORAGE], &["volumeattachments"]),
            // Pod affinity's namespaceSelector.
            rule(READ, &[""], &["namespaces"]),
            rule(READ, &[STORAGE], &["csidrivers"]),
            rule(READ, &[STORAGE], &["csistoragecapacities"]),
            // DynamicResourceAllocation (GA, on by default).
            rule(READ, RESOURCE, &["deviceclasses"]),
            rule(READ_UPDATE, RESOURCE, &["resourceclaims"]),
            rule(READ_UPDATE, RESOURCE, &["resourceclaims/status"]),
            rule(READ_UPDATE, &[""], &["pods/finalizers"]),
            rule(READ, RESOURCE, &["resourceslices"]),
            // DRADeviceTaints (GA, on by default).
            rule(READ, RESOURCE, &["devicetaintrules"]),
            // Allocation and reservedFor are authorized on this synthetic
            // subresource (DRAResourceClaimGranularStatusAuthorization, on
            // by default).
            rule(&["patch", "update"], RESOURCE, &["resourceclaims/binding"]),
        ],
    )
}

fn node_proxier() -> Value {
    role(
        "system:node-proxier",
        vec![
            rule(LIST_WATCH, &[""], &["endpoints", "services"]),
            rule(READ, &[""], &["nodes"]),
            events_rule(),
            rule(LIST_WATCH, &["networking.k8s.io"], &["servicecidrs"]),
            rule(LIST_WATCH, &["discovery.k8s.io"], &["endpointslices"]),
        ],
    )
}

fn kubelet_api_admin() -> Value {
    role(
        "system:kubelet-api-admin",
        vec![
            rule(READ, &[""], &["nodes"]),
            rule(&["proxy"], &[""], &["nodes"]),
            rule(
                &["*"],
                &[""],
                &["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"],
            ),
            // KubeletFineGrainedAuthz (on by default): the kubelet's
            // finer-grained subresources.
            rule(
                &["*"],
                &[""],
                &["nodes/configz", "nodes/healthz", "nodes/pods"],
            ),
        ],
    )
}

/// The component and approver ClusterRoles, in upstream's order.
pub(super) fn component_roles() -> Vec<Value> {
    vec![
        role(
            "system:heapster",
            vec![
                rule(READ, &[""], &["events", "namespaces", "nodes", "pods"]),
                rule(READ, &["extensions"], &["deployments"]),
            ],
        ),
        role(
            "system:node-problem-detector",
            vec![
                rule(&["get"], &[""], &["nodes"]),
                rule(&["patch"], &[""], &["nodes/status"]),
                events_rule(),
            ],
        ),
        kubelet_api_admin(),
        role(
            "system:node-bootstrapper",
            vec![rule(
                &["create", "get", "list", "watch"],
                &[CERTIFICATES],
                &["certificatesigningrequests"],
            )],
        ),
        role(
            "system:kube-aggregator",
            vec![rule(READ, &[""], &["endpoints", "services"])],
        ),
        kube_controller_manager(),
        role(
            "system:kube-dns",
            vec![rule(LIST_WATCH, &[""], &["endpoints", "services"])],
        ),
        role(
            "system:persistent-volume-provisioner",
            vec![
                rule(
                    &["create", "delete", "get", "list", "watch"],
                    &[""],
                    &["persistentvolumes"],
                ),
                rule(
                    &["get", "list", "update", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(&["watch"], &[""], &["events"]),
                events_rule(),
            ],
        ),
        csr_kind("nodeclient"),
        csr_kind("selfnodeclient"),
        role(
            "system:volume-scheduler",
            vec![
                rule(READ_UPDATE, &[""], &["persistentvolumes"]),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(READ_UPDATE, &[""], &["persistentvolumeclaims"]),
            ],
        ),
        approver("legacy-unknown-approver", "kubernetes.io/legacy-unknown"),
        approver("kubelet-serving-approver", "kubernetes.io/kubelet-serving"),
        approver(
            "kube-apiserver-client-approver",
            "kubernetes.io/kube-apiserver-client",
        ),
        approver(
            "kube-apiserver-client-kubelet-approver",
            "kubernetes.io/kube-apiserver-client-kubelet",
        ),
        node_proxier(),
        kube_scheduler(),
    ]
}

/// A binding of the ClusterRole of the same name to a component's user.
fn binding(name: &str, component: &str) -> Value {
    cluster_role_binding(name, vec![user(component)])
}

/// The bindings of the component roles to the components' identities.
pub(super) fn component_role_bindings() -> Vec<Value> {
    vec![
        binding("system:node-proxier", "system:kube-proxy"),
        binding(
            "system:kube-controller-manager",
            "system:kube-controller-manager",
        ),
        cluster_role_binding("system:kube-dns", vec![service_account("kube-dns")]),
        binding("system:kube-scheduler", "system:kube-scheduler"),
        binding("system:volume-scheduler", "system:kube-scheduler"),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::{default_cluster_role_bindings, default_cluster_roles};
    use super::*;

    fn names(objects: &[Value]) -> Vec<&str> {
        let mut names: Vec<&str> = objects
            .iter()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        names.sort_unstable();
        names
    }

    fn find<'a>(objects: &'a [Value], name: &str) -> &'a Value {
        objects
            .iter()
            .find(|o| o["metadata"]["name"] == name)
            .unwrap_or(&Value::Null)
    }

    #[test]
    fn cluster_roles_are_upstreams() {
        let roles = default_cluster_roles();
        let csr = "system:certificates.k8s.io:";
        let expected = [
            "admin".to_owned(),
            "cluster-admin".to_owned(),
            "edit".to_owned(),
            "system:aggregate-to-admin".to_owned(),
            "system:aggregate-to-edit".to_owned(),
            "system:aggregate-to-view".to_owned(),
            "system:auth-delegator".to_owned(),
            "system:basic-user".to_owned(),
            format!("{csr}certificatesigningrequests:nodeclient"),
            format!("{csr}certificatesigningrequests:selfnodeclient"),
            format!("{csr}kube-apiserver-client-approver"),
            format!("{csr}kube-apiserver-client-kubelet-approver"),
            format!("{csr}kubelet-serving-approver"),
            format!("{csr}legacy-unknown-approver"),
            "system:discovery".to_owned(),
            "system:heapster".to_owned(),
            "system:kube-aggregator".to_owned(),
            "system:kube-controller-manager".to_owned(),
            "system:kube-dns".to_owned(),
            "system:kube-scheduler".to_owned(),
            "system:kubelet-api-admin".to_owned(),
            "system:monitoring".to_owned(),
            "system:node".to_owned(),
            "system:node-bootstrapper".to_owned(),
            "system:node-problem-detector".to_owned(),
            "system:node-proxier".to_owned(),
            "system:persistent-volume-provisioner".to_owned(),
            "system:public-info-viewer".to_owned(),
            "system:service-account-issuer-discovery".to_owned(),
            "system:volume-scheduler".to_owned(),
            "view".to_owned(),
        ];
        assert_eq!(names(&roles), expected);
        for role in &roles {
            assert_eq!(
                role["metadata"]["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
            assert_eq!(
                role["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
                "true"
            );
        }
    }

    #[test]
    fn cluster_role_bindings_are_upstreams() {
        let bindings = default_cluster_role_bindings();
        let expected = [
            "cluster-admin",
            "system:basic-user",
            "system:discovery",
            "system:kube-controller-manager",
            "system:kube-dns",
            "system:kube-scheduler",
            "system:monitoring",
            "system:node",
            "system:node-proxier",
            "system:public-info-viewer",
            "system:service-account-issuer-discovery",
            "system:volume-scheduler",
        ];
        assert_eq!(names(&bindings), expected);
        let roles = default_cluster_roles();
        for binding in &bindings {
            let role = binding["roleRef"]["name"].as_str().unwrap_or_default();
            assert!(!find(&roles, role).is_null(), "{role}");
        }
        assert_eq!(
            find(&bindings, "system:kube-dns")["subjects"],
            json!([{"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"}])
        );
        assert_eq!(
            find(&bindings, "system:volume-scheduler")["subjects"][0]["name"],
            "system:kube-scheduler"
        );
    }

    #[test]
    fn representative_rules_match_upstream() {
        let roles = component_roles();
        assert_eq!(
            find(&roles, "system:kube-dns")["rules"],
            json!([{"apiGroups": [""], "resources": ["endpoints", "services"],
                "verbs": ["list", "watch"]}])
        );
        assert_eq!(
            find(
                &roles,
                "system:certificates.k8s.io:kubelet-serving-approver"
            )["rules"],
            json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
                "resourceNames": ["kubernetes.io/kubelet-serving"], "verbs": ["approve"]}])
        );
        let scheduler = &find(&roles, "system:kube-scheduler")["rules"];
        assert_eq!(
            scheduler[5],
            json!({"apiGroups": [""], "resources": ["bindings", "pods/binding"],
                "verbs": ["create"]})
        );
        assert_eq!(
            scheduler[0],
            json!({"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
                "verbs": ["create", "patch", "update"]})
        );
        let proxier = &find(&roles, "system:node-proxier")["rules"];
        assert_eq!(
            proxier[3],
            json!({"apiGroups": ["networking.k8s.io"], "resources": ["servicecidrs"],
                "verbs": ["list", "watch"]})
        );
        assert_eq!(
            proxier[4],
            json!({"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                "verbs": ["list", "watch"]})
        );
    }

    #[test]
    fn kubelet_api_admin_has_the_fine_grained_subresources_apart() {
        let roles = component_roles();
        let all = ["*"];
        assert_eq!(
            find(&roles, "system:kubelet-api-admin")["rules"],
            json!([
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["proxy"]},
                {"apiGroups": [""], "verbs": all,
                    "resources": ["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"]},
                {"apiGroups": [""], "verbs": all,
                    "resources": ["nodes/configz", "nodes/healthz", "nodes/pods"]},
            ])
        );
    }

    #[test]
    fn scheduler_reads_attachments_and_allocates_claims() {
        let roles = component_roles();
        let rules = find(&roles, "system:kube-scheduler")["rules"].clone();
        let rules = rules.as_array().cloned().unwrap_or_default();
        let read = ["get", "list", "watch"];
        let read_update = ["get", "list", "patch", "update", "watch"];
        let resource = "resource.k8s.io";
        assert_eq!(
            rules[15],
            json!({"apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments"],
                "verbs": read})
        );
        assert_eq!(
            rules[19..],
            [
                json!({"apiGroups": [resource], "resources": ["deviceclasses"], "verbs": read}),
                json!({"apiGroups": [resource], "resources": ["resourceclaims"],
                    "verbs": read_update}),
                json!({"apiGroups": [resource], "resources": ["resourceclaims/status"],
                    "verbs": read_update}),
                json!({"apiGroups": [""], "resources": ["pods/finalizers"],
                    "verbs": read_update}),
                json!({"apiGroups": [resource], "resources": ["resourceslices"], "verbs": read}),
                json!({"apiGroups": [resource], "resources": ["devicetaintrules"],
                    "verbs": read}),
                json!({"apiGroups": [resource], "resources": ["resourceclaims/binding"],
                    "verbs": ["patch", "update"]}),
            ]
        );
    }
}
