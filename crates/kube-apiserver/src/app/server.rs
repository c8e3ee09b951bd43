//! `CreateServerChain`: the apiextensions server, the kube-apiserver and
//! the aggregator, each built from the generic server (Config → Complete →
//! New(delegate)) and chained by delegation: aggregator → kube-apiserver →
//! apiextensions-apiserver → 404.

use std::sync::Arc;
use std::time::Duration;

use apiserver::authentication::Authentication;
use apiserver::endpoints::virtual_create::VirtualResource;
use apiserver::registry::store::Store;
use apiserver::server::{
    readyz_only, CompletedConfig, Config, DiscoveryRegistry, FnCheck, GenericApiServer,
    NotFoundDelegate,
};
use client_go::informers::SharedInformerFactory;
use serde_json::json;
use storage::Kv;

use super::authentication::{self, AuthenticationSetup};
use super::runtime_config::{ApiEnablement, RuntimeConfigError};
use super::{bootstrap, rbac_bootstrap};
use crate::controller_manager::ControllerManager;
use crate::controlplane::builtin::{self, Builtin};
use crate::controlplane::controller::defaultservicecidr;
use crate::controlplane::openapi::{self, ResourceSchema};
use crate::controlplane::StorageFactory;
use crate::controlplane::{autoscaling_v1, events_v1, reviews};
use crate::options::{CompletedOptions, StorageBackend};
use crate::registry::services::ipallocator::controller as ip_repair;
use crate::registry::services::ServiceAllocator;
use apiextensions_apiserver::controller::openapi::CrdSpecs;
use client_go::transport::ClientAuth;
use kube_aggregator::apiserver::{Aggregation, AggregatorConfig};
use kube_aggregator::controllers::autoregister;

