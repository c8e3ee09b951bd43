//! Reads, each in one redb read transaction (a consistent snapshot that
//! never blocks the writer): ranges at the latest revision from the `latest`
//! table, ranges at older revisions through the per-key history index, and
//! the change-log scans that replay history to watchers. All of these are
//! blocking and run on tokio's blocking pool.

use std::ops::Bound;

use bytes::Bytes;
use redb::{ReadOnlyTable, ReadTransaction};
use storage::error::Result;
use storage::{KeyValue, KvEvent, KvEventKind, RangeRequest, RangeResponse, StorageError};

use crate::record::{Change, Latest};
use crate::schema::{
    meta_get, INITIAL_REVISION, KEY_REVISIONS, LATEST, META, META_COMPACTED, META_REVISION,
    REVISIONS,
};
use crate::Shared;

/// The keys a range request covers.
struct Span<'a> {
    start: &'a str,
    /// Exclusive end; `None` runs to the end of the keyspace.
    end: Option<&'a str>,
}

impl<'a> Span<'a> {
    /// `None` for a single-key read.
    fn of(req: &'a RangeRequest) -> Option<Self> {
        let end = req.range_end.as_deref()?;
        // etcd's convention: a range end of "\0" means "every key from `key` on".
        let end = (end != "\0").then_some(end);
        Some(Span {
            start: &req.key,
            end,
        })
    }

    fn is_empty(&self) -> bool {
        self.end.is_some_and(|end| end <= self.start)
    }

    fn bounds(&self) -> (Bound<&'a str>, Bound<&'a str>) {
        (
            Bound::Included(self.start),
            self.end.map_or(Bound::Unbounded, Bound::Excluded),
        )
    }
}

/// A snapshot with its bookkeeping.
struct Snapshot {
    txn: ReadTransaction,
    current: i64,
    compacted: i64,
}

fn snapshot(shared: &Shared) -> Result<Snapshot> {
    let txn = shared.db.begin_read()?;
    let meta = txn.open_table(META).map_err(StorageError::internal)?;
    let current = meta_get(&meta, META_REVISION, INITIAL_REVISION)?;
    let compacted = meta_get(&meta, META_COMPACTED, 0)?;
    drop(meta);
    Ok(Snapshot {
        txn,
        current,
        compacted,
    })
}

/// Serves a range request (see [`storage::Kv::range`]).
pub(crate) fn range(shared: &Shared, req: &RangeRequest) -> Result<RangeResponse> {
    let snap = snapshot(shared)?;
    if req.revision > snap.current {
        return Err(StorageError::TooLargeResourceVersion {
            requested: req.revision,
            current: snap.current,
        });
    }
    if req.revision > 0 && req.revision < snap.compacted {
        return Err(StorageError::TooOldResourceVersion {
            requested: req.revision,
            compacted: snap.compacted,
        });
    }
    let mut out = Collector::new(req);
    if req.revision <= 0 || req.revision == snap.current {
        read_latest(&snap.txn, req, &mut out)?;
    } else {
        read_at(&snap.txn, req, req.revision, &mut out)?;
    }
    // Like etcd's response header: the store's revision, whatever was read.
    Ok(out.finish(snap.current))
}

/// Accumulates a range result, honouring `limit` and `count_only`.
struct Collector {
    kvs: Vec<KeyValue>,
    count: i64,
    /// How many key-values to materialise.
    keep: i64,
    /// Whether values are left out.
    keys_only: bool,
}

impl Collector {
    fn new(req: &RangeRequest) -> Self {
        let keep = if req.count_only {
            0
        } else if req.limit > 0 {
            req.limit
        } else {
            i64::MAX
        };
        Collector {
            kvs: Vec::new(),
            count: 0,
            keep,
            keys_only: req.keys_only,
        }
    }

    /// Counts one key; returns whether its key-value should be added.
    fn wants_next(&mut self) -> bool {
        self.count += 1;
        self.count <= self.keep
    }

