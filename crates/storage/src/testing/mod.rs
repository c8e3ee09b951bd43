//! The backend-independent semantics suite (upstream's `pkg/storage/testing`):
//! one set of cases every [`Kv`] backend, and every [`Storage`] layered on
//! top of one, must pass.
//!
//! Enabled by the crate feature `testing`. Use it from a backend's tests:
//!
//! ```ignore
//! async fn make_kv() -> std::sync::Arc<dyn storage::Kv> { /* a fresh store */ }
//! storage::semantics_suite!(make_kv);
//! ```
//!
//! That expands to one multi-threaded `#[tokio::test]` per case (so `cargo nextest` lists
//! each); each case builds a [`Store`] over a KV from `make_kv` (any
//! expression callable as `make_kv().await`). The caller needs `tokio` as a
//! (dev-)dependency. Invoke the macro inside a `mod` to run it more than once
//! in one test crate.
//!
//! To run the same cases through another [`Storage`] built over the store
//! (the watch cache), pass an async wrapper as well. It gets the store and
//! the case's resource prefix (ending in `/`); every object a case stores
//! lives at `prefix` + its name (no namespace, so upstream's key layout
//! holds), except a few deliberately outside the prefix:
//!
//! ```ignore
//! async fn wrap(store: Arc<dyn storage::Storage>, prefix: String) -> Arc<dyn storage::Storage> {
//!     /* e.g. build a watch cache for `prefix` over `store` and wait until it is ready */
//! }
//! storage::semantics_suite!(make_kv, wrap);
//! ```
//!
//! The wrapped form leaves out the cases that only hold for the plain store:
//! its bookmark timer, and a watch from a compacted revision failing (a watch
//! cache serves such a watch from its own window, as upstream's does). Cases use their own key prefix and tolerate
//! other writers bumping the revision, but the compaction cases compact the
//! whole KV: give each test its own store.
//!
//! To run a chosen subset (for instance leaving out cases a layer cannot
//! meet, with the reason in a comment), name the cases of [`cases`] directly:
//!
//! ```ignore
//! storage::semantics_suite!(@cases make_kv, wrap; create_and_get, watch_single_key);
//! ```
//!
//! Backends must start at a non-zero revision (etcd's first is 1): a list
//! at revision 0 would make the watch that follows it mean "current state".
//!
//! [`MemoryKv`] is a small in-memory reference backend the suite runs against
//! in this crate; it is for tests only.

pub mod cases;
mod memory_kv;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use futures::StreamExt;
use serde_json::{json, Value};

pub use memory_kv::MemoryKv;

/// A case's resource behind a watch cache, ready before the case runs (the
/// wrapping of `semantics_suite!(@cacher …)`).
pub async fn through_cacher(store: Arc<dyn Storage>, prefix: String) -> Arc<dyn Storage> {
    let cacher = crate::cacher::Cacher::new(store, crate::cacher::CacherConfig::new(prefix));
    if tokio::time::timeout(Duration::from_secs(10), cacher.wait_ready())
        .await
        .is_err()
    {
        panic!("the cacher did not become ready within 10 s");
    }
    Arc::new(cacher)
}

use crate::codec::JsonCodec;
use crate::error::Result;
use crate::interface::{GetOptions, Object, Storage, WatchEvent, WatchStream};
use crate::kv::Kv;
use crate::store::Store;

/// How long a case waits for an expected watch event.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The bookmark interval of the stores the suite builds.
pub const BOOKMARK_INTERVAL: Duration = Duration::from_millis(200);

/// The object size limit of the stores the suite builds.
pub const MAX_OBJECT_BYTES: usize = 64 * 1024;

/// The identity wrapper: run the cases against the plain [`Store`].
pub async fn unwrapped(store: Arc<dyn Storage>, _prefix: String) -> Arc<dyn Storage> {
    store
}

/// What one case works with.
pub struct Harness {
    /// The KV under test (cases compact it directly).
    pub kv: Arc<dyn Kv>,
    /// The storage under test: the store over `kv`, possibly wrapped.
    pub storage: Arc<dyn Storage>,
    /// A key prefix no other case or run uses, without a trailing slash.
    pub prefix: String,
}

impl Harness {
    pub async fn new<W, F>(kv: Arc<dyn Kv>, case: &str, wrap: W) -> Self
    where
        W: FnOnce(Arc<dyn Storage>, String) -> F,
        F: Future<Output = Arc<dyn Storage>>,
    {
        let store = Store::new(kv.clone(), Arc::new(JsonCodec))
            .with_max_object_bytes(MAX_OBJECT_BYTES)
            .with_bookmark_interval(BOOKMARK_INTERVAL);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let prefix = format!("/registry/semantics/{case}-{nanos:x}");
        let storage = wrap(Arc::new(store), format!("{prefix}/")).await;
        Harness {
            kv,
            storage,
            prefix,
        }
    }

