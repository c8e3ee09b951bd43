//! The embedded, durable MVCC key-value backend: [`storage::Kv`] on a
//! single [redb](https://docs.rs/redb) file, with etcd's revision model.
//!
//! # Model
//!
//! One global revision counter (an empty store is at revision 1, as etcd;
//! each successful write takes the next revision). Every key carries its
//! create and mod revisions; every change is kept until compaction, so a
//! read at an old revision and a watch from an old revision see exactly
//! what was there. `compact(rev)` drops what only revisions below `rev`
//! could see and remembers `rev`; reads and watches below it then fail with
//! `TooOldResourceVersion`.
//!
//! # On-disk layout
//!
//! The data directory holds one redb database, `kv.redb`, with four tables
//! (integers little-endian):
//!
//! * `meta` (`&str → i64`): `revision`, the current revision, and
//!   `compacted`, the compacted revision (absent: 1 and 0).
//! * `latest` (`key → create_rev i64 | mod_rev i64 | value`): every live key
//!   with its current value. Reads at the current revision — single keys and
//!   lists alike — are one B-tree lookup or one ordered scan of this table.
//! * `revisions` (`revision i64 → kind u8 | create_rev i64 | prev_rev i64 |
//!   key_len u32 | key | value`): the change log, one record per revision
//!   (a put, or a delete tombstone with an empty value). `prev_rev` is the
//!   mod revision of the generation the change replaced (0 if none), which
//!   gives watch events their previous value. A prefix watch replays
//!   history by an ordered scan of this table.
//! * `key_revisions` (`(key, revision) → deleted bool`): the per-key history
//!   index. A read at an older revision R scans it over the key range and
//!   takes, per key, the newest entry at or below R, then fetches that
//!   record from `revisions`. A single-key watch replays from it too.
//!
//! Each write updates `latest`, appends to `revisions` and `key_revisions`,
//! and bumps `meta.revision`; a batch of writes is one redb commit, so
//! reopening after a crash gives back exactly the committed state.
//! Compaction to C removes, for every change below C, the generation it
//! replaced and, for a delete, its tombstone, then sets `meta.compacted`
//! (in chunks, each its own commit that advances `meta.compacted`, so every
//! intermediate state is consistent). The value of a live key is stored
//! twice, in `latest` and in its `revisions` record: writes cost more bytes
//! so that lists at the latest revision need no second lookup per key.
//!
//! After a crash redb recovers the last committed transaction on open (a
//! repair walk of the file); nothing is acknowledged before its commit.
//! A commit that fails (a full disk, a read-only file system) fails its
//! writes with the cause and publishes nothing; the store then reopens the
//! file (for reading only while the file system refuses writes: the
//! `overlay` module) and goes on once the disk takes writes again (the
//! `database` module).
//!
//! # Writes and watches
//!
//! All writes go through one writer thread that batches concurrent
//! transactions into one commit (one fsync) and answers only after it;
//! watchers replay from the change log, then follow the live events the
//! writer publishes after each commit (a watcher that falls behind catches
//! up from disk), and report progress while only other keys change. The
//! `writer` and `watch` modules describe both in detail.

mod database;
mod overlay;
mod read;
mod record;
mod schema;
mod watch;
mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use storage::error::Result;
use storage::{Kv, KvWatchStream, RangeRequest, RangeResponse, StorageError, TxnOp, TxnResponse};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::database::Handle;
use crate::read::KeyFilter;
use crate::schema::{meta_get, INITIAL_REVISION, META, META_REVISION};
use crate::writer::{EventBatch, Request, TxnRequest};

/// The database file inside the data directory.
pub const DATABASE_FILE: &str = "kv.redb";

/// The largest key plus value one write may carry: etcd's default
/// `--max-request-bytes` (1.5 MiB).
pub const MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// Pending writes queued for the writer before callers wait for room.
const WRITE_QUEUE: usize = 4096;
/// Committed batches buffered for watchers; a watcher further behind
/// catches up from disk.
const WATCH_BUFFER: usize = 1024;

/// Why [`EmbeddedKv::open`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create data directory {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
    /// The database cannot be opened or read (the message names the file).
    #[error("{0}")]
    Database(String),
    #[error("cannot start the writer thread: {0}")]
    Thread(std::io::Error),
}

impl From<OpenError> for StorageError {
    fn from(e: OpenError) -> Self {
        StorageError::Unreachable(e.to_string())
    }
}

/// State shared by the handles, the writer thread and the watchers.
pub(crate) struct Shared {
    db: Handle,
    /// The last committed revision (published before its events are).
    current: AtomicI64,
    compacted: AtomicI64,
    /// The last commit's error, until a commit succeeds again.
    write_failure: Mutex<Option<String>>,
}

impl Shared {
    fn record_write_failure(&self, e: &StorageError) {
        if let Ok(mut failure) = self.write_failure.lock() {
            *failure = Some(e.to_string());
        }
    }

