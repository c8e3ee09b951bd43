//! RBAC's post-start hook `rbac/bootstrap-roles` (upstream's
//! `pkg/registry/rbac/rest.PolicyData`): the default policy of
//! `authorization::rbac::bootstrappolicy`, created when missing and
//! reconciled otherwise (`reconcile`), and binding the RBAC authorizer to
//! the RBAC stores. The aggregated roles (admin, edit, view, and any with
//! an aggregationRule) are kept the union of the roles they select by a
//! controller the hook starts.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Mutate, Store, Target, WriteOptions};
use apiserver::server::GenericApiServer;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use storage::{ListOptions, ReadVersion, WatchEvent, WatchOptions};

use crate::authorization::rbac::bootstrappolicy::{
    aggregated_rules, controller_roles, default_cluster_role_bindings, default_cluster_roles,
    default_namespace_role_bindings, default_namespace_roles, name_of, GROUP,
};
use crate::authorization::rbac::{RbacAuthorizer, RbacStores};

mod reconcile;

use reconcile::ensure;

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
