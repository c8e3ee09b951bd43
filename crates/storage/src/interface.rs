//! The storage contract the generic registry store calls: upstream's
//! `storage.Interface`, with objects as shared JSON trees.
//!
//! Every object returned carries `metadata.resourceVersion` = the store
//! revision of its last write (upstream's APIObjectVersioner); objects given
//! to `create` and returned by update functions have their resourceVersion
//! cleared before they are stored.

use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::Stream;
use serde_json::Value;

use crate::error::Result;
use crate::kv::KeyValue;
use crate::object::StoredObject;

/// A stored object, shared read-only between the cache, watchers and
/// responses (see [`StoredObject`]).
pub type Object = Arc<StoredObject>;

/// Which state a read may be served from (upstream's resourceVersion and
/// resourceVersionMatch semantics, already parsed by the API layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadVersion {
    /// `resourceVersion` unset: the most recent state (a quorum read).
    #[default]
    MostRecent,
    /// `resourceVersion="0"`: any state; the watch cache may answer.
    Any,
    /// Not older than this revision.
    NotOlderThan(i64),
    /// Exactly as of this revision (fails with 410 when compacted).
    Exact(i64),
}

/// A filter on objects, built by the API layer from label and field
/// selectors. `None` matches everything (and lets stores skip decoding work).
#[derive(Clone, Default)]
pub struct Predicate {
    pub filter: Option<Arc<PredicateFn>>,
}

/// The test a [`Predicate`] applies to an object.
pub type PredicateFn = dyn Fn(&Value) -> bool + Send + Sync;

impl Predicate {
    pub fn everything() -> Self {
        Predicate { filter: None }
    }

    pub fn new(filter: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        Predicate {
            filter: Some(Arc::new(filter)),
        }
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.filter.as_ref().is_none_or(|f| f(obj))
    }

    /// [`Predicate::matches`] for a stored object, whose tree is decoded
    /// (and kept) only when there is a filter to run.
    pub fn matches_object(&self, obj: &StoredObject) -> bool {
        self.filter.as_ref().is_none_or(|f| f(obj.value()))
    }

    /// [`Predicate::matches_object`] without keeping a tree for an object
    /// held as JSON (a list's selection looks at every object once).
    pub fn matches_stored(&self, obj: &StoredObject) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| obj.peek(|tree| f(tree)))
    }

    pub fn is_everything(&self) -> bool {
        self.filter.is_none()
    }
}

impl std::fmt::Debug for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.filter.is_some() {
            "Predicate(filter)"
        } else {
            "Predicate(everything)"
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct GetOptions {
    pub version: ReadVersion,
    /// Answer `Ok(None)` instead of `NotFound` when the key is absent.
    pub ignore_not_found: bool,
}

#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub version: ReadVersion,
    pub predicate: Predicate,
    /// At most this many items (after filtering); 0 or None: no limit.
    pub limit: Option<i64>,
    /// The opaque token from a previous page's [`ListResult::continue_token`].
    pub continue_token: Option<String>,
    /// List every key under `key` (a collection) rather than the single key.
    pub recursive: bool,
}

#[derive(Debug, Clone, Default)]
pub struct ListResult {
    pub items: Vec<Object>,
    /// The revision the list was taken at (the list's resourceVersion).
    pub resource_version: i64,
    /// Set when more items remain; opaque, carries the list's revision.
    pub continue_token: Option<String>,
    /// Upstream's `remainingItemCount`: known only for unfiltered pages.
    pub remaining_item_count: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Send events with revision strictly greater than this. 0 (upstream's
    /// `resourceVersion` "" or "0"): first an ADDED event for every object
    /// that exists now, then changes after that state.
    pub resource_version: i64,
    pub predicate: Predicate,
    /// Watch every key under `key` rather than the single key.
    pub recursive: bool,
    /// Send BOOKMARK events carrying the latest revision (upstream's
    /// `allowWatchBookmarks`).
    pub allow_bookmarks: bool,
}

#[derive(Debug, Clone)]
pub enum WatchEvent {
    Added(Object),
    Modified(Object),
    /// The object as it was before deletion, with its resourceVersion set to
    /// the revision of the deletion (as upstream).
    Deleted(Object),
    /// Every event up to this revision has been delivered.
    Bookmark(i64),
    /// The watch failed (e.g. too old resource version); the stream ends.
    Error(crate::StorageError),
}

pub type WatchStream = Pin<Box<dyn Stream<Item = WatchEvent> + Send>>;

/// Conditions a write checks against the current object (upstream's
/// `storage.Preconditions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// The read-modify-write step of `guaranteed_update`: given the current
/// object (None when absent and `ignore_not_found`), returns the new one.
/// It may be called several times when writers conflict.
pub type UpdateFn<'a> =
    &'a (dyn Fn(Option<Object>) -> BoxFuture<'static, Result<Value>> + Send + Sync);

