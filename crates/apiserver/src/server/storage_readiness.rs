//! The `storage-readiness` post-start hook (upstream's
//! `k8s.io/apiserver/pkg/server/storage_readiness_hook.go`, added by the
//! control plane while `WatchCacheInitializationPostStartHook` is on): the
//! hook, and so `/readyz`, waits until the storage of every store the
//! server serves is ready (each watch cache has its first list), checked
//! at once and then every 10 ms (upstream's every 100 ms: a start is
//! reported ready up to 90 ms sooner), for at most
//! `--storage-initialization-timeout`; past that it logs and finishes
//! anyway, as upstream's.

use std::sync::Arc;
use std::time::Duration;

use client_go::CancellationToken;
use tokio::time::Instant;

use super::GenericApiServer;
use crate::registry::store::Store;

/// The hook's name, and so its `/readyz` check's `poststarthook/storage-readiness`.
pub const STORAGE_READINESS_HOOK: &str = "storage-readiness";

/// How often the stores are checked: a check is one atomic load per store.
const POLL: Duration = Duration::from_millis(10);

impl GenericApiServer {
    /// Adds the `storage-readiness` hook over every store served so far.
    pub fn add_storage_readiness_hook(&mut self, timeout: Duration) {
        let stores = self.all_stores();
        self.add_post_start_hook(
            STORAGE_READINESS_HOOK,
            Arc::new(move |ctx| {
                let stores = stores.clone();
                Box::pin(async move {
                    wait_ready(&stores, timeout, &ctx.stop).await;
                    Ok(())
                })
            }),
        );
    }
}

/// The `group/resource` of the stores whose storage is not ready yet.
fn not_ready(stores: &[Arc<Store>]) -> Vec<String> {
    stores
        .iter()
        .filter(|s| !s.storage().is_ready())
        .map(|s| format!("{}/{}", s.info.group, s.info.resource))
        .collect()
}

/// Waits until every store's storage is ready, `timeout` passes or the
/// server stops.
async fn wait_ready(stores: &[Arc<Store>], timeout: Duration, stop: &CancellationToken) {
    let deadline = Instant::now() + timeout;
    loop {
        let pending = not_ready(stores);
        if pending.is_empty() {
            tracing::info!("Storage is ready for all registered resources");
            return;
        }
        tracing::debug!(?pending, "Storage is not ready");
        if Instant::now() >= deadline {
            tracing::warn!("Deadline exceeded while waiting for storage readiness... ignoring");
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL.min(deadline - Instant::now())) => {}
            _ = stop.cancelled() => return,
        }
    }
}
