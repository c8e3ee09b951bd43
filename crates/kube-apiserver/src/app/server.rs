//! `CreateServerChain` (upstream's `cmd/kube-apiserver/app/server.go`): the
//! three servers, each built from its own config (`apiextensions`,
//! `instance`, `aggregator`) on the shared generic config (`config`), and
//! chained by delegation: aggregator → kube-apiserver →
//! apiextensions-apiserver → 404.

use std::sync::Arc;

use apiextensions_apiserver::controller::openapi::CrdSpecs;
use apiserver::server::{CompletedConfig, GenericApiServer, NotFoundDelegate};
use client_go::informers::SharedInformerFactory;

use super::runtime_config::{ApiEnablement, RuntimeConfigError};
use super::{aggregator, apiextensions, authentication::AuthenticationSetup, bootstrap, instance};
use crate::controlplane::builtin;
use crate::controlplane::openapi;
use crate::controlplane::StorageFactory;
use crate::options::CompletedOptions;
use crate::registry::services::ipallocator::controller as ip_repair;
use crate::registry::services::ServiceAllocator;

/// The group versions of the apiextensions server and of the aggregator.
const CRD_GROUP_VERSION: (&str, &str) = ("apiextensions.k8s.io", "v1");
const API_SERVICE_GROUP_VERSION: (&str, &str) = ("apiregistration.k8s.io", "v1");

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

/// The built chain: its front server and what startup still has to do.
pub struct ServerChain {
    pub front: GenericApiServer,
    /// Services, IPAddresses and the address allocator, repaired before
    /// serving.
    pub services: Option<Arc<apiserver::registry::store::Store>>,
    pub ip_addresses: Option<Arc<apiserver::registry::store::Store>>,
    pub allocator: Arc<ServiceAllocator>,
}

/// What building each server of the chain needs: the shared generic
/// config, the storage factory, the options, the group versions
/// `--runtime-config` leaves enabled and the shared informers.
pub struct ChainConfig<'a> {
    pub generic: &'a CompletedConfig,
    pub factory: &'a StorageFactory,
    pub opts: &'a CompletedOptions,
    pub enabled: &'a ApiEnablement,
    pub informers: &'a Arc<SharedInformerFactory>,
}

/// Builds the chain and returns its front server (upstream's
/// `CreateServerChain`): the apiextensions server, the kube-apiserver
/// delegating to it and the aggregator in front, each from its own config;
/// then what joins them: OpenAPI over all three, the admission chain of
/// every store (custom resources' too), and the object counts.
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
    let served = instance::served_group_versions(
        &builtin::core_v1(allocator.clone()),
        &builtin::named_groups(),
    );
    let served = served
        .iter()
        .map(|(g, v)| (g.as_str(), v.as_str()))
        .chain([CRD_GROUP_VERSION, API_SERVICE_GROUP_VERSION]);
    let enabled = ApiEnablement::resolve(&opts.runtime_config, served)?;
    let informers = SharedInformerFactory::new(None);
    let chain = ChainConfig {
        generic: config,
        factory,
        opts,
        enabled: &enabled,
        informers: &informers,
    };

    let (extensions_config, crd_schemas) = apiextensions::create_apiextensions_config(&chain);
    let extensions = extensions_config.new_server(&NotFoundDelegate);
    let (kube, kube_schemas) =
        instance::create_kube_api_server(&chain, authn_setup, &allocator, &extensions)?;
    let custom_resources = &extensions.custom_resources;
    let (mut aggregator, api_service_schemas, remote_specs) =
        aggregator::create_aggregator_server(&chain, &kube)?;

    let mut openapi_groups = vec![crd_schemas];
    openapi_groups.extend(kube_schemas);
    openapi_groups.push(api_service_schemas);
    let crds = CrdSpecs(custom_resources.snapshots());
    let specs = Arc::new((crds, remote_specs));
    openapi::install(&mut aggregator, openapi_groups, specs);
    let servers = [&extensions.generic_api_server, &kube, &aggregator];
    let stores: Vec<_> = servers.iter().flat_map(|s| s.stores()).collect();
    let admitted: Vec<_> = servers.iter().flat_map(|s| s.all_stores()).collect();
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
