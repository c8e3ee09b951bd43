//! Periodic compaction of a [`Kv`]'s history (upstream's etcd3 `compact.go`).
//!
//! At every tick the compactor compacts to the revision it recorded at the
//! previous tick, so roughly one interval of history stays available for
//! watches and exact-revision lists; nothing is compacted at startup.
//! Coordination between API servers sharing one etcd (upstream's
//! compare-and-swap on `compact_rev_key`) belongs to the etcd backend's
//! [`Kv::compact`], which skips a round another server already took.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::error::Result;
use crate::kv::Kv;

/// Upstream's `--etcd-compaction-interval` default.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(300);

/// Stops the compactor when dropped.
#[derive(Debug)]
pub struct CompactorHandle {
    task: Option<JoinHandle<()>>,
}

impl CompactorHandle {
    /// Whether a compaction task is running (false for a zero interval).
    pub fn is_running(&self) -> bool {
        self.task.as_ref().is_some_and(|t| !t.is_finished())
    }
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
        let mut compactor = Compactor::default();
        loop {
            tokio::time::sleep(interval).await;
            if let Err(e) = compactor.tick(kv.as_ref()).await {
                tracing::warn!(error = %e, "storage compaction failed");
            }
        }
    });
    CompactorHandle { task: Some(task) }
}

/// One compactor's memory between ticks.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Compactor {
    /// The store revision recorded at the previous tick (0: none yet).
    recorded: i64,
}

impl Compactor {
    /// One tick: compacts to the revision recorded last time (if it is not
    /// compacted already) and records the current revision for next time.
    /// Returns the revision compacted to, if any.
    pub async fn tick(&mut self, kv: &dyn Kv) -> Result<Option<i64>> {
        let current = kv.current_revision().await?;
        let target = std::mem::replace(&mut self.recorded, current);
        if target == 0 || target <= kv.compacted_revision().await? {
            return Ok(None);
        }
        kv.compact(target).await?;
        tracing::debug!(revision = target, "compacted storage history");
        Ok(Some(target))
    }
}
