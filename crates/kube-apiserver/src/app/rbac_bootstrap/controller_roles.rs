//! The roles of kube-controller-manager's controllers in upstream's
//! bootstrap policy: one ClusterRole `system:controller:<name>` per
//! controller, bound to the ServiceAccount `kube-system/<name>` the
//! controller manager runs it as (with `--use-service-account-credentials`).

use serde_json::{json, Value};

use super::{cluster_role, rule, GROUP};

const PREFIX: &str = "system:controller:";

/// Creating and updating events, which every controller does.
fn events() -> Value {
    rule(
        &["create", "update", "patch"],
        &["", "events.k8s.io"],
        &["events"],
    )
}

/// The controllers' ClusterRoles, by controller name.
pub fn roles() -> Vec<Value> {
    let controllers: Vec<(&str, Vec<Value>)> = vec![(
        "attachdetach-controller",
        vec![
            rule(
                &["list", "watch"],
                &[""],
                &["persistentvolumes", "persistentvolumeclaims"],
            ),
            rule(&["get", "list", "watch"], &[""], &["nodes"]),
            rule(&["patch", "update"], &[""], &["nodes/status"]),
            rule(&["list", "watch"], &[""], &["pods"]),
            events(),
            rule(
                &["get", "create", "delete", "list", "watch"],
                &["storage.k8s.io"],
                &["volumeattachments"],
            ),
            rule(
                &["get", "watch", "list"],
                &["storage.k8s.io"],
                &["csidrivers"],
            ),
            rule(
                &["get", "watch", "list"],
                &["storage.k8s.io"],
                &["csinodes"],
            ),
        ],
    )];
    controllers
        .into_iter()
        .map(|(name, rules)| cluster_role(&format!("{PREFIX}{name}"), json!({}), rules))
        .collect()
}

/// Each controller role bound to the controller's ServiceAccount.
pub fn role_bindings() -> Vec<Value> {
    roles()
        .iter()
        .filter_map(|role| role.pointer("/metadata/name").and_then(Value::as_str))
        .map(|name| {
            let account = name.trim_start_matches(PREFIX);
            json!({
                "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRoleBinding",
                "metadata": {"name": name,
                    "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                    "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": account,
                    "namespace": "kube-system"}],
            })
        })
        .collect()
}
