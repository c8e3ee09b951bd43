//! KMS v2 plugin health (upstream's `kms-providers` health check in
//! `encryptionconfig`): probing the providers in force, starting them, and
//! waiting for new ones on reload.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;

use crate::server::HealthCheck;

/// The KMS providers of the configuration in force (swapped on reload).
#[derive(Default)]
pub(super) struct KmsProviders(RwLock<Vec<Arc<kms::Provider>>>);

impl KmsProviders {
    pub(super) fn current(&self) -> Vec<Arc<kms::Provider>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(super) fn set(&self, providers: Vec<Arc<kms::Provider>>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = providers;
    }
}

/// Probes every KMS provider in turn; failures are named `kms-provider-<i>`.
pub(super) async fn check_all(providers: &[Arc<kms::Provider>]) -> Result<(), String> {
    let mut errs = Vec::new();
    for (i, p) in providers.iter().enumerate() {
        if let Err(e) = p.check().await {
            errs.push(format!("kms-provider-{i}: {e}"));
        }
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// Upstream's `kms-providers` check: one for every KMS v2 provider, run by
/// `/healthz` and `/readyz` but not `/livez`.
pub(super) struct KmsHealth(pub(super) Arc<KmsProviders>);

impl HealthCheck for KmsHealth {
    fn name(&self) -> &str {
        "kms-providers"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        let providers = self.0.current();
        Box::pin(async move { check_all(&providers).await })
    }

    fn livez(&self) -> bool {
        false
    }
}

/// Primes each provider's DEK and starts its polling; an unreachable
/// plugin does not stop startup (it may come up later), as upstream.
pub(super) async fn start_kms(providers: &[Arc<kms::Provider>]) {
    for p in providers {
        if let Err(e) = p.start().await {
            tracing::error!(provider = p.name(), error = %e, "kms plugin failed health check probe");
        }
    }
}

/// The least time new KMS plugins get to become healthy on reload.
const MIN_KMS_RELOAD_WAIT: Duration = Duration::from_secs(10);

/// Waits (polling) until every new KMS provider is healthy, for at most
/// twice their timeouts and at least [`MIN_KMS_RELOAD_WAIT`], as upstream.
pub(super) async fn wait_healthy(
    providers: &[Arc<kms::Provider>],
    timeouts: Duration,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + (2 * timeouts).max(MIN_KMS_RELOAD_WAIT);
    loop {
        let result = check_all(providers).await;
        if result.is_ok() || tokio::time::Instant::now() >= deadline {
            return result;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