    fn finish(mut self, revision: i64) -> RangeResponse {
        if self.keys_only {
            for kv in &mut self.kvs {
                kv.value = Bytes::new();
            }
        }
        RangeResponse {
            more: self.count > self.kvs.len() as i64 && self.keep != 0,
            kvs: self.kvs,
            count: self.count,
            revision,
        }
    }
}

fn read_latest(txn: &ReadTransaction, req: &RangeRequest, out: &mut Collector) -> Result<()> {
    let latest = txn.open_table(LATEST).map_err(StorageError::internal)?;
    let Some(span) = Span::of(req) else {
        if let Some(guard) = latest
            .get(req.key.as_str())
            .map_err(StorageError::internal)?
        {
            if out.wants_next() {
                let record = Latest::decode(&req.key, guard.value())?;
                out.kvs.push(record.to_key_value(&req.key));
            }
        }
        return Ok(());
    };
    if span.is_empty() {
        return Ok(());
    }
    for entry in latest
        .range::<&str>(span.bounds())
        .map_err(StorageError::internal)?
    {
        let (key, value) = entry.map_err(StorageError::internal)?;
        if out.wants_next() {
            let key = key.value();
            out.kvs
                .push(Latest::decode(key, value.value())?.to_key_value(key));
        }
    }
    Ok(())
}

/// A range as of an older `revision`: for each key, its newest change at or
/// below `revision` from the history index; deleted keys are skipped.
fn read_at(
    txn: &ReadTransaction,
    req: &RangeRequest,
    revision: i64,
    out: &mut Collector,
) -> Result<()> {
    let index = txn
        .open_table(KEY_REVISIONS)
        .map_err(StorageError::internal)?;
    let revisions = txn.open_table(REVISIONS).map_err(StorageError::internal)?;
    let (start, end) = match Span::of(req) {
        None => (
            Bound::Included((req.key.as_str(), i64::MIN)),
            Bound::Included((req.key.as_str(), revision)),
        ),
        Some(span) if span.is_empty() => return Ok(()),
        Some(span) => (
            Bound::Included((span.start, i64::MIN)),
            span.end
                .map_or(Bound::Unbounded, |end| Bound::Excluded((end, i64::MIN))),
        ),
    };
    // The key being scanned and its newest (revision, deleted) at or below `revision`.
    let mut key = String::new();
    let mut newest: Option<(i64, bool)> = None;
    for entry in index
        .range::<(&str, i64)>((start, end))
        .map_err(StorageError::internal)?
    {
        let (entry_key, deleted) = entry.map_err(StorageError::internal)?;
        let (entry_key, entry_revision) = entry_key.value();
        if entry_key != key {
            emit(&revisions, newest.take(), out)?;
            key.clear();
            key.push_str(entry_key);
        }
        if entry_revision <= revision {
            newest = Some((entry_revision, deleted.value()));
        }
    }
    emit(&revisions, newest, out)
}

/// Adds the key-value written at `newest` unless it was a delete.
fn emit(
    revisions: &ReadOnlyTable<i64, &'static [u8]>,
    newest: Option<(i64, bool)>,
    out: &mut Collector,
) -> Result<()> {
    let Some((revision, false)) = newest else {
        return Ok(());
    };
    if !out.wants_next() {
        return Ok(());
    }
    let guard = revisions
        .get(revision)
        .map_err(StorageError::internal)?
        .ok_or_else(|| missing(revision))?;
    let change = Change::decode(revision, guard.value())?;
    out.kvs.push(change.to_key_value(revision));
    Ok(())
}

fn missing(revision: i64) -> StorageError {
    StorageError::Corrupt {
        key: format!("revision {revision}"),
        message: "the history index names a revision the change log lacks".to_owned(),
    }
}

/// Which keys a watcher wants.
#[derive(Debug, Clone)]
pub(crate) struct KeyFilter {
    pub key: String,
    pub prefix: bool,
}

