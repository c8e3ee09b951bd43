//! The aggregator's configuration and server (upstream's
//! `CreateAggregatorConfig` and `CreateAggregatorServer`,
//! `pkg/controlplane/apiserver/aggregator.go`): the proxy client
//! certificate and routing flags, the APIService resource, the
//! autoregistration of the delegates' group versions with upstream's
//! priorities, the CRD group versions' APIServices, and the availability
//! controllers.

use std::sync::Arc;

use apiserver::server::{CompletedConfig, GenericApiServer};
use client_go::informers::SharedInformerFactory;
use client_go::transport::ClientAuth;
use client_go::CancellationToken;
use kube_aggregator::apiserver::{proxy_client_auth, Aggregation, AggregatorConfig};
use kube_aggregator::controllers::autoregister::{api_service, AutoRegisterController};
use kube_aggregator::controllers::openapi::aggregator::Specs;

use super::bootstrap;
use super::instance::{add_informer_sources, install};
use super::server::{ChainConfig, ChainError};
use crate::controlplane::builtin;
use crate::controlplane::controller::crdregistration;
use crate::controlplane::openapi::ResourceSchema;
use crate::options::CompletedOptions;

/// The aggregator's proxy client certificate and key, when both are set.
fn proxy_client(opts: &CompletedOptions) -> Result<Option<ClientAuth>, ChainError> {
    let flags = &opts.options.flags;
    let paths = ["proxy-client-cert-file", "proxy-client-key-file"].map(|f| flags.path(f));
    let e = |m: String| ChainError::ProxyClient(m);
    match paths {
        [Ok(None), Ok(None)] => Ok(None),
        [Ok(Some(cert)), Ok(Some(key))] => proxy_client_auth(&cert, &key).map(Some).map_err(e),
        [Ok(_), Ok(_)] => Err(e("both must be set, or neither".into())),
        [Err(x), _] | [_, Err(x)] => Err(e(x.to_string())),
    }
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

/// Upstream's `kube-apiserver-autoregistration` hook: the APIServices of
/// the built-in group versions synced once, the CRD registration
/// controller, and once it has handled every CRD the autoregistration
/// controller; the hook ends when the built-in ones are in.
fn install_autoregistration(
    aggregator: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    group_versions: Vec<(String, String)>,
) {
    let group = "apiregistration.k8s.io";
    let (Some(store), Some(api_services)) = (
        aggregator.store(group, "v1", "apiservices"),
        informers.informer_for(group, "apiservices"),
    ) else {
        return;
    };
    let crds = informers.informer_for("apiextensions.k8s.io", "customresourcedefinitions");
    let controller = AutoRegisterController::new(store, &api_services);
    for (group, version) in group_versions {
        let priorities = bootstrap::group_priority(&group, &version);
        controller.add_api_service_to_sync_on_start(api_service(&group, &version, priorities));
    }
    aggregator.add_post_start_hook(
        "kube-apiserver-autoregistration",
        Arc::new(move |ctx| {
            let initial = CancellationToken::new();
            let (controller, api_services) = (controller.clone(), api_services.clone());
            match &crds {
                Some(crds) => {
                    let run = crdregistration::run(
                        crds.clone(),
                        controller.clone(),
                        initial.clone(),
                        ctx.stop.clone(),
                    );
                    tokio::spawn(run);
                }
                None => initial.cancel(),
            }
            let running = controller.clone();
            tokio::spawn(async move {
                initial.cancelled().await;
                running.run(api_services, ctx.stop).await;
            });
            Box::pin(async move {
                controller.wait_for_on_start().await;
                Ok(())
            })
        }),
    );
}

/// The aggregator in front of `kube` (upstream's `CreateAggregatorServer`);
/// returns what OpenAPI needs of the APIService resource, and the remote
/// APIServices' documents (when the proxy is on).
pub fn create_aggregator_server(
    chain: &ChainConfig,
    kube: &GenericApiServer,
) -> Result<(GenericApiServer, Vec<ResourceSchema>, Specs), ChainError> {
    let (config, informers) = (chain.generic, chain.informers);
    let aggregation = aggregation(chain.opts, config, informers)?;
    let mut aggregator = match &aggregation {
        Some(a) => config.new_server("kube-aggregator", &a.delegate(kube)),
        None => config.new_server("kube-aggregator", kube),
    };
    let api_service = vec![builtin::api_service()];
    let schemas = install(&mut aggregator, chain.factory, api_service, chain.enabled);
    let group_versions = config.discovery.group_versions();
    add_informer_sources(informers, aggregator.stores());
    install_autoregistration(&mut aggregator, informers, group_versions);
    let remote_specs = aggregation.as_ref().map(Aggregation::openapi_specs);
    kube_aggregator::apiserver::install_controllers(aggregation, &mut aggregator, informers);
    Ok((aggregator, schemas, remote_specs.unwrap_or_default()))
}
