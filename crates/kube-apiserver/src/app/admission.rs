//! Admission setup (upstream's `AdmissionOptions.ApplyTo`): reads
//! `--admission-control-config-file`, builds the chain of the enabled
//! plugins over the server's stores, and makes every store run it.

use std::sync::Arc;

use apiserver::filters::authorization::Authorization;
use apiserver::registry::store::Store;
use client_go::informers::SharedInformerFactory;

use crate::admission::{self, AdmissionConfig, ConfigError, Setup};
use crate::options::{AdmissionOptions, CompletedOptions};
use apiserver::admission::initializer::Stores;

/// Installs the admission chain on `stores` (all stores of the chain's
/// servers, which plugins also read). Returns the names of the plugins that
/// run, in order.
pub fn install(
    stores: &[Arc<Store>],
    informers: &Arc<SharedInformerFactory>,
    opts: &CompletedOptions,
    authorization: &Arc<Authorization>,
) -> Result<Vec<&'static str>, ConfigError> {
    let options = AdmissionOptions::from_flags(&opts.options.flags);
    let config = AdmissionConfig::load(options.config_file.as_deref())?;
    let lookup = Stores::new(stores.iter().cloned()).with_informers(informers.clone());
    let chain = Arc::new(admission::chain(&Setup {
        options: &options,
        config: &config,
        stores: &lookup,
        authorization,
        rbac: super::authorization::rbac(authorization),
        feature_gates: &opts.feature_gates,
    })?);
    for store in stores {
        store.set_admission(chain.clone());
    }
    let names = chain.names();
    tracing::info!(plugins = ?names, "admission chain");
    Ok(names)
}
