//! The apiextensions server's configuration (upstream's
//! `CreateAPIExtensionsConfig`, `pkg/controlplane/apiserver/apiextensions.go`):
//! the shared generic config, the CRD resource from the built-in catalogue
//! with its store from the chain's storage factory, and custom resources'
//! stores over the same storage.

use apiextensions_apiserver::apiserver::customresource_handler::StoreFactory;
use apiextensions_apiserver::{Config, ExtraConfig};

use super::instance::enabled_resources;
use super::server::ChainConfig;
use crate::controlplane::builtin;
use crate::controlplane::openapi::ResourceSchema;

/// The apiextensions server's config, and what OpenAPI needs of the CRD
/// resource when `--runtime-config` leaves it enabled.
pub fn create_apiextensions_config<'a>(
    chain: &ChainConfig<'a>,
) -> (Config<'a>, Vec<ResourceSchema>) {
    let (crd, schemas) = enabled_resources(vec![builtin::crd()], chain.enabled);
    let factory = chain.factory;
    let extra = ExtraConfig {
        crd: crd.into_iter().next().map(|b| (b.info, b.strategies)),
        rest_options_getter: Box::new(|info, strategies| factory.store_for(info, strategies)),
        crd_rest_options: StoreFactory {
            kv: factory.kv.clone(),
            prefix: factory.prefix.clone(),
            watch_cache: factory.watch_cache,
            admission: Default::default(),
        },
        informers: chain.informers,
    };
    let config = Config {
        generic: chain.generic,
        extra,
    };
    (config, schemas)
}