/// The object of one stored version of a key when the caller already
/// holds it decoded (the watch cache's copy of the key at that mod
/// revision), else `None`.
pub type KnownVersion<'a> = &'a (dyn Fn(i64) -> Option<Object> + Send + Sync);

/// The objects of stored versions the caller already holds decoded (the
/// watch cache's copies of keys at their mod revisions): for a batch of
/// key-values read from the KV, in key order, one answer per key-value —
/// the caller's object of that key at that mod revision, or `None`. Asked
/// once per batch so the caller looks them all up under one lock; shared so
/// the lookup runs beside the decoding, off the async workers.
pub type KnownVersions = Arc<dyn Fn(&[KeyValue]) -> Vec<Option<Object>> + Send + Sync>;

/// Checks that the current object may be deleted (admission on delete).
pub type ValidateDeletionFn<'a> =
    &'a (dyn Fn(Object) -> BoxFuture<'static, Result<()>> + Send + Sync);

#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Stores a new object at `key`; `AlreadyExists` if the key exists.
    async fn create(&self, key: &str, obj: Value) -> Result<Object>;

    /// Deletes the object at `key` after checking `preconditions` and
    /// `validate` against the current state (retrying on concurrent writes).
    /// Returns the object as it was, with the deletion's resourceVersion.
    async fn delete(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: ValidateDeletionFn<'_>,
    ) -> Result<Object>;

    /// Changes in revision order for `key` (or every key under it).
    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream>;

    /// The object at `key`; `Ok(None)` only with `ignore_not_found`.
    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Object>>;

    /// `get` at the most recent version, answered with `known`'s copy of
    /// the version read when it has one instead of decoding the stored
    /// bytes again (the same object). This default decodes.
    async fn get_latest(
        &self,
        key: &str,
        ignore_not_found: bool,
        known: KnownVersion<'_>,
    ) -> Result<Option<Object>> {
        let _ = known;
        let opts = GetOptions {
            version: ReadVersion::MostRecent,
            ignore_not_found,
        };
        self.get(key, opts).await
    }

    /// The objects under `key` (or the one at `key` when not recursive).
    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult>;

    /// `get_list`, taking `known`'s copy of each version read when it has
    /// one instead of decoding the stored bytes again: the same object, as
    /// a key's mod revision names one write whatever revision the list
    /// reads at. Predicate, limit, continue token, remaining count and the
    /// list's revision are `get_list`'s. This default decodes.
    async fn get_list_reusing(
        &self,
        key: &str,
        opts: ListOptions,
        known: KnownVersions,
    ) -> Result<ListResult> {
        let _ = known;
        self.get_list(key, opts).await
    }

    /// Read-modify-write with compare-on-revision, retried on conflict.
    /// If the update function returns an object equal to the current one,
    /// nothing is written and the current object is returned.
    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<&Preconditions>,
        update: UpdateFn<'_>,
    ) -> Result<Object>;

    /// The number of objects under `key`.
    async fn count(&self, key: &str) -> Result<i64>;

    /// The store's current revision (upstream's `GetCurrentResourceVersion`),
    /// used for consistent reads from the watch cache.
    async fn current_revision(&self) -> Result<i64>;

    /// The revision of the last write acknowledged, when known without a
    /// request to the backend (see [`crate::Kv::committed_revision`]): a
    /// watch cache that has reached it answers a most-recent read as the
    /// backend would.
    fn committed_revision(&self) -> Option<i64> {
        None
    }

    /// Fails when the backend cannot serve requests.
    async fn health(&self) -> Result<()>;

    /// Whether the storage has what it needs to serve (upstream's
    /// `StorageWithReadiness.ReadinessCheck`): a watch cache its first list.
    fn is_ready(&self) -> bool {
        true
    }

    /// Waits until [`Storage::is_ready`]; an in-process informer's list
    /// waits here as upstream's reflector retries the 429 a watch cache
    /// answers while it loads, so it is served from the cache instead of
    /// listing the whole resource from the backend a second time.
    async fn wait_ready(&self) {}
}
