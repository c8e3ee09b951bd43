//! The single writer thread: group commit and compaction.
//!
//! Every write goes through one dedicated OS thread. It takes whatever
//! requests are queued (up to [`MAX_BATCH`]), applies the transactions in
//! arrival order inside one redb write transaction — each compare sees the
//! effects of the earlier transactions of the batch — and commits once with
//! `Durability::Immediate` (fsync). Only then are the events published to
//! watchers and the callers answered, so concurrent writers share fsyncs.
//!
//! Compaction runs on the same thread in chunks of [`COMPACTION_CHUNK`]
//! revisions, each its own commit, with queued writes served in between so
//! a large compaction never stalls writers for long.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use redb::{ReadableTable, Table, WriteTransaction};
use storage::error::Result;
use storage::{KeyValue, KvEvent, KvEventKind, StorageError, TxnOp, TxnResponse};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::read::{self, KeyFilter};
use crate::record::{Change, Latest};
use crate::schema::{
    meta_get, INITIAL_REVISION, KEY_REVISIONS, LATEST, META, META_COMPACTED, META_REVISION,
    REVISIONS,
};
use crate::{closed, Shared};

/// Most transactions applied in one commit; bounds a batch's latency.
const MAX_BATCH: usize = 1024;
/// Longest wait for the stragglers of a batch (see [`gather`]).
const LINGER: Duration = Duration::from_micros(300);
const LINGER_STEP: Duration = Duration::from_micros(30);
/// Most revisions one compaction commit removes history for.
const COMPACTION_CHUNK: i64 = 10_000;
/// While the database is closed by a failure: how often the writer looks
/// for requests, and how often it tries to open the database again.
const CLOSED_POLL: Duration = Duration::from_millis(20);
const REOPEN_INTERVAL: Duration = Duration::from_secs(1);

/// The events of one commit, in revision order.
pub(crate) type EventBatch = Arc<[KvEvent]>;

pub(crate) enum Request {
    Txn(TxnRequest),
    Compact {
        revision: i64,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Stop the thread; answered once it has released the database.
    Close {
        reply: oneshot::Sender<()>,
    },
}

pub(crate) struct TxnRequest {
    pub key: String,
    pub expected_mod_revision: i64,
    pub op: TxnOp,
    pub reply: oneshot::Sender<Result<TxnResponse>>,
}

/// Runs the writer loop until every handle is gone or a `Close` arrives.
pub(crate) fn run(
    shared: Arc<Shared>,
    mut requests: mpsc::Receiver<Request>,
    events: broadcast::Sender<EventBatch>,
) {
    let mut writer = Writer {
        shared,
        events,
        compactions: VecDeque::new(),
        scratch: Scratch::default(),
        last_reopen: Instant::now(),
    };
    let mut close_reply = None;
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut last_batch = 0;
    loop {
        // With a compaction under way, or the database closed by a failure,
        // poll for writes instead of waiting for them.
        let polling = !writer.compactions.is_empty() || !writer.shared.db.is_open();
        let first = if polling {
            match requests.try_recv() {
                Ok(request) => Some(request),
                Err(TryRecvError::Disconnected) if writer.compactions.is_empty() => break,
                Err(_) => None,
            }
        } else {
            // None: every sender is gone.
            let Some(request) = requests.blocking_recv() else {
                break;
            };
            Some(request)
        };
        if let Some(first) = first {
            batch.push(first);
            gather(&mut requests, &mut batch, last_batch);
            last_batch = batch.len();
            close_reply = writer.handle_batch(&mut batch);
        } else if writer.compactions.is_empty() {
            writer.wait_for_database();
        }
        if close_reply.is_some() {
            break;
        }
        writer.compaction_step();
    }
    for (_, reply) in writer.compactions.drain(..) {
        let _ = reply.send(Err(closed()));
    }
    // Release the queue and the database before telling the closer it is
    // closed. The file is closed now, whoever still holds the store: redb
    // then records a clean shutdown and the next open skips its repair walk.
    drop(requests);
    if close_reply.is_some() {
        writer.shared.db.close("the embedded store was closed");
    }
    drop(writer);
    if let Some(reply) = close_reply {
        let _ = reply.send(());
    }
}

/// Adds queued requests to `batch`. When the previous batch was larger
/// than what is queued now, its callers are likely about to send their next
/// writes (they were answered moments ago): wait for them a little — far
/// less than a commit takes — so that concurrent writers keep sharing
/// commits instead of alternating between a tiny and a large batch.
fn gather(requests: &mut mpsc::Receiver<Request>, batch: &mut Vec<Request>, last_batch: usize) {
    let deadline = Instant::now() + LINGER;
    let wanted = last_batch.clamp(1, MAX_BATCH);
    while batch.len() < MAX_BATCH {
        match requests.try_recv() {
            Ok(request) => batch.push(request),
            Err(TryRecvError::Empty) if batch.len() < wanted && Instant::now() < deadline => {
                std::thread::sleep(LINGER_STEP);
            }
            Err(_) => break,
        }
    }
}

struct Writer {
    shared: Arc<Shared>,
    events: broadcast::Sender<EventBatch>,
    /// Accepted compactions (target revision, caller), oldest first.
    compactions: VecDeque<(i64, oneshot::Sender<Result<()>>)>,
    scratch: Scratch,
    /// When the database was last opened again after a failure.
    last_reopen: Instant,
}

/// Reused encoding buffers.
#[derive(Default)]
struct Scratch {
    latest: Vec<u8>,
    change: Vec<u8>,
}

impl Writer {
    /// Handles a drained batch in order; returns the close request if any.
    fn handle_batch(&mut self, batch: &mut Vec<Request>) -> Option<oneshot::Sender<()>> {
        let mut txns = Vec::new();
        let mut close = None;
        for request in batch.drain(..) {
            match request {
                Request::Txn(txn) => txns.push(txn),
                Request::Compact { revision, reply } => {
                    self.commit_txns(std::mem::take(&mut txns));
                    self.accept_compaction(revision, reply);
                }
                Request::Close { reply } => close = Some(reply),
            }
        }
        self.commit_txns(txns);
        close
    }

