//! The kube-apiserver server of the chain (upstream's `pkg/controlplane`
//! `instance.go`, `Config.Complete().New(delegate)`): the built-in groups
//! with their computed and review resources and kubelet subresources, then
//! the post-start hooks and controllers that keep them (bootstrap, service
//! IPs, the kube-controller-manager's controllers, garbage collection,
//! quota, priority and fairness, RBAC).

use std::sync::Arc;

use apiextensions_apiserver::CustomResourceDefinitions;
use apiserver::endpoints::virtual_create::VirtualResource;
use apiserver::registry::store::Store;
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;

use super::authentication::{self, AuthenticationSetup};
use super::runtime_config::ApiEnablement;
use super::server::{ChainConfig, ChainError};
use super::{bootstrap, rbac_bootstrap};
use crate::controller_manager::ControllerManager;
use crate::controlplane::builtin::{self, Builtin};
use crate::controlplane::controller::{clusterauthenticationtrust, defaultservicecidr};
use crate::controlplane::openapi::ResourceSchema;
use crate::controlplane::StorageFactory;
use crate::controlplane::{autoscaling_v1, events_v1, reviews};
use crate::options::{CompletedOptions, StorageBackend};
use crate::registry::services::ipallocator::controller as ip_repair;
use crate::registry::services::ServiceAllocator;

/// The group versions kube-apiserver serves: stored ones, and those of
/// its review and computed resources (for `--runtime-config`).
pub fn served_group_versions(core: &[Builtin], named: &[Vec<Builtin>]) -> Vec<(String, String)> {
    std::iter::once(core)
        .chain(named.iter().map(Vec::as_slice))
        .filter_map(<[Builtin]>::first)
        .map(|b| (b.info.group.clone(), b.info.version.clone()))
        .chain(
            REVIEW_GROUPS
                .into_iter()
                .chain([autoscaling_v1::GROUP_VERSION, events_v1::GROUP_VERSION])
                .map(|(g, v)| (g.to_owned(), v.to_owned())),
        )
        .collect()
}

/// The kube-apiserver server delegating to the apiextensions server;
/// returns what OpenAPI needs of its resources.
pub fn create_kube_api_server(
    chain: &ChainConfig,
    authn_setup: &AuthenticationSetup,
    allocator: &Arc<ServiceAllocator>,
    extensions: &CustomResourceDefinitions,
) -> Result<(GenericApiServer, Vec<Vec<ResourceSchema>>), ChainError> {
    let mut kube = chain
        .generic
        .new_server("kube-apiserver", &extensions.generic_api_server);
    let schemas = install_apis(&mut kube, chain, authn_setup, allocator)?;
    install_controllers(&mut kube, chain, authn_setup, allocator, extensions);
    Ok((kube, schemas))
}

/// The built-in groups, with the computed and review resources and the
/// kubelet subresources.
fn install_apis(
    kube: &mut GenericApiServer,
    chain: &ChainConfig,
    authn_setup: &AuthenticationSetup,
    allocator: &Arc<ServiceAllocator>,
) -> Result<Vec<Vec<ResourceSchema>>, ChainError> {
    let (config, factory, opts, enabled) =
        (chain.generic, chain.factory, chain.opts, chain.enabled);
    let mut schemas = vec![install(
        kube,
        factory,
        builtin::core_v1(allocator.clone()),
        enabled,
    )];
    for mut group in builtin::named_groups() {
        group.retain(|b| builtin::gate_allows(&b.info, &opts.feature_gates));
        schemas.push(install(kube, factory, group, enabled));
    }
    let (group, version) = autoscaling_v1::GROUP_VERSION;
    if enabled.resource_enabled(group, version, "horizontalpodautoscalers") {
        schemas.push(autoscaling_v1::install(kube, &factory.prefix));
    }
    let (group, version) = events_v1::GROUP_VERSION;
    if enabled.resource_enabled(group, version, "events") {
        schemas.push(events_v1::install(kube, &factory.prefix));
    }
    if enabled.resource_enabled("", "v1", "componentstatuses") {
        let etcd = matches!(opts.storage, StorageBackend::Etcd { .. }).then(|| factory.kv.clone());
        let statuses = crate::registry::componentstatus::resource(etcd);
        kube.install_computed_resource("", "v1", statuses);
    }
    crate::registry::binding::install(kube);
    crate::registry::eviction::install(kube);
    install_kubelet_connect(kube, opts)?;
    let [authn, authz] = REVIEW_GROUPS;
    let authn_reviews = reviews::authentication_v1(config.authentication.clone());
    install_virtual(kube, authn, authn_reviews, enabled);
    let authz_reviews = reviews::authorization_v1(config.authorization.clone());
    install_virtual(kube, authz, authz_reviews, enabled);
    authentication::install(kube, authn_setup, enabled, chain.informers);
    Ok(schemas)
}

