//! Periodic compaction of a [`Kv`]'s history (upstream's etcd3 `compact.go`).
//!
//! At every tick the compactor compacts to the revision it recorded at the
//! previous tick, so roughly one interval of history stays available for
//! watches and exact-revision lists. Several API servers sharing one KV
//! coordinate through a compare-and-swap on [`COMPACT_REV_KEY`]: only the one
//! whose view of that key is current compacts; the others adopt the new
//! state and try again next interval.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::task::JoinHandle;

use crate::error::Result;
use crate::kv::{Kv, TxnOp, TxnResponse};

/// The key the API servers sharing a KV use to take turns (upstream's name).
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// Upstream's `--etcd-compaction-interval` default.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(300);

/// Stops the compactor when dropped.
#[derive(Debug)]
pub struct CompactorHandle {
    task: Option<JoinHandle<()>>,
}

impl Drop for CompactorHandle {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Starts compacting `kv` every `interval` on the current Tokio runtime; a
/// zero interval disables compaction (the handle then does nothing).
pub fn start(kv: Arc<dyn Kv>, interval: Duration) -> CompactorHandle {
    if interval.is_zero() {
        return CompactorHandle { task: None };
    }
    let task = tokio::spawn(async move {
        let mut state = CompactState::default();
        loop {
            tokio::time::sleep(interval).await;
            if let Err(e) = state.tick(kv.as_ref()).await {
                tracing::warn!(error = %e, "compaction failed");
            }
        }
    });
    CompactorHandle { task: Some(task) }
}

/// What this compactor believes about the shared compaction lease.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CompactState {
    /// The mod revision of [`COMPACT_REV_KEY`] as last seen (0: absent).
    lease_revision: i64,
    /// The store revision recorded at the previous tick (0: none yet).
    recorded_revision: i64,
}

impl CompactState {
    /// One round of upstream's `compact`: claim the lease by rewriting the
    /// key; the winner compacts to the revision recorded last time.
    pub async fn tick(&mut self, kv: &dyn Kv) -> Result<()> {
        let value = Bytes::from(self.recorded_revision.to_string());
        match kv
            .txn(COMPACT_REV_KEY, self.lease_revision, TxnOp::Put(value))
            .await?
        {
            TxnResponse::Failed { current, revision } => {
                // Another server compacted (or we restarted): follow its clock.
                self.lease_revision = current.map_or(0, |kv| kv.mod_revision);
                self.recorded_revision = revision;
                Ok(())
            }
            TxnResponse::Succeeded { revision, .. } => {
                let target = std::mem::replace(&mut self.recorded_revision, revision);
                self.lease_revision = revision;
                // Nothing recorded yet on the first round: never compact at startup.
                if target > 0 {
                    kv.compact(target).await?;
                    tracing::debug!(revision = target, "compacted storage history");
                }
                Ok(())
            }
        }
    }
}
