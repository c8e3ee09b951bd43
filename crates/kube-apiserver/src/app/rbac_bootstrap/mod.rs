//! RBAC's post-start hook `rbac/bootstrap-roles` (upstream's
//! `pkg/registry/rbac/rest.PolicyData`): the default policy of
//! `authorization::rbac::bootstrappolicy`, created when missing and
//! reconciled otherwise (`reconcile`), and binding the RBAC authorizer to
//! the RBAC resources' shared informers. The hook then starts the
//! ClusterRole aggregation controller (`controller::clusterroleaggregation`),
//! elected as kube-controller-manager's (`controller_manager`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use apiserver::admission::initializer::Stores;
use apiserver::registry::store::Store;
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use futures::{StreamExt, TryStreamExt};

use crate::authorization::rbac::bootstrappolicy::{
    controller_roles, default_cluster_role_bindings, default_cluster_roles,
    default_namespace_role_bindings, default_namespace_roles, GROUP,
};
use crate::authorization::rbac::{PolicyReader, RbacAuthorizer, RbacStores};
use crate::controller::clusterroleaggregation;
use crate::controller_manager::ControllerManager;

mod reconcile;

/// Writes of the default policy in flight at once.
const BOOTSTRAP_WRITES_IN_FLIGHT: usize = 64;

use reconcile::ensure;

/// How long the hook waits for the authorizer to see the default bindings.
const BINDINGS_VISIBLE_WITHIN: Duration = Duration::from_secs(10);

/// Waits until the RBAC authorizer's reads (its informers' caches, which
/// follow the writes a moment later) hold every default ClusterRoleBinding,
/// so that the hook is done (and `/readyz` ok) only once requests are
/// authorized by the default policy: a client asking right after `/readyz`
/// is not refused for a binding the cache has not seen yet. Gives up after
/// [`BINDINGS_VISIBLE_WITHIN`]; the bindings are written either way.
async fn bindings_visible(reader: &dyn PolicyReader, wanted: &[String]) {
    let all_seen = async {
        loop {
            let held = reader.cluster_role_bindings().await.unwrap_or_default();
            let names: HashSet<String> =
                held.iter().filter_map(|b| b.metadata_str("name")).collect();
            if wanted.iter().all(|w| names.contains(w)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    if tokio::time::timeout(BINDINGS_VISIBLE_WITHIN, all_seen)
        .await
        .is_err()
    {
        tracing::warn!(
            "the default ClusterRoleBindings are not visible to the RBAC authorizer yet"
        );
    }
}

/// `(namespace, name)` of an object.
type ObjectKey = (String, String);

fn object_key(obj: &serde_json::Value) -> ObjectKey {
    let text = |field: &str| {
        let value = obj.pointer(&format!("/metadata/{field}"));
        value
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (text("namespace"), text("name"))
}

/// What `store` holds in the namespaces `objects` are in (all of it for a
/// cluster-scoped resource), by namespace and name: one list per namespace
/// rather than a read per object (on etcd each is a round trip), and not
/// every user's Roles.
async fn stored(
    store: &Store,
    objects: &[serde_json::Value],
) -> Result<HashMap<ObjectKey, storage::Object>, String> {
    let namespaces: BTreeSet<String> = objects.iter().map(|o| object_key(o).0).collect();
    let key = |obj: &storage::Object| {
        let [namespace, name] = [obj.metadata_str("namespace"), obj.metadata_str("name")];
        (namespace.unwrap_or_default(), name.unwrap_or_default())
    };
    let mut held = HashMap::new();
    for namespace in namespaces {
        let namespace = Some(namespace.as_str()).filter(|ns| !ns.is_empty());
        let list = store.list(namespace, Default::default()).await;
        let list = list.map_err(|e| format!("listing {}: {}", store.info.resource, e.message))?;
        held.extend(list.items.into_iter().map(|obj| (key(&obj), obj)));
    }
    Ok(held)
}

/// Creates the default policy where missing and reconciles it where stored;
/// returns the names of the default ClusterRoleBindings.
async fn write_policy(stores: &[Arc<Store>; 4]) -> Result<Vec<String>, String> {
    let [cluster_roles, cluster_role_bindings, roles, role_bindings] = stores;
    let mut roles_wanted = default_cluster_roles();
    roles_wanted.extend(controller_roles::roles());
    let mut bindings_wanted = default_cluster_role_bindings();
    bindings_wanted.extend(controller_roles::role_bindings());
    let bindings = bindings_wanted.iter().map(|b| object_key(b).1).collect();
    let policy = [
        (cluster_roles, roles_wanted),
        (cluster_role_bindings, bindings_wanted),
        (roles, default_namespace_roles()),
        (role_bindings, default_namespace_role_bindings()),
    ];
    let listed = policy.iter().map(|(store, objects)| stored(store, objects));
    let listed = futures::future::try_join_all(listed).await?;
    // Concurrently: the store commits concurrent writes together, so the
    // whole policy costs a few commits instead of one each.
    let mut writes = Vec::new();
    for ((store, objects), held) in policy.into_iter().zip(listed) {
        for obj in objects {
            let existing = held.get(&object_key(&obj)).cloned();
            writes.push(ensure(store, obj, existing));
        }
    }
    futures::stream::iter(writes)
        .buffer_unordered(BOOTSTRAP_WRITES_IN_FLIGHT)
        .try_collect::<()>()
        .await?;
    Ok(bindings)
}

/// Binds the RBAC authorizer, when RBAC is a mode, to the RBAC stores of
/// `server`, and installs the bootstrap hook (upstream creates the default
/// policy whatever the authorization modes).
pub fn install(
    server: &mut GenericApiServer,
    informers: &Arc<SharedInformerFactory>,
    rbac: Option<&Arc<RbacAuthorizer>>,
    manager: &ControllerManager,
) {
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
    let reader = rbac.map(|rbac| {
        let all = [
            &roles,
            &role_bindings,
            &cluster_roles,
            &cluster_role_bindings,
        ];
        let stores = Stores::new(all.map(|s| (*s).clone())).with_informers(informers.clone());
        let reader = Arc::new(RbacStores(stores));
        rbac.bind(reader.clone());
        reader
    });
    let aggregation = informers.informer_for(GROUP, "clusterroles");
    let stores = Arc::new([cluster_roles, cluster_role_bindings, roles, role_bindings]);
    let manager = manager.clone();
    server.add_post_start_hook(
        "rbac/bootstrap-roles",
        Arc::new(move |_ctx| {
            let (stores, aggregation) = (stores.clone(), aggregation.clone());
            let (manager, reader) = (manager.clone(), reader.clone());
            Box::pin(async move {
                let bindings = write_policy(&stores).await?;
                if let Some(reader) = reader {
                    bindings_visible(reader.as_ref(), &bindings).await;
                }
                if let Some(informer) = aggregation {
                    let [cluster_roles, ..] = &*stores;
                    let store = cluster_roles.clone();
                    manager.spawn(move |stop| {
                        clusterroleaggregation::run(informer.clone(), store.clone(), stop)
                    });
                }
                Ok(())
            })
        }),
    );
}
