//! `CreateServerChain`: the apiextensions server, the kube-apiserver and
//! the aggregator, each built from the generic server (Config → Complete →
//! New(delegate)) and chained by delegation: aggregator → kube-apiserver →
//! apiextensions-apiserver → 404.

use std::sync::Arc;
use std::time::Duration;

use apiserver::filters::authorization::AuthorizationMode;
use apiserver::server::{
    CompletedConfig, Config, DiscoveryRegistry, FnCheck, GenericApiServer, NotFoundDelegate,
};
use serde_json::json;
use storage::Kv;

use super::bootstrap;
use crate::controlplane::builtin::{self, Builtin};
use crate::controlplane::openapi::{self, ResourceSchema};
use crate::controlplane::reviews;
use crate::controlplane::StorageFactory;
use crate::options::CompletedOptions;
use crate::registry::services::ServiceAllocator;

#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    #[error(
        "--authorization-mode: unsupported mode {0:?} (built so far: AlwaysAllow, AlwaysDeny)"
    )]
    AuthorizationMode(String),
}

/// The generic configuration shared by the three servers.
pub fn generic_config(
    opts: &CompletedOptions,
    kv: Arc<dyn Kv>,
) -> Result<CompletedConfig, ChainError> {
    let o = &opts.options;
    let modes = opts
        .authorization_modes
        .iter()
        .map(|m| match m.as_str() {
            "AlwaysAllow" => Ok(AuthorizationMode::AlwaysAllow),
            "AlwaysDeny" => Ok(AuthorizationMode::AlwaysDeny),
            other => Err(ChainError::AuthorizationMode(other.to_owned())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let etcd_check = FnCheck::new("etcd", move || {
        let kv = kv.clone();
        Box::pin(async move { kv.health().await.map_err(|e| e.to_string()) })
    });
    let port = o.secure_serving.secure_port;
    Ok(Config {
        request_timeout: o.generic.request_timeout.to_std(),
        min_request_timeout: Duration::from_secs(o.generic.min_request_timeout.unsigned_abs()),
        max_requests_inflight: usize::try_from(o.generic.max_requests_inflight).unwrap_or(0),
        max_mutating_requests_inflight: usize::try_from(o.generic.max_mutating_requests_inflight)
            .unwrap_or(0),
        livez_grace_period: o.generic.livez_grace_period.to_std(),
        shutdown_delay: o.generic.shutdown_delay_duration.to_std(),
        external_address: format!("{}:{port}", opts.advertise_address),
        health_checks: vec![etcd_check],
        anonymous_auth: true,
        authorization_modes: modes,
        version: version_info(),
        discovery: DiscoveryRegistry::default(),
    }
    .complete())
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

/// Serves one group version's resources; returns what OpenAPI needs of them.
fn install(
    server: &mut GenericApiServer,
    factory: &StorageFactory,
    builtins: Vec<Builtin>,
) -> Vec<ResourceSchema> {
    let Some(first) = builtins.first() else {
        return Vec::new();
    };
    let (group, version) = (first.info.group.clone(), first.info.version.clone());
    let schemas = builtins
        .iter()
        .map(|b| ResourceSchema {
            info: b.info.clone(),
            schema: b.schema,
        })
        .collect();
    let stores = builtins.into_iter().map(|b| factory.store(b)).collect();
    server.install_group_version(&group, &version, stores, Vec::new());
    schemas
}

/// The built chain: its front server and what startup still has to do.
pub struct ServerChain {
    pub front: GenericApiServer,
    /// Services and their address allocator, repaired before serving.
    pub services: Option<Arc<apiserver::registry::Store>>,
    pub allocator: Arc<ServiceAllocator>,
}

/// Builds the chain and returns its front server (the aggregator).
pub fn create_server_chain(
    config: &CompletedConfig,
    factory: &StorageFactory,
    opts: &CompletedOptions,
) -> ServerChain {
    let allocator = ServiceAllocator::new(
        opts.service_ip_ranges.primary,
        opts.options.service_node_port_range,
        Some(opts.service_ip_ranges.api_server_service_ip),
    );
    let mut openapi_groups = Vec::new();
    let mut extensions = config.new_server("apiextensions-apiserver", &NotFoundDelegate);
    openapi_groups.push(install(&mut extensions, factory, vec![builtin::crd()]));

    let mut kube = config.new_server("kube-apiserver", &extensions);
    openapi_groups.push(install(
        &mut kube,
        factory,
        builtin::core_v1(allocator.clone()),
    ));
    for group in builtin::named_groups() {
        openapi_groups.push(install(&mut kube, factory, group));
    }
    kube.install_group_version(
        "authentication.k8s.io",
        "v1",
        Vec::new(),
        reviews::authentication_v1(),
    );
    kube.install_group_version(
        "authorization.k8s.io",
        "v1",
        Vec::new(),
        reviews::authorization_v1(config.authorization.clone()),
    );
    bootstrap::install_hooks(&mut kube, opts);

    let mut aggregator = config.new_server("kube-aggregator", &kube);
    openapi_groups.push(install(
        &mut aggregator,
        factory,
        vec![builtin::api_service()],
    ));
    bootstrap::install_autoregistration(&mut aggregator, config.discovery.clone());
    openapi::install(&mut aggregator, openapi_groups);
    let mut stores = extensions.stores();
    stores.extend(kube.stores());
    stores.extend(aggregator.stores());
    let poll = opts.options.etcd.count_metric_poll_period.to_std();
    bootstrap::install_object_counter(&mut aggregator, stores, config.metrics.clone(), poll);
    ServerChain {
        services: kube.store("", "v1", "services"),
        front: aggregator,
        allocator,
    }
}

/// Marks the addresses of every stored Service as used (upstream's
/// ClusterIP and NodePort repair), before the server takes requests.
pub async fn repair_service_addresses(
    chain: &ServerChain,
) -> Result<(), apimachinery::status::ApiError> {
    let Some(services) = &chain.services else {
        return Ok(());
    };
    let list = services.list(None, storage::ListOptions::default()).await?;
    for svc in &list.items {
        chain.allocator.mark_used(svc);
    }
    Ok(())
}