    /// Validates a compaction request as etcd does and queues it.
    fn accept_compaction(&mut self, revision: i64, reply: oneshot::Sender<Result<()>>) {
        let compacted = self
            .compactions
            .back()
            .map_or_else(|| self.shared.compacted.load(Ordering::SeqCst), |c| c.0);
        let current = self.shared.current.load(Ordering::SeqCst);
        let verdict = if revision <= compacted {
            Err(StorageError::TooOldResourceVersion {
                requested: revision,
                compacted,
            })
        } else if revision > current {
            Err(StorageError::TooLargeResourceVersion {
                requested: revision,
                current,
            })
        } else {
            Ok(())
        };
        match verdict {
            Ok(()) => self.compactions.push_back((revision, reply)),
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Runs one chunk of the oldest queued compaction.
    fn compaction_step(&mut self) {
        let Some(&(target, _)) = self.compactions.front() else {
            return;
        };
        let outcome = compact_chunk(&self.shared, target);
        if let Err(e) = &outcome {
            self.shared.record_write_failure(e);
            self.recover(e);
        }
        if !matches!(outcome, Ok(false)) {
            if let Some((_, reply)) = self.compactions.pop_front() {
                let _ = reply.send(outcome.map(|_| ()));
            }
        }
    }

    /// Applies `txns` in one redb transaction, commits, publishes, answers.
    fn commit_txns(&mut self, txns: Vec<TxnRequest>) {
        if txns.is_empty() {
            return;
        }
        if !self.shared.db.is_open() {
            self.reopen();
        }
        match self.apply(&txns) {
            Ok(BatchOutcome {
                outcomes,
                events,
                revision,
            }) => {
                self.shared.write_failure_cleared();
                self.shared.current.store(revision, Ordering::SeqCst);
                if !events.is_empty() {
                    // No receivers is fine: nobody is watching.
                    let _ = self.events.send(events.into());
                }
                for (txn, outcome) in txns.into_iter().zip(outcomes) {
                    let _ = txn.reply.send(outcome);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "embedded store commit failed");
                self.shared.record_write_failure(&e);
                // Reopened before the writers hear of the failure, so that
                // what they read next is not cut short by the close.
                self.recover(&e);
                for txn in txns {
                    let _ = txn.reply.send(Err(e.clone()));
                }
            }
        }
    }

    /// After a failed commit: closes the database, whose handle redb has
    /// given up on, and opens it again (see the `database` module).
    fn recover(&mut self, cause: &StorageError) {
        if self.shared.db.is_open() {
            self.shared.db.close(&cause.to_string());
            self.reopen();
        }
    }

    /// Idles while the database is closed, trying to open it now and then.
    fn wait_for_database(&mut self) {
        std::thread::sleep(CLOSED_POLL);
        if !self.shared.db.is_open() && self.last_reopen.elapsed() >= REOPEN_INTERVAL {
            self.reopen();
        }
    }

    fn reopen(&mut self) {
        self.last_reopen = Instant::now();
        match self.shared.db.reopen() {
            Ok((revision, compacted)) => self.reconcile(revision, compacted),
            Err(e) => tracing::warn!(error = %e, "the embedded store stays closed"),
        }
    }

    /// Makes the store's view match the reopened file. A commit that
    /// failed late (in its final flush) may have reached the disk after
    /// all: its changes are published to watchers as the log has them (its
    /// callers were told it failed: its outcome was unknown to them). A file
    /// behind the acknowledged revision has lost acknowledged writes: the
    /// store then stays closed rather than serve it.
    fn reconcile(&mut self, revision: i64, compacted: i64) {
        let current = self.shared.current.load(Ordering::SeqCst);
        if revision < current {
            let cause = format!(
                "the database file ends at revision {revision} but revision {current} was acknowledged"
            );
            tracing::error!("{cause}");
            self.shared.db.close(&cause);
            return;
        }
        self.shared.compacted.fetch_max(compacted, Ordering::SeqCst);
        if revision == current {
            return;
        }
        let everything = KeyFilter {
            key: String::new(),
            prefix: true,
        };
        match read::replay(&self.shared, &everything, current + 1, revision, usize::MAX) {
            Ok(replay) => {
                self.shared.current.store(revision, Ordering::SeqCst);
                if !replay.events.is_empty() {
                    let _ = self.events.send(replay.events.into());
                }
            }
            Err(e) => self.shared.db.close(&e.to_string()),
        }
    }

    fn apply(&mut self, txns: &[TxnRequest]) -> Result<BatchOutcome> {
        let write = self.shared.db.begin_write()?;
        let mut outcomes = Vec::with_capacity(txns.len());
        let mut events = Vec::with_capacity(txns.len());
        let revision;
        {
            let mut tables = WriteTables::open(&write)?;
            let start = meta_get(&tables.meta, META_REVISION, INITIAL_REVISION)?;
            let mut rev = start;
            for txn in txns {
                let outcome = tables.apply_one(txn, &mut rev, &mut self.scratch)?;
                outcomes.push(outcome.map(|(response, event)| {
                    events.extend(event);
                    response
                }));
            }
            if rev != start {
                tables
                    .meta
                    .insert(META_REVISION, rev)
                    .map_err(StorageError::internal)?;
            }
            revision = rev;
        }
        write.commit().map_err(StorageError::internal)?;
        Ok(BatchOutcome {
            outcomes,
            events,
            revision,
        })
    }
}

/// What a committed batch produced.
struct BatchOutcome {
    /// One answer per transaction, in order.
    outcomes: Vec<Result<TxnResponse>>,
    /// The changes, in revision order.
    events: Vec<KvEvent>,
    /// The store's revision after the batch.
    revision: i64,
}

/// A transaction's answer and the change it made, if any.
type Applied = (TxnResponse, Option<KvEvent>);

/// The tables open inside one write transaction.
struct WriteTables<'txn> {
    meta: Table<'txn, &'static str, i64>,
    latest: Table<'txn, &'static str, &'static [u8]>,
    revisions: Table<'txn, i64, &'static [u8]>,
    key_revisions: Table<'txn, (&'static str, i64), bool>,
}

impl<'txn> WriteTables<'txn> {
    fn open(write: &'txn WriteTransaction) -> Result<Self> {
        Ok(WriteTables {
            meta: write.open_table(META).map_err(StorageError::internal)?,
            latest: write.open_table(LATEST).map_err(StorageError::internal)?,
            revisions: write
                .open_table(REVISIONS)
                .map_err(StorageError::internal)?,
            key_revisions: write
                .open_table(KEY_REVISIONS)
                .map_err(StorageError::internal)?,
        })
    }

