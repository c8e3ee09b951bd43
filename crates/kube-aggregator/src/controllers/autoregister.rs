//! The autoregistration controller (upstream's
//! `pkg/controllers/autoregister`): an APIService for every group version
//! the servers behind the aggregator serve, labelled as managed by it and
//! local (no `spec.service`).

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Store, WriteOptions};
use apiserver::server::{DiscoveryRegistry, GenericApiServer};
use serde_json::{json, Value};

/// `groupPriorityMinimum` and `versionPriority` of a group version.
pub type Priorities = fn(group: &str, version: &str) -> (i64, i64);

/// Registers, once the server runs, an APIService for every group version
/// in `discovery` that has none yet.
pub fn install(
    server: &mut GenericApiServer,
    discovery: DiscoveryRegistry,
    priorities: Priorities,
) {
    let Some(api_services) = server.store("apiregistration.k8s.io", "v1", "apiservices") else {
        return;
    };
    server.add_post_start_hook(
        "kube-apiserver-autoregistration",
        Arc::new(move |_ctx| {
            let (api_services, discovery) = (api_services.clone(), discovery.clone());
            Box::pin(async move {
                for (group, version) in discovery.group_versions() {
                    let obj = api_service(&group, &version, priorities(&group, &version));
                    register(&api_services, obj).await?;
                }
                Ok(())
            })
        }),
    );
}

/// Creates the APIService unless one of its name exists.
async fn register(api_services: &Store, obj: Value) -> Result<(), String> {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    if api_services
        .get(None, name, Default::default())
        .await
        .is_ok()
    {
        return Ok(());
    }
    match api_services.create(obj, &WriteOptions::default()).await {
        Ok(_) | Err(ApiError { code: 409, .. }) => Ok(()),
        Err(e) => Err(e.message),
    }
}

/// The local APIService of a group version, named `<version>.<group>`.
pub fn api_service(group: &str, version: &str, (min, priority): (i64, i64)) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}"),
            "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
        "spec": {"group": group, "version": version,
            "groupPriorityMinimum": min, "versionPriority": priority},
    })
}
