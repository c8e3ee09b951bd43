//! Watch streams.
//!
//! A watcher subscribes to the writer's broadcast of committed event batches
//! before it looks at the current revision, so nothing committed after that
//! point can be missed. History from `start_revision` up to that revision is
//! replayed from the change log on disk, in chunks; then live batches are
//! delivered. `next_revision` (every revision below it has been handled)
//! drops the live events a replay already covered, so there are neither
//! gaps nor duplicates.
//!
//! A watcher that falls behind the broadcast buffer does not hold writers
//! up: it is told how much it lost, and it re-reads the missed revisions
//! from the change log before taking live batches again. Only if those
//! revisions have been compacted meanwhile does its stream end, with
//! `TooOldResourceVersion`, so the layer above re-lists.
//!
//! While writes go on elsewhere in the keyspace, a watcher whose own keys
//! are quiet reports `KvWatchItem::Progress` at most every
//! [`PROGRESS_INTERVAL`], so a watch cache learns it is current (what
//! upstream gets from etcd's progress notifications).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use storage::error::Result;
use storage::{KvEvent, KvWatchItem, KvWatchStream, StorageError};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::Instant;

use crate::read::{self, KeyFilter};
use crate::writer::EventBatch;
use crate::Shared;

/// Most revisions one replay read scans.
const REPLAY_CHUNK: usize = 1024;
/// Least time between two progress notifications of one watcher. It bounds
/// how long a consistent read from a watch cache waits for the cache to
/// learn it is current while other resources are written; a notification
/// costs the in-process consumer next to nothing.
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_millis(5);

pub(crate) struct Watcher {
    shared: Arc<Shared>,
    live: broadcast::Receiver<EventBatch>,
    filter: KeyFilter,
    /// Every revision below this one has been delivered or skipped.
    next_revision: i64,
    /// Revisions up to here must come from the change log.
    replay_until: i64,
    ready: VecDeque<KvEvent>,
    /// The newest revision the consumer has been told about (by an event
    /// or a progress notification).
    reported: i64,
    last_progress: Instant,
    done: bool,
}

impl Watcher {
    /// `live` must have been subscribed before this is called.
    pub fn new(
        shared: Arc<Shared>,
        live: broadcast::Receiver<EventBatch>,
        filter: KeyFilter,
        start_revision: i64,
    ) -> Self {
        let current = shared.current.load(Ordering::SeqCst);
        let next_revision = if start_revision <= 0 {
            current + 1
        } else {
            start_revision
        };
        Watcher {
            shared,
            live,
            filter,
            next_revision,
            replay_until: current,
            ready: VecDeque::new(),
            reported: next_revision - 1,
            last_progress: Instant::now(),
            done: false,
        }
    }

    pub fn into_stream(self) -> KvWatchStream {
        Box::pin(futures::stream::unfold(self, |mut watcher| async move {
            let item = watcher.next_item().await?;
            Some((item, watcher))
        }))
    }

    async fn next_item(&mut self) -> Option<Result<KvWatchItem>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                self.reported = event.kv.mod_revision;
                return Some(Ok(KvWatchItem::Event(event)));
            }
            if self.done {
                return None;
            }
            let step = if self.next_revision <= self.replay_until {
                self.replay_chunk().await
            } else if self.reported < self.next_revision - 1 {
                // Revisions were handled without news for the consumer.
                let due = self.last_progress + PROGRESS_INTERVAL;
                if Instant::now() >= due {
                    self.last_progress = Instant::now();
                    self.reported = self.next_revision - 1;
                    return Some(Ok(KvWatchItem::Progress(self.reported)));
                }
                match tokio::time::timeout_at(due, self.receive_live()).await {
                    Ok(step) => step,
                    Err(_elapsed) => Ok(()),
                }
            } else {
                self.receive_live().await
            };
            if let Err(e) = step {
                self.done = true;
                return Some(Err(e));
            }
        }
    }

    async fn replay_chunk(&mut self) -> Result<()> {
        let shared = self.shared.clone();
        let filter = self.filter.clone();
        let (from, to) = (self.next_revision, self.replay_until);
        let replay = tokio::task::spawn_blocking(move || {
            read::replay(&shared, &filter, from, to, REPLAY_CHUNK)
        })
        .await
        .map_err(StorageError::internal)??;
        self.ready.extend(replay.events);
        self.next_revision = replay.scanned_to + 1;
        Ok(())
    }

    async fn receive_live(&mut self) -> Result<()> {
        match self.live.recv().await {
            Ok(batch) => {
                for event in batch.iter() {
                    let revision = event.kv.mod_revision;
                    if revision < self.next_revision {
                        continue;
                    }
                    self.next_revision = revision + 1;
                    if self.filter.matches(&event.kv.key) {
                        self.ready.push_back(event.clone());
                    }
                }
            }
            Err(RecvError::Lagged(_)) => {
                // Batches were dropped; everything committed so far is on
                // disk, and what follows is still in the receiver.
                self.replay_until = self.shared.current.load(Ordering::SeqCst);
            }
            // The writer has stopped: the store is closed.
            Err(RecvError::Closed) => self.done = true,
        }
        Ok(())
    }
}