    /// Applies one transaction. The outer error aborts the whole batch (the
    /// database failed); the inner one fails only this transaction.
    fn apply_one(
        &mut self,
        txn: &TxnRequest,
        rev: &mut i64,
        scratch: &mut Scratch,
    ) -> Result<Result<Applied>> {
        let key = txn.key.as_str();
        let current = match self.read_latest(key)? {
            Ok(current) => current,
            Err(e) => return Ok(Err(e)),
        };
        let holds = match &current {
            None => txn.expected_mod_revision == 0,
            Some(kv) => kv.mod_revision == txn.expected_mod_revision,
        };
        if !holds {
            return Ok(Ok((
                TxnResponse::Failed {
                    current,
                    revision: *rev,
                },
                None,
            )));
        }
        let applied = match &txn.op {
            TxnOp::Put(value) => self.put(key, value, current, rev, scratch)?,
            // Deleting an absent key changes nothing and takes no revision, as in etcd.
            TxnOp::Delete => match current {
                None => (
                    TxnResponse::Succeeded {
                        revision: *rev,
                        prev: None,
                    },
                    None,
                ),
                Some(prev) => self.delete(key, prev, rev, scratch)?,
            },
        };
        Ok(Ok(applied))
    }

    /// The key's live generation; the inner error reports an undecodable record.
    fn read_latest(&self, key: &str) -> Result<Result<Option<KeyValue>>> {
        let guard = self.latest.get(key).map_err(StorageError::internal)?;
        Ok(match guard {
            None => Ok(None),
            Some(guard) => Latest::decode(key, guard.value()).map(|l| Some(l.to_key_value(key))),
        })
    }