    fn write_failure_cleared(&self) {
        if let Ok(mut failure) = self.write_failure.lock() {
            *failure = None;
        }
    }
}

/// The embedded store. Cheap to clone; the writer thread stops when the
/// last clone is dropped or [`EmbeddedKv::close`] is called.
#[derive(Clone)]
pub struct EmbeddedKv {
    shared: Arc<Shared>,
    writes: mpsc::Sender<Request>,
    /// Weak so that the stream of every watcher ends when the writer stops.
    events: broadcast::WeakSender<EventBatch>,
}

impl EmbeddedKv {
    /// Opens (creating it if missing) the store in `dir`.
    pub fn open(dir: &Path) -> Result<EmbeddedKv, OpenError> {
        std::fs::create_dir_all(dir).map_err(|source| OpenError::CreateDir {
            path: dir.display().to_string(),
            source,
        })?;
        let (db, (current, compacted)) =
            Handle::open(&dir.join(DATABASE_FILE)).map_err(OpenError::Database)?;
        let shared = Arc::new(Shared {
            db,
            current: AtomicI64::new(current),
            compacted: AtomicI64::new(compacted),
            write_failure: Mutex::new(None),
        });
        let (writes, requests) = mpsc::channel(WRITE_QUEUE);
        let (events, _) = broadcast::channel(WATCH_BUFFER);
        let weak_events = events.downgrade();
        let writer_shared = shared.clone();
        std::thread::Builder::new()
            .name("embedded-kv-writer".to_owned())
            .spawn(move || writer::run(writer_shared, requests, events))
            .map_err(OpenError::Thread)?;
        Ok(EmbeddedKv {
            shared,
            writes,
            events: weak_events,
        })
    }

    /// Stops the writer and closes the database file cleanly (so that the
    /// next open needs no repair); other clones' reads and writes fail
    /// from now on.
    pub async fn close(self) {
        let (reply, done) = oneshot::channel();
        if self.writes.send(Request::Close { reply }).await.is_ok() {
            let _ = done.await;
        }
    }

    async fn submit<T>(&self, request: Request, answer: oneshot::Receiver<Result<T>>) -> Result<T> {
        self.writes.send(request).await.map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Shared) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || f(&shared))
            .await
            .map_err(StorageError::internal)?
    }
}

pub(crate) fn closed() -> StorageError {
    StorageError::Unreachable("the embedded store is closed".to_owned())
}

#[async_trait]
impl Kv for EmbeddedKv {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        self.blocking(move |shared| read::range(shared, &req)).await
    }

    async fn txn(&self, key: &str, expected_mod_revision: i64, op: TxnOp) -> Result<TxnResponse> {
        let size = key.len()
            + match &op {
                TxnOp::Put(value) => value.len(),
                TxnOp::Delete => 0,
            };
        if size > MAX_REQUEST_BYTES {
            return Err(StorageError::TooLarge {
                size,
                limit: MAX_REQUEST_BYTES,
            });
        }
        let (reply, answer) = oneshot::channel();
        let request = Request::Txn(TxnRequest {
            key: key.to_owned(),
            expected_mod_revision,
            op,
            reply,
        });
        self.submit(request, answer).await
    }

    async fn watch(&self, key: &str, prefix: bool, start_revision: i64) -> Result<KvWatchStream> {
        let compacted = self.shared.compacted.load(Ordering::SeqCst);
        if start_revision > 0 && start_revision < compacted {
            return Err(StorageError::TooOldResourceVersion {
                requested: start_revision,
                compacted,
            });
        }
        let live = self.events.upgrade().ok_or_else(closed)?.subscribe();
        let filter = KeyFilter {
            key: key.to_owned(),
            prefix,
        };
        Ok(watch::Watcher::new(self.shared.clone(), live, filter, start_revision).into_stream())
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.submit(Request::Compact { revision, reply }, answer)
            .await
    }

    async fn compacted_revision(&self) -> Result<i64> {
        Ok(self.shared.compacted.load(Ordering::SeqCst))
    }

    async fn current_revision(&self) -> Result<i64> {
        Ok(self.shared.current.load(Ordering::SeqCst))
    }

    /// Every write goes through this process's writer, which publishes a
    /// commit's revision before it answers the commit's writers.
    fn committed_revision(&self) -> Option<i64> {
        Some(self.shared.current.load(Ordering::SeqCst))
    }

    async fn health(&self) -> Result<()> {
        if self.writes.is_closed() {
            return Err(closed());
        }
        let failure = self
            .shared
            .write_failure
            .lock()
            .map_err(StorageError::internal)?
            .clone();
        if let Some(failure) = failure {
            return Err(StorageError::Unreachable(format!(
                "the last commit failed: {failure}"
            )));
        }
        self.blocking(|shared| {
            let read = shared.db.begin_read()?;
            let meta = read.open_table(META).map_err(StorageError::internal)?;
            meta_get(&meta, META_REVISION, INITIAL_REVISION).map(|_| ())
        })
        .await
    }
}
