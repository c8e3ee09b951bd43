//! Post-start hooks that create what every cluster has (upstream's
//! bootstrap controllers): the system namespaces, the system priority
//! classes, the apiserver identity Lease and its garbage collector, and the
//! priorities of the built-in groups' APIServices. The `kubernetes` Service
//! is `kubernetes_service`'s; what `extension-apiserver-authentication`
//! must publish is read from the flags here.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::authentication::x509::ClientCa;
use apiserver::registry::store::{Store, WriteOptions};
use apiserver::server::{GenericApiServer, PostStartHookFn};
use client_go::informers::SharedInformerFactory;
use serde_json::{json, Value};

use crate::controlplane::controller::apiserverleasegc;
use crate::controlplane::controller::clusterauthenticationtrust::{
    RequestHeaderLists, RequiredInfo,
};
use crate::options::CompletedOptions;

/// Creates an object unless it exists already.
async fn ensure(store: &Store, obj: Value) -> Result<(), String> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let namespace = obj.pointer("/metadata/namespace").and_then(Value::as_str);
    if store.get(namespace, name, Default::default()).await.is_ok() {
        return Ok(());
    }
    match store.create(obj, &WriteOptions::default()).await {
        Ok(_) => Ok(()),
        Err(ApiError { code: 409, .. }) => Ok(()),
        Err(e) => Err(e.message),
    }
}

pub(super) fn hook<F, Fut>(f: F) -> PostStartHookFn
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    Arc::new(move |_| Box::pin(f()))
}

fn store_of(server: &GenericApiServer, group: &str, resource: &str) -> Option<Arc<Store>> {
    server.store(group, "v1", resource)
}

pub fn install_hooks(server: &mut GenericApiServer) {
    let (Some(namespaces), Some(priority)) = (
        store_of(server, "", "namespaces"),
        store_of(server, "scheduling.k8s.io", "priorityclasses"),
    ) else {
        return;
    };
    server.add_post_start_hook(
        "start-system-namespaces-controller",
        hook(move || {
            let namespaces = namespaces.clone();
            async move {
                let names = ["default", "kube-system", "kube-public", "kube-node-lease"];
                let created = names.map(|name| {
                    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                    ensure(&namespaces, ns)
                });
                futures::future::try_join_all(created).await.map(drop)
            }
        }),
    );
    server.add_post_start_hook(
        "scheduling/bootstrap-system-priority-classes",
        hook(move || {
            let priority = priority.clone();
            async move {
                let created = [
                    ("system-node-critical", 2_000_001_000, "Used for system critical pods that must not be moved from their current node."),
                    ("system-cluster-critical", 2_000_000_000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
                ]
                .map(|(name, value, description)| {
                    let pc = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                        "metadata": {"name": name}, "value": value, "description": description,
                        "preemptionPolicy": "PreemptLowerPriority"});
                    ensure(&priority, pc)
                });
                futures::future::try_join_all(created).await.map(drop)
            }
        }),
    );
}

/// The apiserver identity Lease, renewed until the server stops, and the
/// garbage collector of expired ones on the shared Lease informer.
pub fn install_identity_leases(server: &mut GenericApiServer, informers: &SharedInformerFactory) {
    let (Some(leases), Some(informer)) = (
        store_of(server, "coordination.k8s.io", "leases"),
        informers.informer_for("coordination.k8s.io", "leases"),
    ) else {
        return;
    };
    let renewed = leases.clone();
    server.add_post_start_hook(
        "start-kube-apiserver-identity-lease-controller",
        Arc::new(move |ctx| {
            tokio::spawn(apiserverleasegc::renew(renewed.clone(), ctx.stop));
            Box::pin(async { Ok(()) })
        }),
    );
    server.add_post_start_hook(
        "start-kube-apiserver-identity-lease-garbage-collector",
        Arc::new(move |ctx| {
            let period = apiserverleasegc::GC_PERIOD;
            let gc = apiserverleasegc::collect_garbage(
                informer.clone(),
                leases.clone(),
                period,
                ctx.stop,
            );
            tokio::spawn(gc);
            Box::pin(async { Ok(()) })
        }),
    );
}