/// The post-start hooks and controllers of the built-in resources.
fn install_controllers(
    kube: &mut GenericApiServer,
    chain: &ChainConfig,
    authn_setup: &AuthenticationSetup,
    allocator: &Arc<ServiceAllocator>,
    extensions: &CustomResourceDefinitions,
) {
    let (config, opts, informers) = (chain.generic, chain.opts, chain.informers);
    bootstrap::install_hooks(kube);
    super::kubernetes_service::install(kube, opts, chain.factory);
    add_informer_sources(informers, kube.stores());
    kube.start_informers(informers.clone());
    bootstrap::install_identity_leases(kube, informers);
    let ranges = &opts.service_ip_ranges;
    let cidrs: Vec<_> = std::iter::once(ranges.primary)
        .chain(ranges.secondary)
        .collect();
    defaultservicecidr::install(kube, informers, &cidrs);
    ip_repair::install(kube, informers, allocator.clone());
    let shared_storage = matches!(opts.storage, StorageBackend::Etcd { .. });
    let manager = ControllerManager::install(kube, shared_storage);
    super::service_accounts::install(kube, informers, &manager);
    super::token_controller::install(kube, informers, authn_setup, &manager);
    let root_ca = authn_setup.root_ca.clone();
    super::root_ca_publisher::install(kube, informers, root_ca, &manager);
    super::namespaces::install(kube, informers, &manager);
    let (crd_server, custom_resources) =
        (&extensions.generic_api_server, &extensions.custom_resources);
    crate::controller::garbagecollector::install(
        kube,
        crd_server,
        informers,
        custom_resources,
        &manager,
    );
    crate::controller::resourcequota::install(kube, informers, &manager);
    super::flowcontrol::install(kube, informers, config.flow_control.clone());
    install_debug_routes(kube, opts);
    let front_proxy_ca = authn_setup.front_proxy_ca.clone();
    let client_ca = authn_setup.client_ca.clone();
    let trust = bootstrap::required_authentication_info(opts, client_ca, front_proxy_ca);
    clusterauthenticationtrust::install(kube, trust);
    if opts
        .feature_gates
        .get("WatchCacheInitializationPostStartHook")
        != Some(&false)
    {
        kube.add_storage_readiness_hook(storage_initialization_timeout(opts));
    }
    bootstrap::install_legacy_token_tracking(kube);
    // Upstream bootstraps the RBAC policy whatever the authorization modes.
    let rbac = super::authorization::rbac(&config.authorization);
    rbac_bootstrap::install(kube, informers, rbac.as_ref(), &manager);
    super::authorization::install(kube, &config.authorization, &config.metrics, informers);
}

/// `--storage-initialization-timeout`: how long `storage-readiness` waits.
fn storage_initialization_timeout(opts: &CompletedOptions) -> std::time::Duration {
    opts.options
        .flags
        .duration("storage-initialization-timeout")
        .map(|d| d.to_std())
        .unwrap_or(std::time::Duration::from_secs(60))
}

/// Groups served by virtual (review) resources rather than stores.
pub(super) const REVIEW_GROUPS: [(&str, &str); 2] = [
    ("authentication.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"),
];

/// The resources of one group version that `--runtime-config` leaves
/// enabled, and what OpenAPI needs of them.
pub(super) fn enabled_resources(
    mut builtins: Vec<Builtin>,
    enabled: &ApiEnablement,
) -> (Vec<Builtin>, Vec<ResourceSchema>) {
    builtins.retain(|b| enabled.resource_enabled(&b.info.group, &b.info.version, &b.info.resource));
    let schemas = builtins
        .iter()
        .map(|b| ResourceSchema {
            info: b.info.clone(),
            schema: b.schema,
            returns_deleted: b.strategies.return_deleted_object,
        })
        .collect();
    (builtins, schemas)
}

/// Serves one group version's resources that `--runtime-config` leaves
/// enabled; returns what OpenAPI needs of them.
pub(super) fn install(
    server: &mut GenericApiServer,
    factory: &StorageFactory,
    builtins: Vec<Builtin>,
    enabled: &ApiEnablement,
) -> Vec<ResourceSchema> {
    let (builtins, schemas) = enabled_resources(builtins, enabled);
    let Some(first) = builtins.first() else {
        return Vec::new();
    };
    let (group, version) = (first.info.group.clone(), first.info.version.clone());
    let stores = builtins.into_iter().map(|b| factory.store(b)).collect();
    server.install_group_version(&group, &version, stores, Vec::new());
    schemas
}

/// `/debug/flags` with profiling on (upstream's generic server) and
/// `/logs` with `--enable-logs-handler` (upstream's controlplane).
fn install_debug_routes(kube: &mut GenericApiServer, opts: &CompletedOptions) {
    let flags = &opts.options.flags;
    if flags.bool("profiling").unwrap_or(true) {
        apiserver::server::routes::flags::install(kube);
    }
    if flags.bool("enable-logs-handler").unwrap_or(false) {
        let dir = std::path::Path::new(apiserver::server::routes::logs::LOG_DIR);
        apiserver::server::routes::logs::install(kube, dir);
    }
}

/// Serves a review group's resources that `--runtime-config` leaves enabled.
fn install_virtual(
    server: &mut GenericApiServer,
    (group, version): (&str, &str),
    mut virtuals: Vec<VirtualResource>,
    enabled: &ApiEnablement,
) {
    virtuals.retain(|v| enabled.resource_enabled(group, version, &v.info.resource));
    if !virtuals.is_empty() {
        server.install_group_version(group, version, Vec::new(), virtuals);
    }
}

/// Serves the subresources that reach kubelets (`pods/log`, `pods/exec`,
/// `nodes/proxy`, …) with the `--kubelet-*` settings.
fn install_kubelet_connect(
    kube: &mut GenericApiServer,
    opts: &CompletedOptions,
) -> Result<(), ChainError> {
    use crate::registry::kubelet_connect::{self, client::KubeletClient};
    let client = KubeletClient::new(&crate::options::KubeletOptions::from_flags(
        &opts.options.flags,
    ))?;
    let gate = opts
        .feature_gates
        .get("AuthorizePodWebsocketUpgradeCreatePermission");
    kubelet_connect::install(kube, client, gate == Some(&true));
    Ok(())
}

/// Lets `informers` follow `stores` (upstream's versioned informers over
/// the loopback client).
pub(super) fn add_informer_sources(
    informers: &SharedInformerFactory,
    stores: impl IntoIterator<Item = Arc<Store>>,
) {
    for store in stores {
        let (group, resource) = (store.info.group.clone(), store.info.resource.clone());
        informers.add_source(&group, &resource, store);
    }
}
