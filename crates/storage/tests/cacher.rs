//! The watch cache over the real store (on the in-memory reference KV): which reads
//! it serves and how, watch semantics (initial state, replay from the
//! window, predicate transitions, bookmarks), pass-through writes,
//! readiness and re-listing.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};
use storage::cacher::{Cacher, CacherConfig, WindowConfig};
use storage::error::Result;
use storage::store::Store;
use storage::testing::MemoryKv;
use storage::{
    Codec, GetOptions, JsonCodec, KnownVersion, ListOptions, ListResult, Object, Preconditions,
    Predicate, ReadVersion, Storage, StorageError, UpdateFn, ValidateDeletionFn, WatchEvent,
    WatchOptions, WatchStream,
};
use tokio::sync::{broadcast, watch};
use tokio::time::timeout;

const PREFIX: &str = "/registry/pods/";
const WAIT: Duration = Duration::from_secs(10);

fn pod(ns: &str, name: &str, app: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
           "spec": {"nodeName": "n1"}})
}

fn key(ns: &str, name: &str) -> String {
    format!("{PREFIX}{ns}/{name}")
}

fn rv(obj: &Value) -> i64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("object has a resourceVersion")
}

fn app_is(app: &'static str) -> Predicate {
    Predicate::new(move |o| o["metadata"]["labels"]["app"] == app)
}

