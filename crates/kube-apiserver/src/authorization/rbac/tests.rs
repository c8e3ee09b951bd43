use serde_json::json;

use super::*;

/// A fixed policy: RBAC objects as they would be stored.
struct Policy(Vec<Object>);

impl Policy {
    fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Object> + 'a {
        self.0.iter().filter(move |o| text(o, "/kind") == kind)
    }

    fn find(&self, kind: &str, namespace: &str, name: &str) -> Option<Object> {
        self.of_kind(kind)
            .find(|o| {
                text(o, "/metadata/name") == name && text(o, "/metadata/namespace") == namespace
            })
            .cloned()
    }
}

#[async_trait]
impl PolicyReader for Policy {
    async fn cluster_role_bindings(&self) -> Result<Vec<Object>, ApiError> {
        Ok(self.of_kind("ClusterRoleBinding").cloned().collect())
    }

    async fn role_bindings(&self, namespace: &str) -> Result<Vec<Object>, ApiError> {
        Ok(self
            .of_kind("RoleBinding")
            .filter(|o| text(o, "/metadata/namespace") == namespace)
            .cloned()
            .collect())
    }

    async fn cluster_role(&self, name: &str) -> Result<Option<Object>, ApiError> {
        Ok(self.find("ClusterRole", "", name))
    }

    async fn role(&self, namespace: &str, name: &str) -> Result<Option<Object>, ApiError> {
        Ok(self.find("Role", namespace, name))
    }
}

fn role(kind: &str, namespace: &str, name: &str, rules: Value) -> Object {
    Arc::new(
        json!({"kind": kind, "metadata": {"name": name, "namespace": namespace},
        "rules": rules})
        .into(),
    )
}

fn binding(kind: &str, namespace: &str, name: &str, role: (&str, &str), subjects: Value) -> Object {
    Arc::new(
        json!({"kind": kind, "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role.0, "name": role.1},
        "subjects": subjects})
        .into(),
    )
}

