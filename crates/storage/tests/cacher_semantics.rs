//! The storage semantics suite run through the watch cache, on the embedded
//! backend: each case's resource prefix gets a cacher, as each resource does
//! in the server.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use storage::cacher::{Cacher, CacherConfig};
use storage::error::Result;
use storage::{Kv, KvWatchStream, RangeRequest, RangeResponse, Storage, TxnOp, TxnResponse};
use storage_embedded::EmbeddedKv;

/// An embedded KV that owns its temporary directory.
struct TempKv {
    kv: EmbeddedKv,
    _dir: tempfile::TempDir,
}

#[async_trait]
impl Kv for TempKv {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        self.kv.range(req).await
    }
    async fn txn(&self, key: &str, expected: i64, op: TxnOp) -> Result<TxnResponse> {
        self.kv.txn(key, expected, op).await
    }
    async fn watch(&self, key: &str, prefix: bool, start: i64) -> Result<KvWatchStream> {
        self.kv.watch(key, prefix, start).await
    }
    async fn compact(&self, revision: i64) -> Result<()> {
        self.kv.compact(revision).await
    }
    async fn compacted_revision(&self) -> Result<i64> {
        self.kv.compacted_revision().await
    }
    async fn current_revision(&self) -> Result<i64> {
        self.kv.current_revision().await
    }
    async fn health(&self) -> Result<()> {
        self.kv.health().await
    }
}

async fn make_kv() -> Arc<dyn Kv> {
    let dir = tempfile::tempdir().expect("temp dir");
    let kv = EmbeddedKv::open(dir.path()).expect("open embedded kv");
    Arc::new(TempKv { kv, _dir: dir })
}

/// The case's resource behind a watch cache, ready before the case runs.
async fn through_cacher(store: Arc<dyn Storage>, prefix: String) -> Arc<dyn Storage> {
    let cacher = Cacher::new(store, CacherConfig::new(prefix));
    tokio::time::timeout(Duration::from_secs(10), cacher.wait_ready())
        .await
        .expect("the cacher becomes ready");
    Arc::new(cacher)
}

// Every shared case but two that hold a cache to the plain store's
// guarantees, which upstream's cacher does not give either:
// * `watch_compacted_revision`: a cache serves a watch from any revision its
//   window still holds, even one the KV has compacted since (upstream's
//   suite compacts the watch cache by hand for that case);
// * `get_resource_version_semantics`: it expects `Any` and
//   `NotOlderThan(older)` to see a write made just before, but a cache may
//   answer those from a state that has not caught up yet.
// `tests/cacher.rs` covers the cache's own version of both.
storage::semantics_suite!(@cases make_kv, through_cacher;
    create_and_get,
    create_already_exists,
    create_strips_resource_version_and_self_link,
    get_exact_sees_deleted_object,
    object_too_large,
    count_children,
    list_with_predicate,
    list_recursive_prefix_boundary,
    list_limit_and_continue,
    list_limit_with_predicate,
    list_many_pages,
    list_pages_share_one_revision,
    list_exact_old_revision,
    list_not_older_than,
    list_invalid_continue,
    compaction_too_old,
    continue_expired_after_compaction,
    guaranteed_update_concurrent_writers,
    guaranteed_update_preconditions,
    guaranteed_update_noop_keeps_revision,
    guaranteed_update_ignore_not_found_creates,
    guaranteed_update_not_found,
    guaranteed_update_callback_error,
    guaranteed_update_retries_with_fresh_state,
    delete_returns_deletion_revision,
    delete_preconditions,
    delete_validation,
    delete_retries_with_fresh_state,
    watch_ordering_many_keys,
    watch_from_revision_replays_history,
    watch_from_zero_sends_current_state,
    watch_single_key,
    watch_predicate_transitions,
    watch_recreated_key,
    watch_from_zero_with_predicate,
);