impl KeyFilter {
    pub fn matches(&self, key: &str) -> bool {
        if self.prefix {
            key.starts_with(&self.key)
        } else {
            key == self.key
        }
    }
}

/// Replayed history: matching events and the last revision scanned.
pub(crate) struct Replay {
    pub events: Vec<KvEvent>,
    pub scanned_to: i64,
}

/// Reads the changes at revisions `from..=to` (at most `max` of them) that
/// match `filter`, as watch events. Fails with `TooOldResourceVersion` when
/// `from` has been compacted.
pub(crate) fn replay(
    shared: &Shared,
    filter: &KeyFilter,
    from: i64,
    to: i64,
    max: usize,
) -> Result<Replay> {
    let snap = snapshot(shared)?;
    if from < snap.compacted {
        return Err(StorageError::TooOldResourceVersion {
            requested: from,
            compacted: snap.compacted,
        });
    }
    let revisions = snap
        .txn
        .open_table(REVISIONS)
        .map_err(StorageError::internal)?;
    if filter.prefix {
        replay_log(&revisions, filter, from, to, max)
    } else {
        let index = snap
            .txn
            .open_table(KEY_REVISIONS)
            .map_err(StorageError::internal)?;
        replay_key(&index, &revisions, &filter.key, from, to, max)
    }
}

/// Replay for a prefix: a scan of the change log.
fn replay_log(
    revisions: &ReadOnlyTable<i64, &'static [u8]>,
    filter: &KeyFilter,
    from: i64,
    to: i64,
    max: usize,
) -> Result<Replay> {
    let mut events = Vec::new();
    let mut scanned_to = to;
    for (n, entry) in revisions
        .range(from..=to)
        .map_err(StorageError::internal)?
        .enumerate()
    {
        let (revision, data) = entry.map_err(StorageError::internal)?;
        let revision = revision.value();
        if n == max {
            scanned_to = revision - 1;
            break;
        }
        let change = Change::decode(revision, data.value())?;
        if filter.matches(change.key) {
            events.push(event(revisions, revision, &change)?);
        }
    }
    Ok(Replay { events, scanned_to })
}

/// Replay for a single key: its entries in the history index, so the scan
/// does not touch other keys' changes.
fn replay_key(
    index: &ReadOnlyTable<(&'static str, i64), bool>,
    revisions: &ReadOnlyTable<i64, &'static [u8]>,
    key: &str,
    from: i64,
    to: i64,
    max: usize,
) -> Result<Replay> {
    let mut events = Vec::new();
    let mut scanned_to = to;
    for (n, entry) in index
        .range((key, from)..=(key, to))
        .map_err(StorageError::internal)?
        .enumerate()
    {
        let (entry, _) = entry.map_err(StorageError::internal)?;
        let (_, revision) = entry.value();
        if n == max {
            scanned_to = revision - 1;
            break;
        }
        let guard = revisions
            .get(revision)
            .map_err(StorageError::internal)?
            .ok_or_else(|| missing(revision))?;
        events.push(event(
            revisions,
            revision,
            &Change::decode(revision, guard.value())?,
        )?);
    }
    Ok(Replay { events, scanned_to })
}

fn event(
    revisions: &ReadOnlyTable<i64, &'static [u8]>,
    revision: i64,
    change: &Change<'_>,
) -> Result<KvEvent> {
    let prev = match change.prev_revision {
        0 => None,
        prev_revision => {
            let guard = revisions
                .get(prev_revision)
                .map_err(StorageError::internal)?
                .ok_or_else(|| missing(prev_revision))?;
            Some(Change::decode(prev_revision, guard.value())?.to_key_value(prev_revision))
        }
    };
    Ok(if change.deleted {
        KvEvent {
            kind: KvEventKind::Delete,
            kv: KeyValue {
                key: change.key.to_owned(),
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: revision,
            },
            prev,
        }
    } else {
        KvEvent {
            kind: KvEventKind::Put,
            kv: change.to_key_value(revision),
            prev,
        }
    })
}
