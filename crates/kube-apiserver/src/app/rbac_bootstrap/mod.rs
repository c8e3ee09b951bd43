//! RBAC's post-start hook `rbac/bootstrap-roles` (upstream's
//! `pkg/registry/rbac/rest.PolicyData` with the policy of
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`): the default
//! ClusterRoles and ClusterRoleBindings, created when missing and
//! reconciled otherwise (`reconcile`), and binding
//! the RBAC authorizer to the RBAC stores. The aggregated roles (admin,
//! edit, view, and any with an aggregationRule) are kept the union of the
//! roles they select by a controller the hook starts.
//!
//! The policy is upstream's with 1.37's default feature gates; rules of
//! gates off by default are left out.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::labels::Selector;
use apimachinery::status::ApiError;
use apiserver::authorization::rbac::{RbacAuthorizer, RbacStores};
use apiserver::registry::{Mutate, Store, Target, WriteOptions};
use apiserver::server::GenericApiServer;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};
use storage::{ListOptions, ReadVersion, WatchEvent, WatchOptions};

use crate::authorization::node_rules::node_rules;

mod component_roles;
mod controller_roles;
mod namespace_policy;
mod reconcile;
mod user_roles;

use namespace_policy::{default_namespace_role_bindings, default_namespace_roles};
use reconcile::ensure;
use user_roles::{admin_rules, edit_rules, view_rules};

const GROUP: &str = "rbac.authorization.k8s.io";
const RESOURCE: &[&str] = &["resource.k8s.io"];
pub(crate) const READ: &[&str] = &["get", "list", "watch"];
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
pub(crate) fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
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

fn name_of(obj: &Value) -> &str {
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

/// Binds the RBAC authorizer, when RBAC is a mode, to the RBAC stores of
/// `server`, and installs the bootstrap hook (upstream creates the default
/// policy whatever the authorization modes).
pub fn install(server: &mut GenericApiServer, rbac: Option<&Arc<RbacAuthorizer>>) {
    let store = |resource: &str| server.store(GROUP, "v1", resource);
    let (Some(roles), Some(role_bindings), Some(cluster_roles), Some(cluster_role_bindings)) = (
        store("roles"),
        store("rolebindings"),
        store("clusterroles"),
        store("clusterrolebindings"),
    ) else {
        if rbac.is_some() {
            tracing::warn!("the RBAC resources are not served: RBAC allows nothing");
        }
        return;
    };
    if let Some(rbac) = rbac {
        rbac.bind(Arc::new(RbacStores {
            roles: roles.clone(),
            role_bindings: role_bindings.clone(),
            cluster_roles: cluster_roles.clone(),
            cluster_role_bindings: cluster_role_bindings.clone(),
        }));
    }
    let stores = Arc::new([cluster_roles, cluster_role_bindings, roles, role_bindings]);
    server.add_post_start_hook(
        "rbac/bootstrap-roles",
        Arc::new(move || {
            let stores = stores.clone();
            Box::pin(async move {
                let [cluster_roles, cluster_role_bindings, roles, role_bindings] = &*stores;
                let policy = [
                    (cluster_roles, default_cluster_roles()),
                    (cluster_roles, controller_roles::roles()),
                    (cluster_role_bindings, default_cluster_role_bindings()),
                    (cluster_role_bindings, controller_roles::role_bindings()),
                    (roles, default_namespace_roles()),
                    (role_bindings, default_namespace_role_bindings()),
                ];
                for (store, objects) in policy {
                    for obj in objects {
                        ensure(store, obj).await?;
                    }
                }
                tokio::spawn(aggregate_cluster_roles(cluster_roles.clone()));
                Ok(())
            })
        }),
    );
}

/// Keeps every aggregated ClusterRole's rules the union of the roles it
/// selects, reconciling after each burst of ClusterRole changes. Upstream
/// runs this controller in kube-controller-manager; this server has none.
async fn aggregate_cluster_roles(store: Arc<Store>) {
    loop {
        match store.watch(None, WatchOptions::default()).await {
            Ok(mut events) => {
                while let Some(event) = events.next().await {
                    match event {
                        WatchEvent::Bookmark(_) => continue,
                        WatchEvent::Error(e) => {
                            tracing::debug!(error = %e, "ClusterRole watch ended");
                            break;
                        }
                        _ => {}
                    }
                    // One reconcile for the events already waiting.
                    while let Some(Some(_)) = events.next().now_or_never() {}
                    if let Err(e) = reconcile_aggregation(&store).await {
                        tracing::warn!(error = %e.message, "aggregating ClusterRoles failed");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "watching ClusterRoles failed"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Writes the aggregated rules of every aggregated ClusterRole whose
/// stored rules differ.
async fn reconcile_aggregation(store: &Store) -> Result<(), ApiError> {
    let opts = ListOptions {
        version: ReadVersion::Any,
        ..ListOptions::default()
    };
    let list = store.list(None, opts).await?;
    let all: Vec<&Value> = list.items.iter().map(AsRef::as_ref).collect();
    for role in &all {
        let Some(rules) = aggregated_rules(role, &all) else {
            continue;
        };
        let current = role.get("rules").and_then(Value::as_array);
        if current.map_or(rules.is_empty(), |c| *c == rules) {
            continue;
        }
        let name = name_of(role).to_owned();
        let rules = Value::Array(rules);
        let missing = name.clone();
        let mutate: Mutate = Arc::new(move |current: Option<&Value>| {
            let mut obj = current
                .cloned()
                .ok_or_else(|| ApiError::not_found(GROUP, "clusterroles", &missing))?;
            obj["rules"] = rules.clone();
            Ok(obj)
        });
        let written = store
            .update(None, &name, Target::Main, mutate, &WriteOptions::default())
            .await;
        match written {
            Ok(_) => tracing::debug!(role = name, "aggregated ClusterRole rules updated"),
            Err(ApiError { code: 404, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
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
