//! The storage semantics suite through the watch cache, on etcd: each
//! case's resource prefix gets a cacher over a store on a fresh etcd, as each
//! resource does in a server run with `--etcd-servers`.

use std::sync::Arc;
use std::time::Duration;

use storage::cacher::{Cacher, CacherConfig};
use storage::{Kv, Storage};
use storage_etcd::testing::EtcdServer;

async fn make_kv() -> Arc<dyn Kv> {
    let server = EtcdServer::start().await.expect("start etcd");
    Arc::new(server.into_kv().await.expect("connect to etcd"))
}

/// The case's resource behind a watch cache, ready before the case runs.
async fn through_cacher(store: Arc<dyn Storage>, prefix: String) -> Arc<dyn Storage> {
    let cacher = Cacher::new(store, CacherConfig::new(prefix));
    tokio::time::timeout(Duration::from_secs(10), cacher.wait_ready())
        .await
        .expect("the cacher becomes ready");
    Arc::new(cacher)
}

// The cases storage's own cacher suite runs: a cache serves a watch from any
// revision its window still holds, even one etcd has compacted since, so
// `watch_compacted_revision` does not apply.
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
