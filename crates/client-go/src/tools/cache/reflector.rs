//! The reflector (upstream's `tools/cache/reflector.go`): lists a
//! resource, then watches from the list's revision, feeding both into a
//! [`Sink`]. A watch that closes is reopened from the last revision seen;
//! one that fails (410 Expired included) or cannot be opened means a fresh
//! list. Attempts are spaced by [`Backoff`].

use std::sync::Arc;

use futures::StreamExt;
use storage::{Object, StorageError, StoredObject, WatchEvent};
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::listwatch::ListerWatcher;

/// Where a reflector delivers (upstream's `Store` it writes to).
pub(crate) trait Sink: Send + Sync {
    /// A complete list.
    fn replace(&self, objs: Vec<Object>);
    /// An object added or changed.
    fn upsert(&self, obj: Object);
    /// An object deleted, in its last state.
    fn delete(&self, obj: Object);
}

/// How a watch ended.
enum Ended {
    Stopped,
    /// Closed by the server: reopen from this revision.
    Closed(i64),
    /// Failed or expired: list again.
    Failed,
}

pub(crate) struct Reflector {
    lw: Arc<dyn ListerWatcher>,
}

fn revision_of(obj: &StoredObject) -> Option<i64> {
    obj.metadata_str("resourceVersion")?.parse().ok()
}

impl Reflector {
    pub(crate) fn new(lw: Arc<dyn ListerWatcher>) -> Self {
        Reflector { lw }
    }

    /// Lists and watches into `sink` until `stop`.
    pub(crate) async fn run(&self, sink: &dyn Sink, stop: &CancellationToken) {
        let mut backoff = Backoff::default();
        let mut resume = None;
        loop {
            let revision = match resume.take() {
                Some(revision) => Some(revision),
                None => self.list(sink).await,
            };
            if let Some(revision) = revision {
                match self.watch(revision, sink, stop).await {
                    Ended::Stopped => return,
                    Ended::Closed(revision) => resume = Some(revision),
                    Ended::Failed => {}
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
    }

    /// Replaces the sink's content; the list's revision, None on failure.
    async fn list(&self, sink: &dyn Sink) -> Option<i64> {
        match self.lw.list().await {
            Ok(list) => {
                sink.replace(list.items);
                Some(list.resource_version)
            }
            Err(e) => {
                tracing::warn!(error = %e.message, "reflector: list failed");
                None
            }
        }
    }

    async fn watch(&self, mut revision: i64, sink: &dyn Sink, stop: &CancellationToken) -> Ended {
        let mut events = match self.lw.watch(revision).await {
            Ok(events) => events,
            Err(e) => {
                tracing::debug!(error = %e.message, "reflector: watch failed");
                return Ended::Failed;
            }
        };
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return Ended::Stopped,
                event = events.next() => event,
            };
            let obj = match event {
                None => return Ended::Closed(revision),
                Some(WatchEvent::Bookmark(rv)) => {
                    revision = rv;
                    continue;
                }
                Some(WatchEvent::Error(e)) => {
                    let expired = matches!(e, StorageError::TooOldResourceVersion { .. });
                    tracing::debug!(error = %e, expired, "reflector: watch ended");
                    return Ended::Failed;
                }
                Some(WatchEvent::Added(obj) | WatchEvent::Modified(obj)) => {
                    sink.upsert(obj.clone());
                    obj
                }
                Some(WatchEvent::Deleted(obj)) => {
                    sink.delete(obj.clone());
                    obj
                }
            };
            revision = revision_of(&obj).unwrap_or(revision);
        }
    }
}