fn authorizer() -> RbacAuthorizer {
    let policy = Policy(vec![
        role(
            "ClusterRole",
            "",
            "pod-reader",
            json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log"]}]),
        ),
        role(
            "ClusterRole",
            "",
            "health",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz/*"]}]),
        ),
        role(
            "Role",
            "dev",
            "deployer",
            json!([
                {"verbs": ["*"], "apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"]},
                {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"]},
            ]),
        ),
        binding(
            "ClusterRoleBinding",
            "",
            "readers",
            ("ClusterRole", "pod-reader"),
            json!([{"kind": "Group", "name": "readers"}]),
        ),
        binding(
            "ClusterRoleBinding",
            "",
            "health",
            ("ClusterRole", "health"),
            json!([{"kind": "Group", "name": "system:authenticated"}]),
        ),
        binding(
            "RoleBinding",
            "dev",
            "deployers",
            ("Role", "deployer"),
            json!([{"kind": "User", "name": "bob"},
                {"kind": "ServiceAccount", "name": "ci"}]),
        ),
        binding(
            "RoleBinding",
            "dev",
            "dev-readers",
            ("ClusterRole", "pod-reader"),
            json!([{"kind": "ServiceAccount", "name": "robot", "namespace": "tools"}]),
        ),
        binding(
            "RoleBinding",
            "dev",
            "dangling",
            ("Role", "missing"),
            json!([{"kind": "User", "name": "carol"}]),
        ),
    ]);
    let rbac = RbacAuthorizer::new();
    rbac.bind(Arc::new(policy));
    rbac
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

struct Ask<'a> {
    verb: &'a str,
    namespace: &'a str,
    group: &'a str,
    resource: &'a str,
    subresource: &'a str,
    name: &'a str,
}

fn ask<'a>(verb: &'a str, namespace: &'a str, group: &'a str, resource: &'a str) -> Ask<'a> {
    Ask {
        verb,
        namespace,
        group,
        resource,
        subresource: "",
        name: "",
    }
}

async fn allowed(rbac: &RbacAuthorizer, user: &UserInfo, a: &Ask<'_>) -> bool {
    matches!(
        rbac.authorize(&a.attributes(user)).await,
        Decision::Allow(_)
    )
}

#[tokio::test]
async fn users_verbs_resources_namespaces() {
    let rbac = authorizer();
    let bob = user("bob", &["system:authenticated"]);
    let reader = user("alice", &["readers", "system:authenticated"]);
    let nobody = user("eve", &["system:authenticated"]);
    let ci = user("system:serviceaccount:dev:ci", &[]);
    let other_ci = user("system:serviceaccount:prod:ci", &[]);
    let robot = user("system:serviceaccount:tools:robot", &[]);
    let cases: &[(&UserInfo, Ask<'_>, bool)] = &[
        // A ClusterRoleBinding applies in every namespace and cluster-wide.
        (&reader, ask("list", "default", "", "pods"), true),
        (&reader, ask("list", "", "", "pods"), true),
        (&reader, ask("delete", "default", "", "pods"), false),
        (&reader, ask("list", "default", "", "secrets"), false),
        // A RoleBinding applies in its namespace only.
        (&bob, ask("create", "dev", "apps", "deployments"), true),
        (&bob, ask("create", "prod", "apps", "deployments"), false),
        (&bob, ask("create", "", "apps", "deployments"), false),
        (&bob, ask("create", "dev", "", "deployments"), false),
        (&bob, ask("list", "dev", "", "pods"), false),
        (&nobody, ask("get", "dev", "apps", "deployments"), false),
        // ServiceAccount subjects default to the binding's namespace.
        (&ci, ask("patch", "dev", "apps", "deployments"), true),
        (&other_ci, ask("patch", "dev", "apps", "deployments"), false),
        (&robot, ask("get", "dev", "", "pods"), true),
        (&robot, ask("get", "tools", "", "pods"), false),
    ];
    for (user, a, want) in cases {
        let got = allowed(&rbac, user, a).await;
        assert_eq!(
            got, *want,
            "{} {} {}/{} in {:?}",
            user.name, a.verb, a.group, a.resource, a.namespace
        );
    }
}

#[tokio::test]
async fn subresources_and_resource_names() {
    let rbac = authorizer();
    let bob = user("bob", &[]);
    let reader = user("alice", &["readers"]);
    let mut log = ask("get", "default", "", "pods");
    log.subresource = "log";
    assert!(allowed(&rbac, &reader, &log).await);
    log.subresource = "exec";
    assert!(!allowed(&rbac, &reader, &log).await);
    let mut scale = ask("update", "dev", "apps", "deployments");
    scale.subresource = "scale";
    assert!(allowed(&rbac, &bob, &scale).await);
    scale.subresource = "status";
    assert!(!allowed(&rbac, &bob, &scale).await);
    let mut cm = ask("get", "dev", "", "configmaps");
    cm.name = "settings";
    assert!(allowed(&rbac, &bob, &cm).await);
    cm.name = "other";
    assert!(!allowed(&rbac, &bob, &cm).await);
    cm.name = "";
    cm.verb = "list";
    assert!(!allowed(&rbac, &bob, &cm).await);
}

#[tokio::test]
async fn non_resource_urls() {
    let rbac = authorizer();
    let check = |name: &'static str, groups: &'static [&'static str], path: &'static str| {
        let rbac = &rbac;
        async move {
            let u = user(name, groups);
            let attrs = Attributes {
                user: &u,
                verb: "get",
                is_resource_request: false,
                namespace: "",
                api_group: "",
                resource: "",
                subresource: "",
                name: "",
                path,
                api_version: "",
                field_selector: "",
                label_selector: "",
            };
            matches!(rbac.authorize(&attrs).await, Decision::Allow(_))
        }
    };
    assert!(check("bob", &["system:authenticated"], "/healthz").await);
    assert!(check("bob", &["system:authenticated"], "/readyz/etcd").await);
    assert!(!check("bob", &["system:authenticated"], "/readyz").await);
    assert!(!check("system:anonymous", &["system:unauthenticated"], "/healthz").await);
}

#[tokio::test]
async fn reasons() {
    let rbac = authorizer();
    let bob = user("bob", &[]);
    let granted = ask("get", "dev", "apps", "deployments");
    assert_eq!(
        rbac.authorize(&granted.attributes(&bob)).await,
        Decision::Allow(
            "RBAC: allowed by RoleBinding \"deployers/dev\" of Role \"deployer\" to User \"bob\""
                .into()
        )
    );
    // No matching rule: no opinion and nothing to say.
    let elsewhere = ask("get", "prod", "apps", "deployments");
    assert_eq!(
        rbac.authorize(&elsewhere.attributes(&bob)).await,
        Decision::NoOpinion(String::new())
    );
    // A binding to a missing role is reported.
    let carol = user("carol", &[]);
    let secrets = ask("get", "dev", "", "secrets");
    assert_eq!(
        rbac.authorize(&secrets.attributes(&carol)).await,
        Decision::NoOpinion("RBAC: role.rbac.authorization.k8s.io \"missing\" not found".into())
    );
}

impl<'a> Ask<'a> {
    fn attributes<'b>(&'b self, user: &'b UserInfo) -> Attributes<'b> {
        Attributes {
            user,
            verb: self.verb,
            is_resource_request: true,
            namespace: self.namespace,
            api_group: self.group,
            resource: self.resource,
            subresource: self.subresource,
            name: self.name,
            path: "",
            api_version: "",
            field_selector: "",
            label_selector: "",
        }
    }
}

#[tokio::test]
async fn unbound_has_no_opinion() {
    let rbac = RbacAuthorizer::new();
    let bob = user("bob", &["system:masters"]);
    let a = ask("get", "", "", "pods");
    assert_eq!(
        rbac.authorize(&a.attributes(&bob)).await,
        Decision::NoOpinion(String::new())
    );
}

#[tokio::test]
async fn rules_for_lists_cluster_and_namespace_rules() {
    let rbac = authorizer();
    let bob = user("bob", &["system:authenticated"]);
    let rules = rbac.rules_for(&bob, "dev").await;
    assert!(!rules.incomplete);
    let resources: Vec<&str> = rules
        .resource_rules
        .iter()
        .flat_map(|r| r.resources.iter().map(String::as_str))
        .collect();
    assert_eq!(
        resources,
        ["deployments", "deployments/scale", "configmaps"]
    );
    assert_eq!(rules.non_resource_rules.len(), 1);
    assert!(rbac.rules_for(&bob, "prod").await.resource_rules.is_empty());
    let carol = rbac.rules_for(&user("carol", &[]), "dev").await;
    // A missing role is an error, not an incomplete list, as upstream.
    assert!(!carol.incomplete);
    assert_eq!(carol.errors.len(), 1);
}
