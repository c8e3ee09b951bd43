//! The namespaced part of the bootstrap policy (upstream's
//! `bootstrappolicy/namespace_policy.go`): the Roles and RoleBindings of
//! kube-system and kube-public that leader election, extension API servers
//! and the bootstrap-token controllers rely on.

use serde_json::{json, Value};

use super::{bootstrap_metadata, events_rule, named, rule, service_account, user, GROUP, READ};

const KUBE_SYSTEM: &str = "kube-system";
const KUBE_PUBLIC: &str = "kube-public";
/// What leader election does with its lock objects.
const LOCKING: &[&str] = &["create", "get", "list", "update", "watch"];

fn metadata(name: &str, namespace: &str) -> Value {
    let mut metadata = bootstrap_metadata(name);
    metadata["namespace"] = json!(namespace);
    metadata
}

fn role(name: &str, namespace: &str, rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Role",
        "metadata": metadata(name, namespace),
        "rules": rules,
    })
}

fn role_binding(name: &str, namespace: &str, role: &str, subjects: Vec<Value>) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "RoleBinding",
        "metadata": metadata(name, namespace),
        "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": role},
        "subjects": subjects,
    })
}

fn leader_locking(component: &str) -> Value {
    role(
        &format!("system::leader-locking-{component}"),
        KUBE_SYSTEM,
        vec![
            rule(LOCKING, &["coordination.k8s.io"], &["leases"]),
            rule(LOCKING, &["coordination.k8s.io"], &["leasecandidates"]),
        ],
    )
}

/// The default Roles of the system namespaces, in upstream's order.
pub fn default_namespace_roles() -> Vec<Value> {
    vec![
        role(
            "system:controller:bootstrap-signer",
            KUBE_PUBLIC,
            vec![
                rule(READ, &[""], &["configmaps"]),
                named(&["update"], &[""], &["configmaps"], &["cluster-info"]),
                events_rule(),
            ],
        ),
        // Lets extension API servers read the client CA they trust.
        role(
            "extension-apiserver-authentication-reader",
            KUBE_SYSTEM,
            vec![named(
                READ,
                &[""],
                &["configmaps"],
                &["extension-apiserver-authentication"],
            )],
        ),
        leader_locking("kube-controller-manager"),
        leader_locking("kube-scheduler"),
        role(
            "system:controller:bootstrap-signer",
            KUBE_SYSTEM,
            vec![rule(READ, &[""], &["secrets"])],
        ),
        role(
            "system:controller:cloud-provider",
            KUBE_SYSTEM,
            vec![rule(
                &["create", "get", "list", "watch"],
                &[""],
                &["configmaps"],
            )],
        ),
        role(
            "system:controller:token-cleaner",
            KUBE_SYSTEM,
            vec![
                rule(&["delete", "get", "list", "watch"], &[""], &["secrets"]),
                events_rule(),
            ],
        ),
    ]
}

/// A binding of a controller's Role to its kube-system ServiceAccount.
fn controller_binding(controller: &str, namespace: &str) -> Value {
    let name = format!("system:controller:{controller}");
    role_binding(&name, namespace, &name, vec![service_account(controller)])
}

/// The default RoleBindings of the system namespaces, in upstream's order.
pub fn default_namespace_role_bindings() -> Vec<Value> {
    vec![
        controller_binding("bootstrap-signer", KUBE_PUBLIC),
        role_binding(
            "system::extension-apiserver-authentication-reader",
            KUBE_SYSTEM,
            "extension-apiserver-authentication-reader",
            vec![
                user("system:kube-controller-manager"),
                user("system:kube-scheduler"),
            ],
        ),
        role_binding(
            "system::leader-locking-kube-controller-manager",
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            vec![
                user("system:kube-controller-manager"),
                service_account("kube-controller-manager"),
                service_account("leader-election-controller"),
            ],
        ),
        role_binding(
            "system::leader-locking-kube-scheduler",
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            vec![
                user("system:kube-scheduler"),
                service_account("kube-scheduler"),
            ],
        ),
        controller_binding("bootstrap-signer", KUBE_SYSTEM),
        controller_binding("cloud-provider", KUBE_SYSTEM),
        controller_binding("token-cleaner", KUBE_SYSTEM),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(obj: &Value) -> (String, String) {
        let field = |f: &str| obj["metadata"][f].as_str().unwrap_or_default().to_owned();
        (field("namespace"), field("name"))
    }

    #[test]
    fn roles_and_bindings_are_upstreams() {
        let expected = [
            (KUBE_PUBLIC, "system:controller:bootstrap-signer"),
            (KUBE_SYSTEM, "extension-apiserver-authentication-reader"),
            (
                KUBE_SYSTEM,
                "system::leader-locking-kube-controller-manager",
            ),
            (KUBE_SYSTEM, "system::leader-locking-kube-scheduler"),
            (KUBE_SYSTEM, "system:controller:bootstrap-signer"),
            (KUBE_SYSTEM, "system:controller:cloud-provider"),
            (KUBE_SYSTEM, "system:controller:token-cleaner"),
        ];
        let roles: Vec<_> = default_namespace_roles().iter().map(key).collect();
        let want: Vec<_> = expected
            .iter()
            .map(|(ns, n)| ((*ns).to_owned(), (*n).to_owned()))
            .collect();
        assert_eq!(roles, want);
        let bindings: Vec<_> = default_namespace_role_bindings().iter().map(key).collect();
        assert_eq!(bindings.len(), 7);
        assert!(bindings.contains(&(
            KUBE_SYSTEM.to_owned(),
            "system::extension-apiserver-authentication-reader".to_owned()
        )));
    }

    #[test]
    fn every_binding_names_a_role_of_its_namespace() {
        let roles = default_namespace_roles();
        for binding in default_namespace_role_bindings() {
            let found = roles.iter().any(|r| {
                r["metadata"]["namespace"] == binding["metadata"]["namespace"]
                    && r["metadata"]["name"] == binding["roleRef"]["name"]
            });
            assert!(found, "{binding}");
        }
    }

    #[test]
    fn representative_rules_match_upstream() {
        let roles = default_namespace_roles();
        let public_signer = &roles[0]["rules"];
        assert_eq!(
            public_signer[1],
            json!({"apiGroups": [""], "resources": ["configmaps"],
                "resourceNames": ["cluster-info"], "verbs": ["update"]})
        );
        assert_eq!(public_signer[2]["apiGroups"], json!(["", "events.k8s.io"]));
        let scheduler_lock = &roles[3]["rules"][0];
        assert_eq!(
            *scheduler_lock,
            json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                "verbs": ["create", "get", "list", "update", "watch"]})
        );
        let bindings = default_namespace_role_bindings();
        assert_eq!(
            bindings[2]["subjects"][2],
            json!({"kind": "ServiceAccount", "name": "leader-election-controller",
                "namespace": "kube-system"})
        );
    }
}
