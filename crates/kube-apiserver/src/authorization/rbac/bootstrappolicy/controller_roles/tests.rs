//! Unit tests of the controller roles against upstream's golden policy.

use super::*;

fn rules_of(controller: &str) -> Value {
    let name = format!("{PREFIX}{controller}");
    roles()
        .into_iter()
        .find(|role| role["metadata"]["name"] == name.as_str())
        .map(|role| role["rules"].clone())
        .unwrap_or(Value::Null)
}

fn events_json() -> Value {
    json!({"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
        "verbs": ["create", "patch", "update"]})
}

#[test]
fn names_are_upstreams_with_default_gates() {
    let mut names: Vec<String> = roles()
        .iter()
        .filter_map(|role| role["metadata"]["name"].as_str())
        .map(|name| name.trim_start_matches(PREFIX).to_owned())
        .collect();
    names.sort();
    let expected = [
        "attachdetach-controller",
        "certificate-controller",
        "clusterrole-aggregation-controller",
        "cronjob-controller",
        "daemon-set-controller",
        "deployment-controller",
        "device-taint-eviction-controller",
        "disruption-controller",
        "endpoint-controller",
        "endpointslice-controller",
        "endpointslicemirroring-controller",
        "ephemeral-volume-controller",
        "expand-controller",
        "generic-garbage-collector",
        "horizontal-pod-autoscaler",
        "job-controller",
        "legacy-service-account-token-cleaner",
        "namespace-controller",
        "node-controller",
        "persistent-volume-binder",
        "pod-garbage-collector",
        "pv-protection-controller",
        "pvc-protection-controller",
        "replicaset-controller",
        "replication-controller",
        "resource-claim-controller",
        "resourcequota-controller",
        "root-ca-cert-publisher",
        "route-controller",
        "selinux-warning-controller",
        "service-account-controller",
        "service-cidrs-controller",
        "service-controller",
        "statefulset-controller",
        "ttl-after-finished-controller",
        "ttl-controller",
        "validatingadmissionpolicy-status-controller",
        "volumeattributesclass-protection-controller",
    ];
    assert_eq!(names, expected);
}

#[test]
fn every_role_is_bound_to_its_service_account() {
    let roles = roles();
    let bindings = role_bindings();
    assert_eq!(bindings.len(), roles.len());
    for (role, binding) in roles.iter().zip(&bindings) {
        let name = &role["metadata"]["name"];
        let account = name.as_str().map(|n| n.trim_start_matches(PREFIX));
        assert_eq!(&binding["metadata"]["name"], name);
        assert_eq!(
            binding["roleRef"],
            json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": name})
        );
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": account,
                "namespace": "kube-system"}])
        );
        for object in [role, binding] {
            let meta = &object["metadata"];
            assert_eq!(
                meta["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
            assert_eq!(
                meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
                "true"
            );
        }
    }
}

#[test]
fn namespace_controller_may_delete_anything() {
    assert_eq!(
        rules_of("namespace-controller"),
        json!([
            {"apiGroups": [""], "resources": ["namespaces"],
                "verbs": ["delete", "get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["namespaces/finalize", "namespaces/status"],
                "verbs": ["update"]},
            {"apiGroups": ["*"], "resources": ["*"],
                "verbs": ["delete", "deletecollection", "get", "list", "watch"]},
        ])
    );
}

#[test]
fn garbage_collector_may_update_and_delete_anything() {
    assert_eq!(
        rules_of("generic-garbage-collector"),
        json!([
            {"apiGroups": ["*"], "resources": ["*"],
                "verbs": ["delete", "get", "list", "patch", "update", "watch"]},
            events_json(),
        ])
    );
}

#[test]
fn node_controller_rules() {
    assert_eq!(
        rules_of("node-controller"),
        json!([
            {"apiGroups": [""], "resources": ["nodes"],
                "verbs": ["delete", "get", "list", "patch", "update", "watch"]},
            {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch", "update"]},
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
            {"apiGroups": [""], "resources": ["pods"],
                "verbs": ["delete", "get", "list", "watch"]},
            events_json(),
        ])
    );
}

#[test]
fn resource_claim_controller_binds_claims() {
    let resource = "resource.k8s.io";
    assert_eq!(
        rules_of("resource-claim-controller"),
        json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["pods/finalizers"], "verbs": ["update"]},
            {"apiGroups": [resource], "resources": ["resourceclaims"],
                "verbs": ["create", "delete", "get", "list", "watch"]},
            {"apiGroups": [resource],
                "resources": ["resourceclaims", "resourceclaims/status"],
                "verbs": ["patch", "update"]},
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
            events_json(),
            {"apiGroups": [resource], "resources": ["resourceclaims/binding"],
                "verbs": ["patch", "update"]},
        ])
    );
}

#[test]
fn named_rules_carry_resource_names() {
    assert_eq!(
        rules_of("legacy-service-account-token-cleaner"),
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
                "resourceNames": ["kube-apiserver-legacy-service-account-token-tracking"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete", "patch"]},
        ])
    );
}

#[test]
fn device_taint_eviction_reads_taint_rules_and_reports_on_them() {
    let resource = "resource.k8s.io";
    let read = ["get", "list", "watch"];
    assert_eq!(
        rules_of("device-taint-eviction-controller"),
        json!([
            {"apiGroups": [""], "resources": ["pods"],
                "verbs": ["delete", "get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
            {"apiGroups": [resource], "resources": ["resourceclaims"], "verbs": read},
            {"apiGroups": [resource], "resources": ["resourceslices"], "verbs": read},
            {"apiGroups": [resource], "resources": ["deviceclasses"], "verbs": read},
            events_json(),
            {"apiGroups": [resource], "resources": ["devicetaintrules/status"],
                "verbs": ["patch", "update"]},
            {"apiGroups": [resource], "resources": ["devicetaintrules"], "verbs": read},
        ])
    );
}