fn names(items: &[Object]) -> Vec<String> {
    items
        .iter()
        .map(|o| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// A store on a fresh in-memory KV.
fn new_store() -> Arc<dyn Storage> {
    Arc::new(Store::new(Arc::new(MemoryKv::new()), Arc::new(JsonCodec)))
}

async fn ready_cacher(storage: Arc<dyn Storage>, config: CacherConfig) -> Cacher {
    let cacher = Cacher::new(storage, config);
    timeout(WAIT, cacher.wait_ready())
        .await
        .expect("cacher becomes ready");
    cacher
}

async fn create(storage: &dyn Storage, ns: &str, name: &str, app: &str) -> Object {
    storage
        .create(&key(ns, name), pod(ns, name, app))
        .await
        .expect("create")
}

async fn relabel(storage: &dyn Storage, ns: &str, name: &str, app: &'static str) -> Object {
    let update = move |current: Option<Object>| {
        let mut obj = current.map(|o| o.to_value()).unwrap_or(Value::Null);
        obj["metadata"]["labels"]["app"] = json!(app);
        async move { Ok(obj) }.boxed()
    };
    storage
        .guaranteed_update(&key(ns, name), false, None, &update)
        .await
        .expect("update")
}

async fn next(stream: &mut WatchStream) -> WatchEvent {
    timeout(WAIT, stream.next())
        .await
        .expect("a watch event in time")
        .expect("the watch is still open")
}

fn any_version() -> GetOptions {
    GetOptions {
        version: ReadVersion::Any,
        ignore_not_found: false,
    }
}

#[tokio::test]
async fn reads_are_served_from_the_cache_once_fresh() {
    let store = new_store();
    create(store.as_ref(), "a", "one", "x").await;
    let cacher = ready_cacher(store.clone(), CacherConfig::new(PREFIX)).await;

    let created = create(&cacher, "a", "two", "y").await;
    // NotOlderThan waits for the cache to see the write.
    let opts = GetOptions {
        version: ReadVersion::NotOlderThan(rv(&created)),
        ignore_not_found: false,
    };
    let got = cacher.get(&key("a", "two"), opts).await.unwrap().unwrap();
    assert_eq!(got, created);
    assert!(cacher.resource_version() >= rv(&created));

    let missing = cacher.get(&key("a", "nope"), any_version()).await;
    assert!(
        matches!(missing, Err(StorageError::NotFound { .. })),
        "{missing:?}"
    );
    let ignored = GetOptions {
        ignore_not_found: true,
        ..any_version()
    };
    assert!(cacher
        .get(&key("a", "nope"), ignored)
        .await
        .unwrap()
        .is_none());

    let list = cacher
        .get_list(
            PREFIX,
            ListOptions {
                version: ReadVersion::NotOlderThan(rv(&created)),
                recursive: true,
                predicate: app_is("y"),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&list.items), vec!["two"]);
    assert!(list.resource_version >= rv(&created));
}

#[tokio::test]
async fn not_older_than_a_future_revision_times_out() {
    let store = new_store();
    let mut config = CacherConfig::new(PREFIX);
    config.fresh_timeout = Duration::from_millis(200);
    let cacher = ready_cacher(store.clone(), config).await;
    let future = store.current_revision().await.unwrap() + 100;
    let opts = GetOptions {
        version: ReadVersion::NotOlderThan(future),
        ignore_not_found: true,
    };
    let err = cacher.get(&key("a", "x"), opts).await.unwrap_err();
    assert!(
        matches!(err, StorageError::TooLargeResourceVersion { requested, .. } if requested == future),
        "{err:?}"
    );
}

#[tokio::test]
async fn consistent_lists_see_every_prior_write() {
    let store = new_store();
    let mut config = CacherConfig::new(PREFIX);
    config.fresh_timeout = Duration::from_millis(300);
    let cacher = ready_cacher(store.clone(), config).await;
    for i in 0..5 {
        create(&cacher, "a", &format!("p{i}"), "x").await;
        let list = cacher
            .get_list(
                PREFIX,
                ListOptions {
                    recursive: true,
                    ..ListOptions::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(list.items.len(), i + 1);
    }
    // A write elsewhere moves the store's revision past anything the cache
    // will see; the read still answers correctly (from storage on timeout).
    store
        .create("/registry/other/x", pod("", "x", "x"))
        .await
        .unwrap();
    let list = cacher
        .get_list(
            PREFIX,
            ListOptions {
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(list.items.len(), 5);
    assert_eq!(
        list.resource_version,
        store.current_revision().await.unwrap()
    );
}

#[tokio::test]
async fn limits_and_continue_tokens_follow_upstream() {
    let store = new_store();
    for name in ["a", "b", "c", "d", "e"] {
        create(
            store.as_ref(),
            "ns",
            name,
            if name == "c" { "y" } else { "x" },
        )
        .await;
    }
    let cacher = ready_cacher(store.clone(), CacherConfig::new(PREFIX)).await;
    let base = ListOptions {
        recursive: true,
        limit: Some(2),
        ..ListOptions::default()
    };

    // resourceVersion=0 ignores the limit, as upstream's cacher does.
    let all = cacher
        .get_list(
            PREFIX,
            ListOptions {
                version: ReadVersion::Any,
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&all.items), vec!["a", "b", "c", "d", "e"]);
    assert!(all.continue_token.is_none());

    // NotOlderThan pages from the cache; the token continues in storage.
    let first = cacher
        .get_list(
            PREFIX,
            ListOptions {
                version: ReadVersion::NotOlderThan(1),
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&first.items), vec!["a", "b"]);
    assert_eq!(first.remaining_item_count, Some(3));
    let rest = continue_list(&cacher, &base, &first).await;
    assert_eq!(names(&rest.items), vec!["c", "d"]);
    assert_eq!(rest.resource_version, first.resource_version);
    let last = continue_list(&cacher, &base, &rest).await;
    assert_eq!(names(&last.items), vec!["e"]);
    assert!(last.continue_token.is_none());

    // With a selector the remaining count is unknown.
    let filtered = cacher
        .get_list(
            PREFIX,
            ListOptions {
                predicate: app_is("x"),
                ..base.clone()
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&filtered.items), vec!["a", "b"]);
    assert!(filtered.continue_token.is_some());
    assert_eq!(filtered.remaining_item_count, None);

    // Exact reads go to storage and see the past.
    let exact = cacher
        .get_list(
            PREFIX,
            ListOptions {
                version: ReadVersion::Exact(rv(&all.items[1])),
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&exact.items), vec!["a", "b"]);
}

async fn continue_list(cacher: &Cacher, base: &ListOptions, page: &ListResult) -> ListResult {
    cacher
        .get_list(
            PREFIX,
            ListOptions {
                continue_token: page.continue_token.clone(),
                ..base.clone()
            },
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn watch_from_now_sends_the_state_then_changes() {
    let store = new_store();
    create(store.as_ref(), "a", "one", "x").await;
    create(store.as_ref(), "b", "two", "x").await;
    let cacher = ready_cacher(store.clone(), CacherConfig::new(PREFIX)).await;

    let mut ns_a = cacher
        .watch(
            &format!("{PREFIX}a"),
            WatchOptions {
                recursive: true,
                ..WatchOptions::default()
            },
        )
        .await
        .unwrap();
    match next(&mut ns_a).await {
        WatchEvent::Added(obj) => assert_eq!(obj["metadata"]["name"], "one"),
        other => panic!("unexpected {other:?}"),
    }
    create(&cacher, "b", "three", "x").await;
    let four = create(&cacher, "a", "four", "x").await;
    match next(&mut ns_a).await {
        WatchEvent::Added(obj) => assert_eq!(obj, four),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn selector_transitions_become_added_and_deleted() {
    let store = new_store();
    let cacher = ready_cacher(store.clone(), CacherConfig::new(PREFIX)).await;
    let before = create(&cacher, "a", "p", "x").await;
    let mut watch = cacher
        .watch(
            PREFIX,
            WatchOptions {
                resource_version: rv(&before),
                recursive: true,
                predicate: app_is("y"),
                ..WatchOptions::default()
            },
        )
        .await
        .unwrap();
    let into = relabel(&cacher, "a", "p", "y").await;
    match next(&mut watch).await {
        WatchEvent::Added(obj) => assert_eq!(obj, into),
        other => panic!("unexpected {other:?}"),
    }
    let out = relabel(&cacher, "a", "p", "z").await;
    match next(&mut watch).await {
        WatchEvent::Deleted(obj) => {
            // The last selected state, at the revision that deselected it.
            assert_eq!(obj["metadata"]["labels"]["app"], "y");
            assert_eq!(rv(&obj), rv(&out));
        }
        other => panic!("unexpected {other:?}"),
    }
    relabel(&cacher, "a", "p", "y").await;
    assert!(matches!(next(&mut watch).await, WatchEvent::Added(_)));
    let deleted = cacher
        .delete(&key("a", "p"), None, &|_| async { Ok(()) }.boxed())
        .await
        .unwrap();
    match next(&mut watch).await {
        WatchEvent::Deleted(obj) => assert_eq!(rv(&obj), rv(&deleted)),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn watch_replays_the_window_and_refuses_older_revisions() {
    let store = new_store();
    let mut config = CacherConfig::new(PREFIX);
    config.window = WindowConfig {
        lower_bound: 4,
        upper_bound: 4,
        event_fresh_duration: Duration::from_secs(75),
    };
    let cacher = ready_cacher(store.clone(), config).await;
    let mut revisions: Vec<i64> = Vec::new();
    for i in 0..6 {
        let created = create(&cacher, "a", &format!("p{i}"), "x").await;
        revisions.push(rv(&created));
    }
    wait_for_rv(&cacher, revisions[5]).await;

    // The window holds the last four events: p2..p5.
    let mut replay = cacher
        .watch(
            PREFIX,
            WatchOptions {
                resource_version: revisions[2],
                recursive: true,
                ..WatchOptions::default()
            },
        )
        .await
        .unwrap();
    for i in 3..6 {
        match next(&mut replay).await {
            WatchEvent::Added(obj) => assert_eq!(obj["metadata"]["name"], format!("p{i}")),
            other => panic!("unexpected {other:?}"),
        }
    }
    let mut too_old = cacher
        .watch(
            PREFIX,
            WatchOptions {
                resource_version: revisions[0],
                recursive: true,
                ..WatchOptions::default()
            },
        )
        .await
        .unwrap();
    match next(&mut too_old).await {
        WatchEvent::Error(StorageError::TooOldResourceVersion { requested, .. }) => {
            assert_eq!(requested, revisions[0])
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(too_old.next().await.is_none());
}

async fn wait_for_rv(cacher: &Cacher, rv: i64) {
    timeout(WAIT, async {
        while cacher.resource_version() < rv {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the cache catches up");
}

#[tokio::test]
async fn bookmarks_carry_the_latest_revision() {
    let store = new_store();
    let mut config = CacherConfig::new(PREFIX);
    config.bookmark_frequency = Duration::from_millis(100);
    let cacher = ready_cacher(store.clone(), config).await;
    let mut watch = cacher
        .watch(
            PREFIX,
            WatchOptions {
                resource_version: cacher.resource_version(),
                recursive: true,
                allow_bookmarks: true,
                predicate: app_is("nothing-matches"),
            },
        )
        .await
        .unwrap();
    let last = create(&cacher, "a", "p", "x").await;
    match next(&mut watch).await {
        WatchEvent::Bookmark(at) => assert!(at >= rv(&last), "{at} < {}", rv(&last)),
        other => panic!("unexpected {other:?}"),
    }
}

/// A store whose initial list can be held back and whose watches can be
/// broken with "too old resource version", to drive the cacher's
/// readiness and re-listing.
struct Controlled {
    inner: Arc<dyn Storage>,
    lists_open: watch::Sender<bool>,
    break_watches: broadcast::Sender<()>,
    lists: AtomicUsize,
    gets: AtomicUsize,
    /// Added to the inner store's committed revision: writes it has
    /// acknowledged that the cache cannot have seen yet.
    unseen: AtomicI64,
}

#[async_trait]
impl Storage for Controlled {
    async fn create(&self, key: &str, obj: Value) -> Result<Object> {
        self.inner.create(key, obj).await
    }
    async fn delete(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: ValidateDeletionFn<'_>,
    ) -> Result<Object> {
        self.inner.delete(key, preconditions, validate).await
    }
    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        let inner = self.inner.watch(key, opts).await?;
        let broken = self.break_watches.subscribe();
        Ok(Box::pin(futures::stream::unfold(
            Some((inner, broken)),
            |state| async move {
                let (mut inner, mut broken) = state?;
                tokio::select! {
                    event = inner.next() => event.map(|e| (e, Some((inner, broken)))),
                    _ = broken.recv() => Some((
                        WatchEvent::Error(StorageError::TooOldResourceVersion { requested: 1, compacted: 2 }),
                        None,
                    )),
                }
            },
        )))
    }
    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Object>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key, opts).await
    }
    async fn get_latest(
        &self,
        key: &str,
        ignore_not_found: bool,
        known: KnownVersion<'_>,
    ) -> Result<Option<Object>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get_latest(key, ignore_not_found, known).await
    }
    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        let mut open = self.lists_open.subscribe();
        let _ = open.wait_for(|open| *open).await;
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.get_list(key, opts).await
    }
    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<&Preconditions>,
        update: UpdateFn<'_>,
    ) -> Result<Object> {
        self.inner
            .guaranteed_update(key, ignore_not_found, preconditions, update)
            .await
    }
    async fn count(&self, key: &str) -> Result<i64> {
        self.inner.count(key).await
    }
    async fn current_revision(&self) -> Result<i64> {
        self.inner.current_revision().await
    }
    fn committed_revision(&self) -> Option<i64> {
        let unseen = self.unseen.load(Ordering::SeqCst);
        self.inner.committed_revision().map(|rev| rev + unseen)
    }
    async fn health(&self) -> Result<()> {
        self.inner.health().await
    }
}

fn controlled(inner: Arc<dyn Storage>) -> Arc<Controlled> {
    Arc::new(Controlled {
        inner,
        lists_open: watch::channel(false).0,
        break_watches: broadcast::channel(4).0,
        lists: AtomicUsize::new(0),
        gets: AtomicUsize::new(0),
        unseen: AtomicI64::new(0),
    })
}

#[tokio::test]
async fn reads_before_the_first_list_go_to_storage() {
    let store = new_store();
    let created = create(store.as_ref(), "a", "p", "x").await;
    let control = controlled(store.clone());
    let mut config = CacherConfig::new(PREFIX);
    config.fresh_timeout = Duration::from_millis(100);
    let cacher = Cacher::new(control.clone(), config);
    assert!(!cacher.is_ready());
    let got = cacher.get(&key("a", "p"), any_version()).await.unwrap();
    assert_eq!(got, Some(created.clone()));
    // A watch waits briefly for readiness, then is served by storage.
    let mut watch = cacher
        .watch(
            PREFIX,
            WatchOptions {
                recursive: true,
                ..WatchOptions::default()
            },
        )
        .await
        .unwrap();
    assert!(matches!(next(&mut watch).await, WatchEvent::Added(obj) if obj == created));
    assert_eq!(cacher.watcher_count(), 0);

    control.lists_open.send_replace(true);
    timeout(WAIT, cacher.wait_ready()).await.unwrap();
    let list = cacher
        .get_list(
            PREFIX,
            ListOptions {
                version: ReadVersion::Any,
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(list.items, vec![created]);
    // The list above was the cache's: storage saw only the initial one.
    assert_eq!(control.lists.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_cache_lists_in_pages() {
    let store = new_store();
    for name in ["a", "b", "c", "d", "e"] {
        create(store.as_ref(), "ns", name, "x").await;
    }
    let control = controlled(store.clone());
    control.lists_open.send_replace(true);
    let mut config = CacherConfig::new(PREFIX);
    config.list_page_size = 2;
    let cacher = ready_cacher(control.clone(), config).await;
    assert_eq!(control.lists.load(Ordering::SeqCst), 3);
    let opts = ListOptions {
        version: ReadVersion::Any,
        recursive: true,
        ..ListOptions::default()
    };
    let list = cacher.get_list(PREFIX, opts).await.unwrap();
    assert_eq!(names(&list.items), vec!["a", "b", "c", "d", "e"]);
    assert_eq!(
        list.resource_version,
        store.current_revision().await.unwrap()
    );
}

#[tokio::test]
async fn an_expired_watch_relists_and_ends_cache_watches() {
    let store = new_store();
    let control = controlled(store.clone());
    control.lists_open.send_replace(true);
    let cacher = ready_cacher(control.clone(), CacherConfig::new(PREFIX)).await;
    let mut watch = cacher
        .watch(
            PREFIX,
            WatchOptions {
                resource_version: cacher.resource_version(),
                recursive: true,
                ..WatchOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(cacher.watcher_count(), 1);

    // Hold the re-list so the outage is observable, then break the watch.
    control.lists_open.send_replace(false);
    control.break_watches.send(()).unwrap();
    assert!(timeout(WAIT, watch.next()).await.unwrap().is_none());
    assert_eq!(cacher.watcher_count(), 0);
    let written = create(store.as_ref(), "a", "during-outage", "x").await;

    control.lists_open.send_replace(true);
    timeout(WAIT, cacher.wait_ready()).await.unwrap();
    assert_eq!(control.lists.load(Ordering::SeqCst), 2);
    let got = cacher.get(&key("a", "during-outage"), any_version()).await;
    assert_eq!(got.unwrap(), Some(written));
}

#[tokio::test]
async fn writes_pass_through() {
    let store = new_store();
    let cacher = ready_cacher(store.clone(), CacherConfig::new(PREFIX)).await;
    create(&cacher, "a", "p", "x").await;
    let dup = cacher.create(&key("a", "p"), pod("a", "p", "x")).await;
    assert!(
        matches!(dup, Err(StorageError::AlreadyExists { .. })),
        "{dup:?}"
    );
    let updated = relabel(&cacher, "a", "p", "y").await;
    let stored = store
        .get(&key("a", "p"), GetOptions::default())
        .await
        .unwrap();
    assert_eq!(stored, Some(updated));
    assert_eq!(cacher.count(PREFIX).await.unwrap(), 1);
    assert_eq!(
        cacher.current_revision().await.unwrap(),
        store.current_revision().await.unwrap()
    );
    cacher.health().await.unwrap();
}

/// Lists `PREFIX` with a consistent read.
async fn consistent_list(storage: &dyn Storage) -> ListResult {
    let opts = ListOptions {
        recursive: true,
        ..ListOptions::default()
    };
    storage.get_list(PREFIX, opts).await.unwrap()
}

#[tokio::test]
async fn consistent_reads_wait_for_progress_when_the_feed_reports_it() {
    // The embedded KV reports progress to watchers whose keys are quiet.
    let (store, _dir) = embedded_store();
    let control = controlled(store.clone());
    control.lists_open.send_replace(true);
    let cacher = ready_cacher(control.clone(), CacherConfig::new(PREFIX)).await;
    let mine = create(&cacher, "a", "p", "x").await;
    let elsewhere = store.create("/registry/other/x", pod("", "x", "x")).await;
    wait_for_rv(&cacher, rv(&elsewhere.unwrap())).await;

    for i in 0..3 {
        let other = format!("/registry/other/y{i}");
        let written = rv(&store.create(&other, pod("", "y", "x")).await.unwrap());
        let list = consistent_list(&cacher).await;
        assert_eq!(list.items, vec![mine.clone()]);
        assert!(list.resource_version >= written);
    }
    // All three came from the cache: storage served only the initial list.
    assert_eq!(control.lists.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn consistent_reads_go_to_storage_without_progress() {
    // The in-memory KV reports no progress: after a write elsewhere the
    // cache cannot know it is current, so storage answers, without waiting.
    let store = new_store();
    let control = controlled(store.clone());
    control.lists_open.send_replace(true);
    let cacher = ready_cacher(control.clone(), CacherConfig::new(PREFIX)).await;
    let mine = create(&cacher, "a", "p", "x").await;
    wait_for_rv(&cacher, rv(&mine)).await;
    // Nothing happened elsewhere: the cache is current and answers.
    assert_eq!(consistent_list(&cacher).await.items, vec![mine.clone()]);
    assert_eq!(control.lists.load(Ordering::SeqCst), 1);

    store
        .create("/registry/other/x", pod("", "x", "x"))
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    let list = consistent_list(&cacher).await;
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(list.items, vec![mine]);
    assert_eq!(
        list.resource_version,
        store.current_revision().await.unwrap()
    );
    assert_eq!(control.lists.load(Ordering::SeqCst), 2);
}

/// A store on a fresh embedded KV (which reports progress to quiet
/// watchers and knows its last acknowledged revision in-process).
fn embedded_store() -> (Arc<dyn Storage>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let kv = storage_embedded::EmbeddedKv::open(dir.path()).unwrap();
    let store: Arc<dyn Storage> = Arc::new(Store::new(Arc::new(kv), Arc::new(JsonCodec)));
    (store, dir)
}

#[tokio::test]
async fn most_recent_gets_come_from_a_cache_at_the_committed_revision() {
    let (store, _dir) = embedded_store();
    let control = controlled(store.clone());
    control.lists_open.send_replace(true);
    let cacher = ready_cacher(control.clone(), CacherConfig::new(PREFIX)).await;
    // Every write acknowledged before a get is in its answer, whether the
    // cache has caught up (it answers) or not (storage does).
    let mut last = None;
    for i in 0..20 {
        let name = format!("p{i}");
        let written = create(&cacher, "a", &name, "x").await;
        let got = cacher.get(&key("a", &name), GetOptions::default()).await;
        assert_eq!(got.unwrap().as_ref(), Some(&written));
        last = Some(written);
    }
    let last = last.unwrap();
    wait_for_rv(&cacher, rv(&last)).await;

    // Caught up: found, missing and ignored-missing without a storage read.
    let gets = control.gets.load(Ordering::SeqCst);
    let got = cacher.get(&key("a", "p19"), GetOptions::default()).await;
    assert_eq!(got.unwrap(), Some(last.clone()));
    let missing = cacher.get(&key("a", "nope"), GetOptions::default()).await;
    assert!(
        matches!(missing, Err(StorageError::NotFound { .. })),
        "{missing:?}"
    );
    let ignored = GetOptions {
        ignore_not_found: true,
        ..GetOptions::default()
    };
    let got = cacher.get(&key("a", "nope"), ignored).await;
    assert!(got.unwrap().is_none());
    assert_eq!(control.gets.load(Ordering::SeqCst), gets);

    // A write the cache has not seen: storage answers.
    control.unseen.store(1, Ordering::SeqCst);
    let got = cacher.get(&key("a", "p19"), GetOptions::default()).await;
    assert_eq!(got.unwrap(), Some(last));
    assert_eq!(control.gets.load(Ordering::SeqCst), gets + 1);
}

/// JSON storage that counts its decodes.
#[derive(Default)]
struct CountingCodec {
    decodes: AtomicUsize,
}

impl Codec for CountingCodec {
    fn encode(&self, obj: &Value) -> Result<Bytes> {
        JsonCodec.encode(obj)
    }
    fn decode(&self, key: &str, data: &[u8]) -> Result<Value> {
        self.decodes.fetch_add(1, Ordering::SeqCst);
        JsonCodec.decode(key, data)
    }
}

#[tokio::test]
async fn most_recent_gets_read_storage_that_cannot_tell_its_revision() {
    // The in-memory KV, like etcd, knows its revision only when asked: the
    // get reads storage, which takes the cache's copy of the version read
    // instead of decoding it again.
    let codec = Arc::new(CountingCodec::default());
    let store: Arc<dyn Storage> = Arc::new(Store::new(Arc::new(MemoryKv::new()), codec.clone()));
    let control = controlled(store.clone());
    control.lists_open.send_replace(true);
    let cacher = ready_cacher(control.clone(), CacherConfig::new(PREFIX)).await;
    let written = create(&cacher, "a", "p", "x").await;
    wait_for_rv(&cacher, rv(&written)).await;
    let decodes = codec.decodes.load(Ordering::SeqCst);
    let got = cacher.get(&key("a", "p"), GetOptions::default()).await;
    assert_eq!(got.unwrap(), Some(written.clone()));
    assert_eq!(control.gets.load(Ordering::SeqCst), 1);
    assert_eq!(codec.decodes.load(Ordering::SeqCst), decodes);

    // A version the cache has not seen yet is decoded.
    let updated = relabel(store.as_ref(), "a", "p", "y").await;
    let got = cacher.get(&key("a", "p"), GetOptions::default()).await;
    assert_eq!(got.unwrap(), Some(updated));
    assert!(codec.decodes.load(Ordering::SeqCst) > decodes);
}
