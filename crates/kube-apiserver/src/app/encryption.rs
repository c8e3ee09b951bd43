//! Encryption at rest wired into the kube-apiserver (upstream's
//! `pkg/kubeapiserver/options` use of `encryptionconfig`): the
//! `--encryption-provider-config`, `--encryption-provider-config-automatic-reload`
//! flags and the `KMSv1` gate, and the built-in resources whose key roots the
//! configuration resolves against. Loading, reload, KMS health and metrics
//! are `apiserver::server::options::encryptionconfig`.

use std::sync::Arc;

use apiserver::server::options::encryptionconfig::{
    self, Encryption, EncryptionError, EncryptionOptions, LoadSettings,
};
use storage::Kv;

use crate::controlplane::builtin;
use crate::options::CompletedOptions;
use crate::registry::services::ServiceAllocator;

/// Built-in resources: group, resource and key root.
fn catalogue(opts: &CompletedOptions) -> Vec<(String, String, String)> {
    let alloc = ServiceAllocator::new(
        opts.service_ip_ranges.primary,
        opts.options.service_node_port_range,
        None,
    );
    std::iter::once(builtin::crd())
        .chain(std::iter::once(builtin::api_service()))
        .chain(builtin::core_v1(alloc))
        .chain(builtin::named_groups().into_iter().flatten())
        .map(|b| (b.info.group, b.info.resource, b.info.storage_root))
        .collect()
}

/// Wraps the backend when `--encryption-provider-config` is set; starts the
/// reload task when asked to.
pub async fn wrap(kv: Arc<dyn Kv>, opts: &CompletedOptions) -> Result<Encryption, EncryptionError> {
    let flags = &opts.options.flags;
    let Some(path) = flags.path("encryption-provider-config").ok().flatten() else {
        return Ok(Encryption {
            kv,
            health_check: None,
        });
    };
    let settings = LoadSettings {
        reload: flags
            .bool("encryption-provider-config-automatic-reload")
            .unwrap_or(false),
        kms_v1: opts.feature_gates.get("KMSv1") == Some(&true),
    };
    let options = EncryptionOptions {
        path,
        settings,
        catalogue: catalogue(opts),
        etcd_prefix: opts.options.etcd.prefix.clone(),
    };
    encryptionconfig::wrap(kv, options).await
}
