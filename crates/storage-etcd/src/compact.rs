//! Compaction coordinated between API servers sharing one etcd, following
//! upstream's etcd3 compactor.
//!
//! The special key `compact_rev_key` holds the last compacted revision; its
//! etcd *version* (number of writes to it) serves as a logical clock, the
//! "compact time". A server compacts only when it wins a compare-and-swap of
//! that version against the compact time it last saw; a loser adopts the
//! winner's time and revision and skips the round. So when several servers
//! run the periodic compactor against the same etcd, each interval compacts
//! once, and a crashed server's role is taken over by the next CAS winner.

use std::sync::atomic::{AtomicI64, Ordering};

use etcd_client::proto::{PbRangeResponse, PbTxnOpResponse};
use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use storage::error::Result;
use storage::StorageError;
use tokio::sync::Mutex;

use crate::error::{Failure, Retry};
use crate::members::Members;
use crate::rpc;

/// The key upstream's compactor coordinates through.
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// This server's view of the shared compaction state.
#[derive(Debug, Default)]
pub(crate) struct Compaction {
    /// The compact time (version of [`COMPACT_REV_KEY`]) last seen; the lock
    /// also serialises this server's compactions.
    time: Mutex<i64>,
    /// Highest compacted revision observed (by us, another server, or a
    /// watch that etcd cancelled for compaction).
    compacted: AtomicI64,
}

impl Compaction {
    /// Records that history up to `revision` is known to be compacted.
    pub(crate) fn observe(&self, revision: i64) {
        self.compacted.fetch_max(revision, Ordering::Relaxed);
    }

    /// The highest compacted revision observed so far, without asking etcd.
    pub(crate) fn known(&self) -> i64 {
        self.compacted.load(Ordering::Relaxed)
    }

    /// One round of the coordinated compaction: claim the round by CAS on
    /// the compact time, then compact `revision` (0 only claims the round,
    /// as upstream does on bootstrap).
    pub(crate) async fn compact(&self, members: &Members, revision: i64) -> Result<()> {
        let mut time = self.time.lock().await;
        let txn = Txn::new()
            .when([Compare::version(COMPACT_REV_KEY, CompareOp::Equal, *time)])
            .and_then([TxnOp::put(COMPACT_REV_KEY, revision.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        let sent = members.call(rpc::COMPACTION_TXN, Retry::NotSentOnly, txn, |m, txn| {
            let mut kv = m.kv.clone();
            async move { kv.txn(txn).await }
        });
        let resp = sent.await.map_err(Failure::into_storage_error)?.0;
        let current = resp.header.as_ref().map_or(0, |h| h.revision);
        if !resp.succeeded {
            // Another server compacted since we last looked: adopt its
            // compact time and revision, and leave this round to it.
            let range = resp.responses.into_iter().find_map(|op| match op.response {
                Some(PbTxnOpResponse::ResponseRange(r)) => Some(r),
                _ => None,
            });
            if let Some(range) = range {
                *time = self.adopt(range);
            }
            tracing::debug!(
                revision,
                compact_time = *time,
                "etcd: compaction done by another server"
            );
            return Ok(());
        }
        *time += 1;
        if revision == 0 {
            return Ok(());
        }
        // Compacting is idempotent: safe to repeat on another member.
        let sent = members.call(rpc::COMPACTION, Retry::Idempotent, (), |m, ()| {
            let mut kv = m.kv.clone();
            async move { kv.compact(revision, None).await }
        });
        match sent.await {
            // Already compacted at or past `revision` (by hand, or by etcd's
            // own auto-compaction): the outcome is the one wanted.
            Ok(_) | Err(Failure::Compacted) => {
                self.observe(revision);
                tracing::debug!(revision, "etcd: compacted");
                Ok(())
            }
            Err(Failure::FutureRevision) => Err(StorageError::TooLargeResourceVersion {
                requested: revision,
                current,
            }),
            Err(other) => Err(other.into_storage_error()),
        }
    }

    /// Reads the shared compacted revision from etcd, merges it into what is
    /// known locally and returns the result.
    pub(crate) async fn fetch(&self, members: &Members) -> Result<i64> {
        let sent = members.call(rpc::RANGE, Retry::Idempotent, (), |m, ()| {
            let mut kv = m.kv.clone();
            async move { kv.get(COMPACT_REV_KEY, None).await }
        });
        let resp = sent.await.map_err(Failure::into_storage_error)?;
        self.adopt(resp.0);
        Ok(self.known())
    }

    /// Takes the compacted revision from a read of [`COMPACT_REV_KEY`];
    /// returns the key's version (the compact time), 0 when absent.
    fn adopt(&self, range: PbRangeResponse) -> i64 {
        let Some(kv) = range.kvs.into_iter().next() else {
            return 0;
        };
        match std::str::from_utf8(&kv.value)
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
        {
            Some(revision) => self.observe(revision),
            None => tracing::warn!(key = COMPACT_REV_KEY, "etcd: unparsable compacted revision"),
        }
        kv.version
    }
}
