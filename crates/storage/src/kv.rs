//! The revisioned key-value backend: the subset of etcd v3's KV and Watch
//! API that the storage layer needs. One global revision counter; every key
//! carries its create and mod revisions; history is kept until compaction.
//!
//! Keys are UTF-8 paths such as `/registry/pods/default/nginx`.

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;

use crate::error::Result;

/// One key at one revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// Revision of the write that created this generation of the key.
    pub create_revision: i64,
    /// Revision of the last write to the key.
    pub mod_revision: i64,
}

/// A read of one key or of a key range.
#[derive(Debug, Clone, Default)]
pub struct RangeRequest {
    /// The key, or the first key of the range.
    pub key: String,
    /// Exclusive end of the range; `None` reads the single key `key`.
    /// Use [`prefix_end`] to read every key under a prefix.
    pub range_end: Option<String>,
    /// Read as of this revision; 0 means the latest.
    pub revision: i64,
    /// At most this many keys; 0 means no limit.
    pub limit: i64,
    /// Return only the count, no key-values.
    pub count_only: bool,
    /// Return the key-values without their values (empty), as etcd's
    /// `keys_only`: keys and revisions, to tell which versions a caller
    /// holds already.
    pub keys_only: bool,
}

#[derive(Debug, Clone, Default)]
pub struct RangeResponse {
    /// Keys in ascending order.
    pub kvs: Vec<KeyValue>,
    /// True when `limit` cut the result and more keys remain in the range.
    pub more: bool,
    /// Number of keys in the whole range (ignoring `limit`).
    pub count: i64,
    /// The store's revision the read was served at (the current revision for
    /// a latest read, as etcd's response header).
    pub revision: i64,
}

/// A write guarded by a compare on the key's mod revision, as upstream's
/// etcd3 store issues them: `If(ModRevision(key) == expected).Then(op).Else(Get(key))`.
/// `expected_mod_revision == 0` means "the key must not exist".
#[derive(Debug, Clone)]
pub enum TxnOp {
    Put(Bytes),
    Delete,
}

#[derive(Debug, Clone)]
pub enum TxnResponse {
    /// The compare held and the op was applied at `revision`. For a delete,
    /// `prev` is the deleted key-value.
    Succeeded {
        revision: i64,
        prev: Option<KeyValue>,
    },
    /// The compare failed; `current` is the key as it is now (None if absent),
    /// `revision` the store's current revision.
    Failed {
        current: Option<KeyValue>,
        revision: i64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvEventKind {
    Put,
    Delete,
}

/// One change. For `Delete`, `kv.value` is empty and `kv.mod_revision` is
/// the revision of the deletion. `prev` is the key-value before the change
/// (always filled for `Delete`, and for a `Put` that overwrote a key).
#[derive(Debug, Clone)]
pub struct KvEvent {
    pub kind: KvEventKind,
    pub kv: KeyValue,
    pub prev: Option<KeyValue>,
}

/// Events in revision order. An `Err` ends the stream (for example
/// [`crate::StorageError::TooOldResourceVersion`] when the start revision is
/// compacted). The stream may also yield progress notifications as
/// `Ok(KvWatchItem::Progress(rev))`: every event up to `rev` has been sent.
pub type KvWatchStream = Pin<Box<dyn Stream<Item = Result<KvWatchItem>> + Send>>;

#[derive(Debug, Clone)]
pub enum KvWatchItem {
    Event(KvEvent),
    Progress(i64),
}

#[async_trait]
pub trait Kv: Send + Sync + 'static {
    /// Reads a key or a range. Reading at a compacted revision fails with
    /// `TooOldResourceVersion`; at a future revision with `TooLargeResourceVersion`.
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse>;

    /// Applies `op` to `key` if its mod revision equals `expected_mod_revision`
    /// (0: the key must be absent). Durable when it returns `Succeeded`.
    async fn txn(&self, key: &str, expected_mod_revision: i64, op: TxnOp) -> Result<TxnResponse>;

    /// Watches `key` (or every key under it when `prefix`) for changes with
    /// revision >= `start_revision` (0: from the next write on).
    async fn watch(&self, key: &str, prefix: bool, start_revision: i64) -> Result<KvWatchStream>;

    /// Drops history older than `revision` (keeps the state as of it).
    async fn compact(&self, revision: i64) -> Result<()>;

    /// The revision up to which history has been compacted (0: none).
    async fn compacted_revision(&self) -> Result<i64>;

    /// The store's current revision.
    async fn current_revision(&self) -> Result<i64>;

    /// The revision of the last write the store acknowledged, when this
    /// process knows it without asking the backend: a store that one API
    /// server opens alone (the embedded one), whose every write passes
    /// through it. `None` (this default) when only a request can tell, as
    /// on etcd, which other API servers write to too.
    fn committed_revision(&self) -> Option<i64> {
        None
    }

    /// Fails when the backend cannot serve requests (for /healthz, /readyz).
    async fn health(&self) -> Result<()>;

    /// Writes `value` at `key` whatever is there, for the backend to delete
    /// `ttl` after this write unless it is written again: upstream's writes
    /// with a TTL, which etcd ties to a lease (the API servers' endpoint
    /// leases under `/masterleases/`). Returns the write's revision.
    ///
    /// This default keeps the key until it is deleted: a backend without
    /// expiry (the embedded store, which one API server opens alone).
    async fn put_with_ttl(&self, key: &str, value: Bytes, ttl: Duration) -> Result<i64> {
        let _ = ttl;
        loop {
            let read = RangeRequest {
                key: key.to_owned(),
                ..RangeRequest::default()
            };
            let expected = self
                .range(read)
                .await?
                .kvs
                .first()
                .map_or(0, |kv| kv.mod_revision);
            if let TxnResponse::Succeeded { revision, .. } =
                self.txn(key, expected, TxnOp::Put(value.clone())).await?
            {
                return Ok(revision);
            }
        }
    }
}

/// The exclusive range end that covers every key starting with `prefix`
/// (etcd's `clientv3.GetPrefixRangeEnd`).
pub fn prefix_end(prefix: &str) -> String {
    let mut bytes = prefix.as_bytes().to_vec();
    while let Some(last) = bytes.pop() {
        if last < 0xff {
            bytes.push(last + 1);
            // Keys are UTF-8 paths; incrementing an ASCII byte keeps it valid.
            return String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    // Every byte was 0xff: the range runs to the end of the keyspace.
    "\0".to_string()
}