    /// Writes a marker object outside the collection and returns its
    /// revision: a non-zero revision to watch from (0 would ask for the
    /// current state instead) that precedes everything written after it.
    pub async fn mark(&self) -> i64 {
        let key = format!("{}-marks/mark", self.prefix);
        let opts = GetOptions {
            ignore_not_found: true,
            ..GetOptions::default()
        };
        let written = match self
            .storage
            .get(&key, opts)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
        {
            Some(_) => self.storage.delete(&key, None, &allow_delete).await,
            None => self.storage.create(&key, object("mark", "")).await,
        };
        rv(&written.unwrap_or_else(|e| panic!("writing the mark failed: {e}")))
    }

    /// The key of object `name` in the case's collection (`prefix/name`).
    pub fn key(&self, name: &str) -> String {
        format!("{}/{name}", self.prefix)
    }
}

/// A cluster-scoped object with the given name and a `value` data field.
pub fn object(name: &str, value: &str) -> Value {
    json!({
        "apiVersion": "semantics.test/v1",
        "kind": "Widget",
        "metadata": {"name": name, "uid": format!("uid-{name}")},
        "data": {"value": value},
    })
}

/// The object's `data.value`.
pub fn value_of(obj: &Value) -> &str {
    obj["data"]["value"].as_str().unwrap_or_default()
}

/// The object's resourceVersion as a number (panics when missing: every
/// object storage returns must carry one).
pub fn rv(obj: &Value) -> i64 {
    let text = obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("object without resourceVersion: {obj}"));
    text.parse()
        .unwrap_or_else(|e| panic!("bad resourceVersion {text:?}: {e}"))
}

/// The object's name.
pub fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

/// The next watch event, failing the test after [`EVENT_TIMEOUT`].
pub async fn next_event(stream: &mut WatchStream) -> WatchEvent {
    match tokio::time::timeout(EVENT_TIMEOUT, stream.next()).await {
        Ok(Some(event)) => event,
        Ok(None) => panic!("watch ended while an event was expected"),
        Err(_) => panic!("no watch event within {EVENT_TIMEOUT:?}"),
    }
}

/// The next event that is not a bookmark.
pub async fn next_change(stream: &mut WatchStream) -> WatchEvent {
    loop {
        match next_event(stream).await {
            WatchEvent::Bookmark(_) => {}
            event => return event,
        }
    }
}

/// Asserts that no change (other than bookmarks) arrives within `wait`.
pub async fn assert_no_change(stream: &mut WatchStream, wait: Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return,
            Ok(Some(WatchEvent::Bookmark(_))) => {}
            Ok(other) => panic!("unexpected watch event: {other:?}"),
        }
    }
}

/// A deletion validator that allows everything.
pub fn allow_delete(_: Object) -> BoxFuture<'static, Result<()>> {
    Box::pin(async { Ok(()) })
}

/// An update function that sets `data.value` on the current object.
pub fn set_value(value: &str) -> impl Fn(Option<Object>) -> BoxFuture<'static, Result<Value>> {
    let value = value.to_string();
    move |current| {
        let value = value.clone();
        Box::pin(async move {
            let mut obj = current.map_or_else(|| object("new", ""), |c| c.to_value());
            obj["data"]["value"] = Value::String(value);
            Ok(obj)
        })
    }
}

/// Expands to one `#[tokio::test]` per semantics case; see the module docs.
#[macro_export]
macro_rules! semantics_suite {
    (@cases $make_kv:expr, $wrap:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness = $crate::testing::Harness::new(
                    ($make_kv)().await,
                    stringify!($case),
                    $wrap,
                )
                .await;
                $crate::testing::cases::$case(harness).await;
            }
        )*
    };
    (@shared $make_kv:expr, $wrap:expr) => {
        $crate::semantics_suite!(@common $make_kv, $wrap);
        $crate::semantics_suite!(@cases $make_kv, $wrap;
            get_resource_version_semantics,
            list_empty_collection,
            list_paging_under_concurrent_writes,
            watch_concurrent_writers,
            list_reuses_known_versions,
            list_reuse_fetches_the_values_it_lacks,
            cacher_lists_from_storage_reuse_cached_versions,
        );
    };
    // The cases every wrapping of the store must pass, the watch cache too.
    (@common $make_kv:expr, $wrap:expr) => {
        $crate::semantics_suite!(@cases $make_kv, $wrap;
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
    };
    // Through the watch cache: the common cases. Of the plain store's extra
    // cases, two hold a cache to guarantees upstream's cacher does not give
    // either: `watch_compacted_revision` (a cache serves a watch from any
    // revision its window still holds, even one the KV has compacted since)
    // and `get_resource_version_semantics` (a cache may answer `Any` and
    // `NotOlderThan(older)` from a state that has not caught up yet). The
    // cacher's own tests cover its version of both.
    (@cacher $make_kv:expr) => {
        $crate::semantics_suite!(@common $make_kv, $crate::testing::through_cacher);
    };
    ($make_kv:expr, $wrap:expr $(,)?) => {
        $crate::semantics_suite!(@shared $make_kv, $wrap);
    };
    ($make_kv:expr $(,)?) => {
        $crate::semantics_suite!(@shared $make_kv, $crate::testing::unwrapped);
        $crate::semantics_suite!(@cases $make_kv, $crate::testing::unwrapped;
            watch_bookmarks,
            watch_compacted_revision,
        );
    };
}