/// Upstream's fixed priorities of the built-in group versions
/// (`groupPriorityMinimum`, `versionPriority`; higher first):
/// `apiVersionPriorities` of `cmd/kube-apiserver/app/aggregator.go` merged
/// over `DefaultGenericAPIServicePriorities`.
pub fn group_priority(group: &str, version: &str) -> (i64, i64) {
    let min = match group {
        "" => 18000,
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "apiextensions.k8s.io" => 16700,
        "admissionregistration.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        "discovery.k8s.io" => 16200,
        "resource.k8s.io" => 16200,
        "flowcontrol.apiserver.k8s.io" => 16100,
        "apiregistration.k8s.io" => 18000,
        _ => 16000,
    };
    let priority = match (group, version) {
        ("", _) => 1,
        ("autoscaling", "v2") => 30,
        ("flowcontrol.apiserver.k8s.io" | "resource.k8s.io", "v1") => 21,
        _ => 15,
    };
    (min, priority)
}

/// Keeps `apiserver_storage_objects` current by counting every resource
/// each `--etcd-count-metric-poll-period` (upstream's object count tracker).
pub fn install_object_counter(
    server: &mut GenericApiServer,
    stores: Vec<Arc<Store>>,
    metrics: Arc<apiserver::metrics::Metrics>,
    period: Duration,
) {
    if period.is_zero() {
        return;
    }
    let stores = Arc::new(stores);
    server.add_post_start_hook(
        "storage-object-count-tracker-hook",
        hook(move || {
            let (stores, metrics) = (stores.clone(), metrics.clone());
            async move {
                tokio::spawn(async move {
                    loop {
                        for store in stores.iter() {
                            let key = store.collection_key(None);
                            match store.storage().count(&key).await {
                                Ok(n) => metrics.set_storage_objects(
                                    &store.info.group,
                                    &store.info.resource,
                                    n,
                                ),
                                Err(e) => {
                                    tracing::debug!(error = %e, key, "counting objects failed")
                                }
                            }
                        }
                        tokio::time::sleep(period).await;
                    }
                });
                Ok(())
            }
        }),
    );
}

/// What `kube-system/extension-apiserver-authentication` must publish for
/// aggregated API servers: the client CA, and the front proxy's CA with
/// the `--requestheader-*` header lists.
pub fn required_authentication_info(
    opts: &CompletedOptions,
    client_ca: Option<ClientCa>,
    request_header_ca: Option<ClientCa>,
) -> RequiredInfo {
    let flags = &opts.options.flags;
    let list = |key: &str| flags.list(key).unwrap_or_default();
    RequiredInfo {
        client_ca,
        request_header_ca,
        lists: RequestHeaderLists {
            username_headers: list("requestheader-username-headers"),
            uid_headers: list("requestheader-uid-headers"),
            group_headers: list("requestheader-group-headers"),
            extra_header_prefixes: list("requestheader-extra-headers-prefix"),
            allowed_names: list("requestheader-allowed-names"),
        },
        uid_headers: opts.feature_gates.get("RemoteRequestHeaderUID") != Some(&false),
    }
}

/// Upstream's legacy token tracking: `kube-system/kube-apiserver-legacy-service-account-token-tracking`
/// records the date since which the use of legacy service-account tokens
/// is tracked (created once; an existing one is kept).
pub fn install_legacy_token_tracking(server: &mut GenericApiServer) {
    let Some(configmaps) = store_of(server, "", "configmaps") else {
        return;
    };
    server.add_post_start_hook(
        "start-legacy-token-tracking-controller",
        hook(move || {
            let configmaps = configmaps.clone();
            async move {
                let since = chrono::Utc::now().format("%Y-%m-%d").to_string();
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "kube-apiserver-legacy-service-account-token-tracking",
                        "namespace": "kube-system"},
                    "data": {"since": since}});
                match configmaps.create(cm, &WriteOptions::default()).await {
                    Ok(_) | Err(ApiError { code: 409, .. }) => Ok(()),
                    Err(e) => Err(e.message),
                }
            }
        }),
    );
}