    fn put(
        &mut self,
        key: &str,
        value: &Bytes,
        current: Option<KeyValue>,
        rev: &mut i64,
        scratch: &mut Scratch,
    ) -> Result<Applied> {
        *rev += 1;
        let revision = *rev;
        let create_revision = current.as_ref().map_or(revision, |c| c.create_revision);
        let prev_revision = current.as_ref().map_or(0, |c| c.mod_revision);
        Latest::encode_into(create_revision, revision, value, &mut scratch.latest);
        self.latest
            .insert(key, scratch.latest.as_slice())
            .map_err(StorageError::internal)?;
        let change = Change {
            deleted: false,
            create_revision,
            prev_revision,
            key,
            value,
        };
        self.log(revision, &change, scratch)?;
        let event = KvEvent {
            kind: KvEventKind::Put,
            kv: KeyValue {
                key: key.to_owned(),
                value: value.clone(),
                create_revision,
                mod_revision: revision,
            },
            prev: current.clone(),
        };
        let response = TxnResponse::Succeeded {
            revision,
            prev: current,
        };
        Ok((response, Some(event)))
    }

    fn delete(
        &mut self,
        key: &str,
        prev: KeyValue,
        rev: &mut i64,
        scratch: &mut Scratch,
    ) -> Result<Applied> {
        *rev += 1;
        let revision = *rev;
        self.latest.remove(key).map_err(StorageError::internal)?;
        let change = Change {
            deleted: true,
            create_revision: prev.create_revision,
            prev_revision: prev.mod_revision,
            key,
            value: &[],
        };
        self.log(revision, &change, scratch)?;
        // A delete event's kv carries only the key and the deletion revision, as etcd's.
        let event = KvEvent {
            kind: KvEventKind::Delete,
            kv: KeyValue {
                key: key.to_owned(),
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: revision,
            },
            prev: Some(prev.clone()),
        };
        let response = TxnResponse::Succeeded {
            revision,
            prev: Some(prev),
        };
        Ok((response, Some(event)))
    }

    /// Appends the change to the log and the per-key history index.
    fn log(&mut self, revision: i64, change: &Change<'_>, scratch: &mut Scratch) -> Result<()> {
        change.encode_into(&mut scratch.change);
        self.revisions
            .insert(revision, scratch.change.as_slice())
            .map_err(StorageError::internal)?;
        self.key_revisions
            .insert((change.key, revision), change.deleted)
            .map_err(StorageError::internal)?;
        Ok(())
    }
}

/// Compacts the next chunk towards `target`; returns whether it is reached.
///
/// For every change at a revision r in the chunk (all below `target`): the
/// generation it replaced (`prev_revision`) is no longer visible at any
/// revision ≥ r, so it goes; a delete's tombstone goes too. What stays is
/// exactly what reads and watches from the compacted revision on need,
/// including the previous value of the change at the compacted revision.
fn compact_chunk(shared: &Shared, target: i64) -> Result<bool> {
    let write = shared.db.begin_write()?;
    let end;
    {
        let mut tables = WriteTables::open(&write)?;
        let from = meta_get(&tables.meta, META_COMPACTED, 0)?;
        end = target.min(from.saturating_add(COMPACTION_CHUNK));
        let mut doomed: Vec<(String, i64)> = Vec::new();
        for entry in tables
            .revisions
            .range(from..end)
            .map_err(StorageError::internal)?
        {
            let (revision, data) = entry.map_err(StorageError::internal)?;
            let revision = revision.value();
            let change = Change::decode(revision, data.value())?;
            if change.prev_revision != 0 {
                doomed.push((change.key.to_owned(), change.prev_revision));
            }
            if change.deleted {
                doomed.push((change.key.to_owned(), revision));
            }
        }
        for (key, revision) in &doomed {
            tables
                .revisions
                .remove(*revision)
                .map_err(StorageError::internal)?;
            tables
                .key_revisions
                .remove((key.as_str(), *revision))
                .map_err(StorageError::internal)?;
        }
        tables
            .meta
            .insert(META_COMPACTED, end)
            .map_err(StorageError::internal)?;
    }
    write.commit().map_err(StorageError::internal)?;
    shared.compacted.store(end, Ordering::SeqCst);
    Ok(end == target)
}