#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error(transparent)]
    Authorization(#[from] super::authorization::AuthorizationError),
    #[error(transparent)]
    Audit(#[from] super::audit::AuditError),
    #[error(transparent)]
    Config(#[from] apiserver::server::config::ConfigError),
    #[error(transparent)]
    RuntimeConfig(#[from] RuntimeConfigError),
    #[error(transparent)]
    Admission(#[from] crate::admission::ConfigError),
    #[error(transparent)]
    Kubelet(#[from] crate::registry::kubelet_connect::client::KubeletClientError),
    #[error("--proxy-client-cert-file/--proxy-client-key-file: {0}")]
    ProxyClient(String),
}

/// The aggregator's proxy client certificate and key, when both are set.
fn proxy_client(opts: &CompletedOptions) -> Result<Option<ClientAuth>, ChainError> {
    let flags = &opts.options.flags;
    let paths = ["proxy-client-cert-file", "proxy-client-key-file"].map(|f| flags.path(f));
    let e = |m: String| ChainError::ProxyClient(m);
    let (cert, key) = match paths {
        [Ok(None), Ok(None)] => return Ok(None),
        [Ok(Some(cert)), Ok(Some(key))] => (cert, key),
        [Ok(_), Ok(_)] => return Err(e("both must be set, or neither".into())),
        [Err(x), _] | [_, Err(x)] => return Err(e(x.to_string())),
    };
    let read =
        |p: &std::path::Path| std::fs::read(p).map_err(|x| e(format!("{}: {x}", p.display())));
    let certs: Vec<_> = rustls_pemfile::certs(&mut read(&cert)?.as_slice())
        .filter_map(Result::ok)
        .collect();
    let key = rustls_pemfile::private_key(&mut read(&key)?.as_slice())
        .ok()
        .flatten()
        .ok_or_else(|| e(format!("{}: no PEM private key", key.display())))?;
    if certs.is_empty() {
        return Err(e(format!("{}: no PEM certificate", cert.display())));
    }
    Ok(Some((certs, key)))
}

/// The aggregator's proxy and controllers over the kube-apiserver's
/// Services and EndpointSlices (None when `--runtime-config` disables them).
fn aggregation(
    opts: &CompletedOptions,
    config: &CompletedConfig,
    informers: &SharedInformerFactory,
) -> Result<Option<Aggregation>, ChainError> {
    let flags = &opts.options.flags;
    let aggregator_config = AggregatorConfig {
        proxy_client: proxy_client(opts)?,
        enable_aggregator_routing: flags.bool("enable-aggregator-routing").unwrap_or(false),
        reject_forwarding_redirects: flags
            .bool("aggregator-reject-forwarding-redirect")
            .unwrap_or(true),
        remote_request_header_uid: opts.feature_gates.get("RemoteRequestHeaderUID") != Some(&false),
    };
    let discovery = config.discovery.clone();
    Ok(Aggregation::new(aggregator_config, discovery, informers))
}

/// Groups served by virtual (review) resources rather than stores.
const REVIEW_GROUPS: [(&str, &str); 2] = [
    ("authentication.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"),
];

/// host:port clients should use (published by `/api`, and the default
/// host of the service-account JWKS URI).
pub fn external_address(opts: &CompletedOptions) -> String {
    let port = opts.options.secure_serving.secure_port;
    format!("{}:{port}", opts.advertise_address)
}

/// The generic configuration shared by the three servers.
pub fn generic_config(
    opts: &CompletedOptions,
    kv: Arc<dyn Kv>,
    authentication: Arc<Authentication>,
) -> Result<CompletedConfig, ChainError> {
    let o = &opts.options;
    let modes = super::authorization::modes(opts)?;
    let storage = kv.clone();
    let etcd_check = FnCheck::new("etcd", move || {
        let kv = storage.clone();
        Box::pin(async move { kv.health().await.map_err(|e| e.to_string()) })
    });
    // Readiness asks the same question within `--etcd-readycheck-timeout`.
    let ready_timeout = o
        .flags
        .duration("etcd-readycheck-timeout")
        .map(|d| d.to_std())
        .unwrap_or(Duration::from_secs(2));
    let etcd_readiness = readyz_only(FnCheck::new("etcd-readiness", move || {
        let kv = kv.clone();
        Box::pin(async move {
            match tokio::time::timeout(ready_timeout, kv.health()).await {
                Ok(result) => result.map_err(|e| e.to_string()),
                Err(_) => Err("timed out".to_owned()),
            }
        })
    }));
    Ok(Config {
        request_timeout: o.generic.request_timeout.to_std(),
        min_request_timeout: Duration::from_secs(o.generic.min_request_timeout.unsigned_abs()),
        max_requests_inflight: usize::try_from(o.generic.max_requests_inflight).unwrap_or(0),
        max_mutating_requests_inflight: usize::try_from(o.generic.max_mutating_requests_inflight)
            .unwrap_or(0),
        enable_priority_and_fairness: o.flags.bool("enable-priority-and-fairness").unwrap_or(true),
        livez_grace_period: o.generic.livez_grace_period.to_std(),
        shutdown_delay: o.generic.shutdown_delay_duration.to_std(),
        external_address: external_address(opts),
        health_checks: vec![etcd_check, etcd_readiness],
        authentication,
        authorization_modes: modes,
        version: version_info(),
        discovery: DiscoveryRegistry::default(),
        cors_allowed_origins: o.generic.cors_allowed_origins.clone(),
        hsts_directives: o.generic.strict_transport_security_directives.clone(),
        watch_list: opts.feature_gates.get("WatchList") != Some(&false),
        response_compression: opts.feature_gates.get("APIResponseCompression") != Some(&false),
        enable_profiling: o.flags.bool("profiling").unwrap_or(true),
        debug_socket_path: o.flags.path("debug-socket-path").ok().flatten(),
        audit: super::audit::auditor(opts)?,
    }
    .complete()?)
}

/// The `/version` document.
pub fn version_info() -> serde_json::Value {
    json!({
        "major": "1",
        "minor": "37",
        "emulationMajor": "1",
        "emulationMinor": "37",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "36",
        "gitVersion": "v1.37.0",
        "gitCommit": env!("CARGO_PKG_VERSION"),
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The resources of one group version that `--runtime-config` leaves
/// enabled, and what OpenAPI needs of them.
fn enabled_resources(
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
fn install(
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

/// The built chain: its front server and what startup still has to do.
pub struct ServerChain {
    pub front: GenericApiServer,
    /// Services, IPAddresses and the address allocator, repaired before
    /// serving.
    pub services: Option<Arc<apiserver::registry::store::Store>>,
    pub ip_addresses: Option<Arc<apiserver::registry::store::Store>>,
    pub allocator: Arc<ServiceAllocator>,
}

/// Serves a review group's resources that `--runtime-config` leaves enabled.
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
fn add_informer_sources(
    informers: &SharedInformerFactory,
    stores: impl IntoIterator<Item = Arc<Store>>,
) {
    for store in stores {
        let (group, resource) = (store.info.group.clone(), store.info.resource.clone());
        informers.add_source(&group, &resource, store);
    }
}

/// Builds the chain and returns its front server (the aggregator).
pub fn create_server_chain(
    config: &CompletedConfig,
    factory: &StorageFactory,
    opts: &CompletedOptions,
    authn_setup: &AuthenticationSetup,
) -> Result<ServerChain, ChainError> {
    let allow_privileged = opts.options.flags.bool("allow-privileged");
    crate::registry::validation::pod::set_allow_privileged(allow_privileged.unwrap_or(false));
    let allocator = ServiceAllocator::new(
        opts.service_ip_ranges.primary,
        opts.options.service_node_port_range,
        Some(opts.service_ip_ranges.api_server_service_ip),
    );
    let (crd, core, named, api_service) = (
        vec![builtin::crd()],
        builtin::core_v1(allocator.clone()),
        builtin::named_groups(),
        vec![builtin::api_service()],
    );
    let served = [&crd, &core, &api_service]
        .into_iter()
        .chain(&named)
        .filter_map(|group| group.first())
        .map(|b| (b.info.group.as_str(), b.info.version.as_str()))
        .chain(REVIEW_GROUPS)
        .chain([autoscaling_v1::GROUP_VERSION, events_v1::GROUP_VERSION]);
    let enabled = ApiEnablement::resolve(&opts.runtime_config, served)?;
    let mut openapi_groups = Vec::new();
    let informers = SharedInformerFactory::new(None);
    let (crd, crd_schemas) = enabled_resources(crd, &enabled);
    openapi_groups.push(crd_schemas);
    let apiextensions_apiserver::CustomResourceDefinitions {
        generic_api_server: extensions,
        custom_resources,
    } = apiextensions_apiserver::Config {
        generic: config,
        extra: apiextensions_apiserver::ExtraConfig {
            crd: crd.into_iter().next().map(|b| (b.info, b.strategies)),
            rest_options_getter: &|info, strategies| factory.store_for(info, strategies),
            crd_rest_options:
                apiextensions_apiserver::apiserver::customresource_handler::StoreFactory {
                    kv: factory.kv.clone(),
                    prefix: factory.prefix.clone(),
                    watch_cache: factory.watch_cache,
                    admission: Default::default(),
                },
            informers: &informers,
        },
    }
    .new_server(&NotFoundDelegate);

    let mut kube = config.new_server("kube-apiserver", &extensions);
    openapi_groups.push(install(&mut kube, factory, core, &enabled));
    for group in named {
        openapi_groups.push(install(&mut kube, factory, group, &enabled));
    }
    let (group, version) = autoscaling_v1::GROUP_VERSION;
    if enabled.resource_enabled(group, version, "horizontalpodautoscalers") {
        openapi_groups.push(autoscaling_v1::install(&mut kube, &factory.prefix));
    }
    let (group, version) = events_v1::GROUP_VERSION;
    if enabled.resource_enabled(group, version, "events") {
        openapi_groups.push(events_v1::install(&mut kube, &factory.prefix));
    }
    if enabled.resource_enabled("", "v1", "componentstatuses") {
        let etcd = matches!(opts.storage, StorageBackend::Etcd { .. }).then(|| factory.kv.clone());
        let statuses = crate::registry::componentstatus::resource(etcd);
        kube.install_computed_resource("", "v1", statuses);
    }
    crate::registry::binding::install(&mut kube);
    crate::registry::eviction::install(&mut kube);
    install_kubelet_connect(&mut kube, opts)?;
    let [authn, authz] = REVIEW_GROUPS;
    install_virtual(
        &mut kube,
        authn,
        reviews::authentication_v1(config.authentication.clone()),
        &enabled,
    );
    let authz_reviews = reviews::authorization_v1(config.authorization.clone());
    install_virtual(&mut kube, authz, authz_reviews, &enabled);
    authentication::install(&mut kube, authn_setup, &enabled, &informers);
    bootstrap::install_hooks(&mut kube);
    super::kubernetes_service::install(&mut kube, opts, factory);
    add_informer_sources(&informers, kube.stores());
    kube.start_informers(informers.clone());
    bootstrap::install_identity_leases(&mut kube, &informers);
    let ranges = &opts.service_ip_ranges;
    let cidrs: Vec<_> = std::iter::once(ranges.primary)
        .chain(ranges.secondary)
        .collect();
    defaultservicecidr::install(&mut kube, &informers, &cidrs);
    ip_repair::install(&mut kube, &informers, allocator.clone());
    let shared_storage = matches!(opts.storage, StorageBackend::Etcd { .. });
    let manager = ControllerManager::install(&mut kube, shared_storage);
    super::service_accounts::install(&mut kube, &informers, &manager);
    super::token_controller::install(&mut kube, &informers, authn_setup, &manager);
    let root_ca = authn_setup.root_ca.clone();
    super::root_ca_publisher::install(&mut kube, &informers, root_ca, &manager);
    super::namespaces::install(&mut kube, &informers, &manager);
    crate::controller::garbagecollector::install(
        &mut kube,
        &extensions,
        &informers,
        &custom_resources,
        &manager,
    );
    crate::controller::resourcequota::install(&mut kube, &informers, &manager);
    super::flowcontrol::install(&mut kube, &informers, config.flow_control.clone());
    install_debug_routes(&mut kube, opts);
    let front_proxy_ca = authn_setup.front_proxy_ca.clone();
    let request_header = bootstrap::RequestHeaderInfo::from_options(opts, front_proxy_ca);
    let client_ca = authn_setup.client_ca.clone();
    bootstrap::install_authentication_info(&mut kube, client_ca, request_header);
    bootstrap::install_legacy_token_tracking(&mut kube);
    // Upstream bootstraps the RBAC policy whatever the authorization modes.
    let rbac = super::authorization::rbac(&config.authorization);
    rbac_bootstrap::install(&mut kube, &informers, rbac.as_ref(), &manager);
    let authz = &config.authorization;
    super::authorization::install(&mut kube, authz, &config.metrics, &informers);

    let aggregation = aggregation(opts, config, &informers)?;
    let mut aggregator = match &aggregation {
        Some(a) => config.new_server("kube-aggregator", &a.delegate(&kube)),
        None => config.new_server("kube-aggregator", &kube),
    };
    openapi_groups.push(install(&mut aggregator, factory, api_service, &enabled));
    if let Some(api_services) = aggregator.store("apiregistration.k8s.io", "v1", "apiservices") {
        custom_resources.register_api_services(api_services);
    }
    let discovery = config.discovery.clone();
    autoregister::install(&mut aggregator, discovery, bootstrap::group_priority);
    add_informer_sources(&informers, aggregator.stores());
    let remote_specs = aggregation.as_ref().map(Aggregation::openapi_specs);
    match aggregation {
        Some(a) => a.install(&mut aggregator, &informers),
        None => {
            kube_aggregator::controllers::status::local::install(&mut aggregator, &informers);
        }
    }
    let crds = CrdSpecs(custom_resources.snapshots());
    let specs = Arc::new((crds, remote_specs.unwrap_or_default()));
    openapi::install(&mut aggregator, openapi_groups, specs);
    let mut stores = extensions.stores();
    stores.extend(kube.stores());
    stores.extend(aggregator.stores());
    let mut admitted = extensions.all_stores();
    admitted.extend(kube.all_stores());
    admitted.extend(aggregator.all_stores());
    super::admission::install(&admitted, &informers, opts, &config.authorization)?;
    if let Some(chain) = stores.first().and_then(|s| s.admission()) {
        custom_resources.set_admission(chain);
    }
    let poll = opts.options.etcd.count_metric_poll_period.to_std();
    bootstrap::install_object_counter(&mut aggregator, stores, config.metrics.clone(), poll);
    Ok(ServerChain {
        services: kube.store("", "v1", "services"),
        ip_addresses: kube.store("networking.k8s.io", "v1", "ipaddresses"),
        front: aggregator,
        allocator,
    })
}

/// Marks the addresses of every stored Service and IPAddress as used
/// (upstream's ClusterIP and NodePort repair), before the server takes
/// requests.
pub async fn repair_service_addresses(
    chain: &ServerChain,
) -> Result<(), apimachinery::status::ApiError> {
    let Some(services) = &chain.services else {
        return Ok(());
    };
    let addresses = chain.ip_addresses.as_deref();
    ip_repair::repair(&chain.allocator, services, addresses).await
}
