//! The default RBAC policy (upstream's
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`): the ClusterRoles and
//! ClusterRoleBindings of users, components and controllers, the Roles and
//! RoleBindings of kube-system and kube-public, and the node rules, which
//! the Node authorizer also applies. `app::rbac_bootstrap` writes them at
//! startup.
//!
//! The policy is upstream's with 1.37's default feature gates; rules of
//! gates off by default are left out.

use apimachinery::labels::Selector;
use serde_json::{json, Value};

mod component_roles;
pub mod controller_roles;
mod namespace_policy;
pub mod node_rules;
mod user_roles;

pub use namespace_policy::{default_namespace_role_bindings, default_namespace_roles};
use node_rules::node_rules;
use user_roles::{admin_rules, edit_rules, view_rules};

pub const GROUP: &str = "rbac.authorization.k8s.io";
const RESOURCE: &[&str] = &["resource.k8s.io"];
const READ: &[&str] = &["get", "list", "watch"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const AGGREGATE_TO: &str = "rbac.authorization.k8s.io/aggregate-to-";

/// A copy of `items` in order: upstream's rule builder keeps every list
/// of a rule sorted.
fn sorted<'a>(items: &[&'a str]) -> Vec<&'a str> {
    let mut items = items.to_vec();
    items.sort_unstable();
    items
}

/// A resource rule, its lists sorted as upstream's rule builder leaves them.
fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": sorted(verbs), "apiGroups": sorted(groups), "resources": sorted(resources)})
}

/// A resource rule limited to the named objects.
fn named(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Value {
    let mut limited = rule(verbs, groups, resources);
    limited["resourceNames"] = json!(sorted(names));
    limited
}

/// A non-resource rule.
fn urls(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"verbs": sorted(verbs), "nonResourceURLs": sorted(urls)})
}

/// Recording events through either events API (upstream's `eventsRule`).
fn events_rule() -> Value {
    rule(
        &["create", "patch", "update"],
        &["", "events.k8s.io"],
        &["events"],
    )
}

/// The label and annotation upstream puts on every bootstrap object.
fn bootstrap_metadata(name: &str) -> Value {
    json!({"name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}})
}

fn cluster_role(name: &str, labels: Value, rules: Vec<Value>) -> Value {
    let mut metadata = bootstrap_metadata(name);
    if let (Some(all), Some(extra)) = (metadata["labels"].as_object_mut(), labels.as_object()) {
        all.extend(extra.clone());
    }
    json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole",
        "metadata": metadata,
        "rules": rules,
    })
}

/// A role whose rules are those of the roles labelled `aggregate-to-<to>`.
fn aggregated_role(name: &str, to: &str, labels: Value) -> Value {
    let mut role = cluster_role(name, labels, Vec::new());
    role["aggregationRule"] = json!({"clusterRoleSelectors": [
        {"matchLabels": {format!("{AGGREGATE_TO}{to}"): "true"}}]});
    role
}

fn aggregate_label(to: &str) -> Value {
    json!({ format!("{AGGREGATE_TO}{to}"): "true" })
}

fn group(name: &str) -> Value {
    json!({"kind": "Group", "apiGroup": GROUP, "name": name})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "apiGroup": GROUP, "name": name})
}

/// A kube-system ServiceAccount, where the components' identities live.
fn service_account(name: &str) -> Value {
    json!({"kind": "ServiceAccount", "name": name, "namespace": "kube-system"})
}

/// A binding of the ClusterRole of the same name; one without subjects has
/// none in upstream's policy either.
fn cluster_role_binding(name: &str, subjects: Vec<Value>) -> Value {
    let mut binding = json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRoleBinding",
        "metadata": bootstrap_metadata(name),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
    });
    if !subjects.is_empty() {
        binding["subjects"] = Value::Array(subjects);
    }
    binding
}

/// The health, metrics and component status endpoints monitoring reads.
fn monitoring_rules() -> Vec<Value> {
    vec![
        urls(
            &["get"],
            &[
                "/metrics",
                "/metrics/slis",
                "/livez",
                "/readyz",
                "/healthz",
                "/livez/*",
                "/readyz/*",
                "/healthz/*",
            ],
        ),
        // ComponentFlagz and ComponentStatusz (beta, on by default).
        urls(&["get"], &["/flagz"]),
        urls(&["get"], &["/statusz"]),
    ]
}

/// The discovery, self-review and delegation roles every cluster binds.
fn access_roles() -> Vec<Value> {
    let health = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
    let discovery = [
        &health[..],
        &[
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/openapi",
            "/openapi/*",
        ],
    ]
    .concat();
    vec![
        cluster_role(
            "cluster-admin",
            json!({}),
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        cluster_role(
            "system:discovery",
            json!({}),
            vec![urls(&["get"], &discovery)],
        ),
        cluster_role(
            "system:public-info-viewer",
            json!({}),
            vec![urls(&["get"], &health)],
        ),
        cluster_role(
            "system:basic-user",
            json!({}),
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role("system:monitoring", json!({}), monitoring_rules()),
        cluster_role(
            "system:service-account-issuer-discovery",
            json!({}),
            vec![urls(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
        ),
        cluster_role(
            "system:auth-delegator",
            json!({}),
            vec![
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
    ]
}

/// The default ClusterRoles, in upstream's order of aggregation (a role
/// comes after the roles it aggregates).
pub fn default_cluster_roles() -> Vec<Value> {
    let mut roles = access_roles();
    roles.extend([
        // Bound to no one: the Node authorizer grants kubelets these rules.
        cluster_role("system:node", json!({}), node_rules()),
        cluster_role(
            "system:aggregate-to-view",
            aggregate_label("view"),
            view_rules(),
        ),
        cluster_role(
            "system:aggregate-to-edit",
            aggregate_label("edit"),
            edit_rules(),
        ),
        cluster_role(
            "system:aggregate-to-admin",
            aggregate_label("admin"),
            admin_rules(),
        ),
        aggregated_role("view", "view", aggregate_label("edit")),
        aggregated_role("edit", "edit", aggregate_label("admin")),
        aggregated_role("admin", "admin", json!({})),
    ]);
    roles.extend(component_roles::component_roles());
    for i in 0..roles.len() {
        let all: Vec<&Value> = roles.iter().collect();
        if let Some(rules) = aggregated_rules(&roles[i], &all) {
            roles[i]["rules"] = Value::Array(rules);
        }
    }
    roles
}

/// The object's name, empty when it has none.
pub fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// For a role with an aggregationRule, the union of the rules of the other
/// roles it selects, in name order and without repeats (upstream's
/// ClusterRole aggregation controller).
pub fn aggregated_rules(role: &Value, all: &[&Value]) -> Option<Vec<Value>> {
    let selectors = role
        .pointer("/aggregationRule/clusterRoleSelectors")?
        .as_array()?;
    let name = name_of(role);
    let mut others: Vec<&Value> = all.iter().copied().filter(|o| name_of(o) != name).collect();
    others.sort_by(|a, b| name_of(a).cmp(name_of(b)));
    let mut rules: Vec<Value> = Vec::new();
    for selector in selectors {
        let Ok(selector) = Selector::from_label_selector(Some(selector)) else {
            continue;
        };
        for other in &others {
            let labels = other.pointer("/metadata/labels").and_then(Value::as_object);
            if !labels.is_some_and(|l| selector.matches(l)) {
                continue;
            }
            let other_rules = other.get("rules").and_then(Value::as_array);
            for r in other_rules.into_iter().flatten() {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Some(rules)
}

/// The default ClusterRoleBindings.
pub fn default_cluster_role_bindings() -> Vec<Value> {
    let authenticated = || group("system:authenticated");
    let mut bindings = vec![
        cluster_role_binding("cluster-admin", vec![group("system:masters")]),
        cluster_role_binding("system:discovery", vec![authenticated()]),
        cluster_role_binding("system:basic-user", vec![authenticated()]),
        cluster_role_binding(
            "system:public-info-viewer",
            vec![authenticated(), group("system:unauthenticated")],
        ),
        cluster_role_binding("system:monitoring", vec![group("system:monitoring")]),
        cluster_role_binding(
            "system:service-account-issuer-discovery",
            vec![group("system:serviceaccounts")],
        ),
        cluster_role_binding("system:node", Vec::new()),
    ];
    bindings.extend(component_roles::component_role_bindings());
    bindings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role<'a>(roles: &'a [Value], name: &str) -> &'a Value {
        roles
            .iter()
            .find(|r| r["metadata"]["name"] == name)
            .unwrap_or(&Value::Null)
    }

    #[test]
    fn aggregated_roles_hold_the_rules_they_select() {
        let roles = default_cluster_roles();
        let count = |name: &str| role(&roles, name)["rules"].as_array().map_or(0, Vec::len);
        assert_eq!(count("view"), view_rules().len());
        assert_eq!(count("edit"), view_rules().len() + edit_rules().len());
        assert_eq!(
            count("admin"),
            view_rules().len() + edit_rules().len() + admin_rules().len()
        );
        let admin = &role(&roles, "admin")["rules"];
        assert!(admin
            .as_array()
            .is_some_and(|rules| rules.contains(&admin_rules()[1])));
        assert_eq!(
            role(&roles, "view")["metadata"]["labels"][format!("{AGGREGATE_TO}edit")],
            "true"
        );
    }

    #[test]
    fn bindings_refer_to_bootstrap_roles() {
        let roles = default_cluster_roles();
        for binding in default_cluster_role_bindings() {
            let name = binding["roleRef"]["name"].as_str().unwrap_or_default();
            assert!(!role(&roles, name).is_null(), "{name}");
        }
        let admin = &default_cluster_role_bindings()[0];
        assert_eq!(admin["subjects"][0]["name"], "system:masters");
        // Upstream binds system:node to no one; the Node authorizer serves nodes.
        let node = default_cluster_role_bindings()
            .into_iter()
            .find(|b| b["metadata"]["name"] == "system:node");
        assert!(node.is_some_and(|b| b.get("subjects").is_none()));
    }

    /// Every policy object's rules, with the object's name.
    fn every_rule() -> Vec<(String, Value)> {
        let roles = default_cluster_roles()
            .into_iter()
            .chain(controller_roles::roles())
            .chain(default_namespace_roles());
        let mut out = Vec::new();
        for role in roles {
            let name = name_of(&role).to_owned();
            for rule in role["rules"].as_array().into_iter().flatten() {
                out.push((name.clone(), rule.clone()));
            }
        }
        out
    }

    #[test]
    fn every_list_of_every_rule_is_sorted() {
        for (name, rule) in every_rule() {
            for (field, list) in rule.as_object().into_iter().flatten() {
                let items: Vec<&str> = list
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                assert!(!items.is_empty(), "{name} {field}");
                assert!(
                    items.windows(2).all(|pair| pair[0] < pair[1]),
                    "{name} {field}: {items:?}"
                );
            }
        }
    }

    #[test]
    fn edit_rules_follow_upstreams_order() {
        let roles = default_cluster_roles();
        let edit = &role(&roles, "system:aggregate-to-edit")["rules"];
        let escalating = [
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "pods/proxy",
            "secrets",
            "services/proxy",
        ];
        assert_eq!(
            edit[0],
            json!({"verbs": READ, "apiGroups": [""], "resources": escalating})
        );
        assert_eq!(
            edit[1],
            json!({"verbs": ["impersonate"], "apiGroups": [""], "resources": ["serviceaccounts"]})
        );
        assert_eq!(
            edit[12],
            json!({"verbs": READ_WRITE, "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"]})
        );
        assert_eq!(
            edit[13],
            json!({"verbs": ["create", "delete", "deletecollection", "patch", "update"],
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaims", "resourceclaimtemplates"]})
        );
        assert_eq!(edit.as_array().map(Vec::len), Some(14));
        let view = &role(&roles, "view")["rules"];
        assert_eq!(
            view[10],
            json!({"verbs": READ, "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaims", "resourceclaims/status", "resourceclaimtemplates"]})
        );
    }

    #[test]
    fn monitoring_reads_health_metrics_and_component_pages() {
        let roles = default_cluster_roles();
        assert_eq!(
            role(&roles, "system:monitoring")["rules"],
            json!([
                {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/healthz/*", "/livez",
                    "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"]},
                {"verbs": ["get"], "nonResourceURLs": ["/flagz"]},
                {"verbs": ["get"], "nonResourceURLs": ["/statusz"]},
            ])
        );
    }
}
