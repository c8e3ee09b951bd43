//! The watch cache (upstream's `k8s.io/apiserver/pkg/storage/cacher`): a
//! [`Storage`] in front of another one for a single resource prefix. One
//! underlying list + watch keeps an in-memory copy of the resource and a
//! window of recent events; reads that allow it and every watch are served
//! from memory, writes pass through.
//!
//! Which reads the cache serves follows upstream's delegator (1.37):
//!
//! * `get`: `Any` and `NotOlderThan(n)` from the cache (waiting up to 3 s for
//!   it to reach `n`, then `TooLargeResourceVersion`); `MostRecent` and
//!   `Exact` from storage — but a `MostRecent` get on a store that knows
//!   its last acknowledged revision in-process (the embedded one) is
//!   answered from the cache once the cache has reached that revision,
//!   which gives what storage would, without the read; a `MostRecent` get
//!   that reads storage takes the cache's copy of the version read instead
//!   of decoding it again.
//! * `get_list`: `Any` from the cache, ignoring `limit`; `NotOlderThan(n)`
//!   from the cache with `limit` and a continue token; `MostRecent` is a
//!   consistent read from the cache — storage's current revision, then wait
//!   for the cache to reach it, falling back to storage on timeout; `Exact`
//!   and continue tokens go to storage (the cache keeps no snapshots).
//!   Lists from storage take the cache's copies of the versions they read
//!   instead of decoding them again, as `MostRecent` gets do.
//! * Until the first list completes (and while re-listing) reads go to
//!   storage; watches wait for readiness briefly, then go to storage too.

mod reflector;
mod watch_cache;
mod watchers;

use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use async_trait::async_trait;
use component_base::tracing::{self as tracing_ctx, Attribute};
use serde_json::Value;
use tokio::sync::watch;

use crate::continue_token;
use crate::error::{Result, StorageError};
use crate::interface::{
    GetOptions, KnownVersions, ListOptions, ListResult, Object, Preconditions, Predicate,
    ReadVersion, Storage, UpdateFn, ValidateDeletionFn, WatchEvent, WatchOptions, WatchStream,
};
use crate::kv::KeyValue;
use crate::store::check_key;
use watch_cache::{CacheEvent, WatchCache, WatchFilter};
use watchers::{Initial, NewWatcher, Registry, TimeBudget};

pub use watch_cache::WindowConfig;

/// Computes an object's storage key (upstream's `KeyFunc`).
pub type KeyFunc = Arc<dyn Fn(&Value) -> Option<String> + Send + Sync>;

/// The key of `obj` under `prefix` in the standard layout:
/// `prefix/namespace/name` for namespaced objects, `prefix/name` otherwise.
pub fn default_key(prefix: &str, obj: &Value) -> Option<String> {
    let meta = obj.get("metadata")?;
    let name = meta.get("name")?.as_str().filter(|n| !n.is_empty())?;
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    match meta.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => Some(format!("{prefix}/{ns}/{name}")),
        _ => Some(format!("{prefix}/{name}")),
    }
}

/// How a [`Cacher`] caches one resource.
#[derive(Clone)]
pub struct CacherConfig {
    /// Every object of the resource lives under this prefix (a trailing `/`
    /// is added when missing), e.g. `/registry/pods/`.
    pub resource_prefix: String,
    /// Computes an object's key; defaults to [`default_key`].
    pub key_func: KeyFunc,
    /// Size bounds of the event window.
    pub window: WindowConfig,
    /// Objects per page of the cache's own lists (upstream: 10 000).
    pub list_page_size: i64,
    /// Per-watcher buffer; `None` sizes it from the window as upstream does.
    pub watcher_buffer: Option<usize>,
    /// How often watchers with bookmarks enabled get one (upstream: 1 min).
    pub bookmark_frequency: Duration,
    /// How long a read waits for the cache to reach a revision (upstream: 3 s).
    pub fresh_timeout: Duration,
    /// The most one dispatch waits for blocked watchers (upstream: 100 ms),
    /// refilled at `dispatch_budget_refill` per second (upstream: 50 ms).
    pub dispatch_budget: Duration,
    pub dispatch_budget_refill: Duration,
    /// The resource as upstream's `GroupResource` prints it (`pods`,
    /// `deployments.apps`): the `type` of the `cacher.GetList` span.
    pub group_resource: String,
}

impl CacherConfig {
    pub fn new(resource_prefix: impl Into<String>) -> Self {
        let mut resource_prefix = resource_prefix.into();
        if !resource_prefix.ends_with('/') {
            resource_prefix.push('/');
        }
        let prefix = resource_prefix.clone();
        CacherConfig {
            resource_prefix,
            key_func: Arc::new(move |obj| default_key(&prefix, obj)),
            window: WindowConfig::default(),
            list_page_size: 10_000,
            watcher_buffer: None,
            bookmark_frequency: Duration::from_secs(60),
            fresh_timeout: Duration::from_secs(3),
            dispatch_budget: Duration::from_millis(100),
            dispatch_budget_refill: Duration::from_millis(50),
            group_resource: String::new(),
        }
    }

    /// Names the cached resource (see [`CacherConfig::group_resource`]).
    pub fn with_group_resource(mut self, group: &str, resource: &str) -> Self {
        self.group_resource = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        self
    }
}

/// What readers wait on: whether the cache is ready and its revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Progress {
    ready: bool,
    rv: i64,
}

/// State shared by the cacher, its feed task and its watchers.
struct Shared {
    config: CacherConfig,
    cache: RwLock<WatchCache>,
    progress: watch::Sender<Progress>,
    registry: Arc<Registry>,
    budget: Mutex<TimeBudget>,
}

impl Shared {
    fn read(&self) -> RwLockReadGuard<'_, WatchCache> {
        self.cache.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, WatchCache> {
        self.cache.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, cache: &WatchCache) {
        self.progress.send_replace(Progress {
            ready: cache.is_ready(),
            rv: cache.rv(),
        });
    }

    fn current_rv(&self) -> i64 {
        self.read().rv()
    }

    fn replace(&self, items: impl IntoIterator<Item = (String, Object)>, rv: i64) {
        let mut cache = self.write();
        cache.replace(items, rv);
        self.publish(&cache);
    }

    fn become_unready(&self) {
        {
            let mut cache = self.write();
            cache.set_unready();
            self.publish(&cache);
        }
        // Registration checks readiness under the cache lock, so no watcher
        // can join the stale state after this.
        self.registry.terminate_all();
    }

    fn advance(&self, rv: i64) {
        let mut cache = self.write();
        cache.advance(rv);
        self.publish(&cache);
    }

    fn apply(&self, key: &str, obj: Object, deleted: bool, rv: i64) -> Arc<CacheEvent> {
        let mut cache = self.write();
        let event = cache.apply(key, obj, deleted, rv);
        self.publish(&cache);
        event
    }
}

/// The watch cache for one resource; see the module documentation.
pub struct Cacher {
    storage: Arc<dyn Storage>,
    shared: Arc<Shared>,
    feed: tokio::task::JoinHandle<()>,
}

impl Cacher {
    /// Starts caching the resource under `config.resource_prefix` of
    /// `storage`. Must be called within a Tokio runtime.
    pub fn new(storage: Arc<dyn Storage>, config: CacherConfig) -> Self {
        let (progress, _) = watch::channel(Progress {
            ready: false,
            rv: 0,
        });
        let shared = Arc::new(Shared {
            cache: RwLock::new(WatchCache::new(config.window)),
            progress,
            registry: Arc::new(Registry::new(config.bookmark_frequency)),
            budget: Mutex::new(TimeBudget::new(
                config.dispatch_budget,
                config.dispatch_budget_refill,
            )),
            config,
        });
        let feed = tokio::spawn(reflector::run(shared.clone(), storage.clone()));
        Cacher {
            storage,
            shared,
            feed,
        }
    }

    /// Whether the first list has completed (and no re-list is under way).
    pub fn is_ready(&self) -> bool {
        self.shared.read().is_ready()
    }

    /// Waits until the cache is ready (for as long as the initial list keeps
    /// failing; callers bound it with a timeout).
    pub async fn wait_ready(&self) {
        let mut progress = self.shared.progress.subscribe();
        // The sender lives in `self.shared`, so this cannot fail while `self` lives.
        let _ = progress.wait_for(|p| p.ready).await;
    }

    /// The revision the cache has caught up to.
    pub fn resource_version(&self) -> i64 {
        self.shared.current_rv()
    }

    /// The number of live cache watches.
    pub fn watcher_count(&self) -> usize {
        self.shared.registry.len()
    }

    /// Whether `key` (normalized for `recursive`) lies in the cached resource.
    fn covers(&self, key: &str) -> bool {
        let prefix = &self.shared.config.resource_prefix;
        key.starts_with(prefix.as_str()) || key == prefix.trim_end_matches('/')
    }

    /// Waits until the cache is ready and at `rv` or newer. `Ok(false)`: the
    /// cache is not ready; `TooLargeResourceVersion` on timeout.
    async fn wait_fresh(&self, rv: i64) -> Result<bool> {
        let mut progress = self.shared.progress.subscribe();
        let state = *progress.borrow_and_update();
        if !state.ready {
            return Ok(false);
        }
        if state.rv >= rv {
            return Ok(true);
        }
        let wait = async {
            progress
                .wait_for(|p| !p.ready || p.rv >= rv)
                .await
                .map(|state| state.ready)
        };
        match tokio::time::timeout(self.shared.config.fresh_timeout, wait).await {
            Ok(Ok(ready)) => Ok(ready),
            _ => Err(StorageError::TooLargeResourceVersion {
                requested: rv,
                current: self.shared.current_rv(),
            }),
        }
    }

    /// The revision a consistent read must see: storage's current one.
    /// `None` when the cache is behind it and cannot tell when it catches
    /// up (its feed reports no timely progress), so storage must answer — as
    /// upstream delegates consistent reads when etcd lacks progress requests.
    async fn consistent_read_revision(&self) -> Result<Option<i64>> {
        let current = self.storage.current_revision().await?;
        let cache = self.shared.read();
        Ok((cache.rv() >= current || cache.progress_reported()).then_some(current))
    }

    /// Upstream's attributes of the `cacher.Watch` and `cacher.GetList`
    /// spans.
    fn span_attributes(&self) -> Vec<Attribute> {
        vec![
            Attribute::new("audit-id", tracing_ctx::audit_id()),
            Attribute::new("type", self.shared.config.group_resource.clone()),
        ]
    }

    /// A get the cache can serve (upstream's `Cacher.Get`, in its span):
    /// waits until the cache has reached `min_rv`, falling back to storage
    /// when it stops being ready.
    async fn get_cached(&self, key: &str, opts: GetOptions, min_rv: i64) -> Result<Option<Object>> {
        if !self.wait_fresh(min_rv).await? {
            return self.storage.get(key, opts).await;
        }
        let found = {
            let cache = self.shared.read();
            cache.is_ready().then(|| cache.get(key).cloned())
        };
        match found {
            None => self.storage.get(key, opts).await,
            Some(Some(obj)) => Ok(Some(obj)),
            Some(None) if opts.ignore_not_found => Ok(None),
            Some(None) => Err(StorageError::NotFound {
                key: key.to_string(),
            }),
        }
    }

    /// A most-recent get answered by the cache, without reading storage,
    /// when the cache has reached the last write storage acknowledged and
    /// storage knows that revision in-process (the embedded store): the
    /// cache then holds what a read from storage would give, every write
    /// acknowledged before this get included. `None` leaves the get to
    /// storage: on etcd (upstream's gets with no resourceVersion reach
    /// etcd), while the cache is behind, and while the request's trace is
    /// recorded, whose spans show storage's read as upstream's do.
    fn get_most_recent_cached(
        &self,
        key: &str,
        opts: &GetOptions,
    ) -> Option<Result<Option<Object>>> {
        if tracing_ctx::recording() || !self.covers(key) || check_key(key).is_err() {
            return None;
        }
        let committed = self.storage.committed_revision()?;
        let cache = self.shared.read();
        if !cache.is_ready() || cache.rv() < committed {
            return None;
        }
        Some(match cache.get(key) {
            Some(obj) => Ok(Some(Arc::clone(obj))),
            None if opts.ignore_not_found => Ok(None),
            None => Err(StorageError::NotFound {
                key: key.to_string(),
            }),
        })
    }

    /// The cache's copy of `key` when it is the version written at
    /// `revision`: what decoding that version from storage gives.
    fn cached_at(&self, key: &str, revision: i64) -> Option<Object> {
        if !self.covers(key) {
            return None;
        }
        self.shared.read().get_at(key, revision).cloned()
    }

    /// The cache's copy of `fresh` (read from storage) when the cache holds
    /// that same version: equal content, and its encodings are shared with
    /// the version's watchers and lists.
    fn same_version(&self, key: &str, fresh: Object) -> Object {
        if !self.covers(key) {
            return fresh;
        }
        let version = fresh.metadata_str("resourceVersion");
        let Some(revision) = version.and_then(|v| v.parse().ok()) else {
            return fresh;
        };
        let cached = self.shared.read().get_at(key, revision).cloned();
        cached.unwrap_or(fresh)
    }

    /// A list from storage, taking the cache's copy of every version read
    /// that the cache holds (the same object, and its encodings are
    /// shared): on etcd without progress notifications every consistent
    /// list reads storage, most of whose items the cache holds.
    async fn list_from_storage(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        let shared = Arc::clone(&self.shared);
        let known: KnownVersions = Arc::new(move |kvs: &[KeyValue]| shared.read().versions_of(kvs));
        self.storage.get_list_reusing(key, opts, known).await
    }

    /// A list the cache can serve (upstream's `Cacher.GetList`, in its
    /// span): waits until the cache is fresh enough, falling back to
    /// storage when it cannot tell or does not get there in time.
    async fn get_list_cached(
        &self,
        key: &str,
        cache_key: &str,
        opts: ListOptions,
        (min_rv, apply_limit): (Option<i64>, bool),
    ) -> Result<ListResult> {
        tracing_ctx::add_event("Ready", Vec::new());
        let min_rv = match min_rv {
            Some(rv) => rv,
            None => match self.consistent_read_revision().await? {
                Some(rv) => rv,
                None => return self.list_from_storage(key, opts).await,
            },
        };
        match self.wait_fresh(min_rv).await {
            Ok(true) => {}
            Ok(false) => return self.list_from_storage(key, opts).await,
            Err(StorageError::TooLargeResourceVersion { .. })
                if opts.version == ReadVersion::MostRecent =>
            {
                tracing::debug!(key, "consistent read fell back to storage");
                self.shared.write().progress_missed();
                return self.list_from_storage(key, opts).await;
            }
            Err(e) => return Err(e),
        }
        match self.list_from_cache(cache_key, &opts, apply_limit)? {
            Some(result) => Ok(result),
            None => self.list_from_storage(key, opts).await,
        }
    }

    /// Serves a list from the cache; `None` when the cache is not ready.
    fn list_from_cache(
        &self,
        key: &str,
        opts: &ListOptions,
        apply_limit: bool,
    ) -> Result<Option<ListResult>> {
        let cache = self.shared.read();
        if !cache.is_ready() {
            return Ok(None);
        }
        let resource_version = cache.rv();
        if !opts.recursive {
            let found = cache.get(key);
            listed(usize::from(found.is_some()));
            let items: Vec<Object> = found
                .filter(|obj| opts.predicate.matches_stored(obj))
                .cloned()
                .into_iter()
                .collect();
            filtered(items.len());
            return Ok(Some(ListResult {
                items,
                resource_version,
                ..ListResult::default()
            }));
        }
        let limit = opts.limit.filter(|l| apply_limit && *l > 0);
        let page = if opts.predicate.is_everything() {
            if tracing_ctx::recording() {
                listed(cache.range(key).count());
            }
            select(cache.range(key), &opts.predicate, limit)
        } else {
            // Selectors run off the lock so a long list never stalls the feed.
            let entries = cache.range_entries(key);
            drop(cache);
            listed(entries.len());
            let entries = entries.iter().map(|(k, obj)| (&**k, obj));
            select(entries, &opts.predicate, limit)
        };
        filtered(page.items.len());
        let Page {
            items,
            last_key,
            remaining,
        } = page;
        let mut result = ListResult {
            items,
            resource_version,
            ..ListResult::default()
        };
        if let (Some(last), true) = (last_key, remaining > 0) {
            result.continue_token = Some(continue_token::encode(
                &format!("{last}\0"),
                key,
                resource_version,
            )?);
            result.remaining_item_count =
                opts.predicate.is_everything().then_some(remaining as i64);
        }
        Ok(Some(result))
    }

    /// Starts a cache watch; `None` when the cache is not ready.
    fn watch_from_cache(&self, key: String, opts: WatchOptions) -> Option<WatchStream> {
        let cache = self.shared.read();
        if !cache.is_ready() {
            return None;
        }
        let filter = WatchFilter {
            key,
            recursive: opts.recursive,
            predicate: opts.predicate,
        };
        let initial = if opts.resource_version == 0 {
            Initial::State(cache.current_objects(&filter).into_iter())
        } else {
            match cache.events_after(opts.resource_version) {
                Ok(events) => Initial::Events(events.into_iter()),
                Err(e) => return Some(Box::pin(futures::stream::iter([WatchEvent::Error(e)]))),
            }
        };
        let buffer = self
            .shared
            .config
            .watcher_buffer
            .unwrap_or_else(|| suggested_buffer(&cache));
        let stream = self.shared.registry.register(NewWatcher {
            filter,
            start_rv: opts.resource_version.max(cache.rv()),
            allow_bookmarks: opts.allow_bookmarks,
            buffer,
            initial,
        });
        Some(Box::pin(stream))
    }
}

/// One page of a list served from the cache.
struct Page {
    items: Vec<Object>,
    last_key: Option<String>,
    /// Entries after the last selected one (counted only with a limit).
    remaining: usize,
}

/// Selects up to `limit` entries matching `predicate`, in key order.
fn select<'a>(
    mut entries: impl Iterator<Item = (&'a str, &'a Object)>,
    predicate: &Predicate,
    limit: Option<i64>,
) -> Page {
    let mut items = Vec::new();
    let mut last_key = None;
    for (key, obj) in entries.by_ref() {
        if predicate.matches_stored(obj) {
            items.push(obj.clone());
            last_key = Some(key);
            if limit.is_some_and(|l| items.len() as i64 >= l) {
                break;
            }
        }
    }
    Page {
        items,
        last_key: last_key.map(str::to_owned),
        remaining: if limit.is_some() { entries.count() } else { 0 },
    }
}

/// Upstream's `suggestedWatchChannelSize` (events per second the window
/// holds, within 10..=100), doubled: upstream buffers in two channels per
/// watcher, this cacher in one.
fn suggested_buffer(cache: &WatchCache) -> usize {
    let seconds = cache.event_fresh_duration().as_secs().max(1) as usize;
    cache.window_capacity().div_ceil(seconds).clamp(10, 100) * 2
}

/// `key` as a recursive read sees it: the children of `key/`.
fn collection_key(key: &str, recursive: bool) -> std::borrow::Cow<'_, str> {
    if recursive && !key.ends_with('/') {
        format!("{key}/").into()
    } else {
        key.into()
    }
}

impl Drop for Cacher {
    fn drop(&mut self) {
        self.feed.abort();
        self.shared.registry.terminate_all();
    }
}

#[async_trait]
impl Storage for Cacher {
    async fn create(&self, key: &str, obj: Value) -> Result<Object> {
        self.storage.create(key, obj).await
    }

    async fn delete(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: ValidateDeletionFn<'_>,
    ) -> Result<Object> {
        self.storage.delete(key, preconditions, validate).await
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        let cache_key = collection_key(key, opts.recursive);
        if !self.covers(&cache_key) {
            return self.storage.watch(key, opts).await;
        }
        if !self.is_ready() {
            // Upstream answers 429 until the cache is ready; give the first
            // list a moment, then serve the watch from storage.
            let _ = tokio::time::timeout(self.shared.config.fresh_timeout, self.wait_ready()).await;
        }
        let attributes = || self.span_attributes();
        let watching = async {
            match self.watch_from_cache(cache_key.into_owned(), opts.clone()) {
                Some(stream) => Ok(stream),
                None => self.storage.watch(key, opts).await,
            }
        };
        tracing_ctx::in_span("cacher.Watch", attributes, watching).await
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Object>> {
        let min_rv = match opts.version {
            ReadVersion::Any => 0,
            ReadVersion::NotOlderThan(n) => n,
            ReadVersion::MostRecent => {
                if let Some(found) = self.get_most_recent_cached(key, &opts) {
                    return found;
                }
                let known = |revision| self.cached_at(key, revision);
                let found = self
                    .storage
                    .get_latest(key, opts.ignore_not_found, &known)
                    .await?;
                return Ok(found.map(|fresh| self.same_version(key, fresh)));
            }
            ReadVersion::Exact(_) => return self.storage.get(key, opts).await,
        };
        if !self.covers(key) || !self.is_ready() {
            return self.storage.get(key, opts).await;
        }
        let attributes = || {
            vec![
                Attribute::new("audit-id", tracing_ctx::audit_id()),
                Attribute::new("key", key.to_owned()),
                Attribute::new("resource-version", min_rv.to_string()),
            ]
        };
        tracing_ctx::in_span("cacher.Get", attributes, self.get_cached(key, opts, min_rv)).await
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        let cache_key = collection_key(key, opts.recursive);
        let has_continue = opts
            .continue_token
            .as_deref()
            .is_some_and(|t| !t.is_empty());
        let (min_rv, apply_limit) = match opts.version {
            _ if has_continue => return self.list_from_storage(key, opts).await,
            ReadVersion::Exact(_) => return self.list_from_storage(key, opts).await,
            ReadVersion::Any => (Some(0), false),
            ReadVersion::NotOlderThan(n) => (Some(n), true),
            ReadVersion::MostRecent => (None, true),
        };
        if !self.covers(&cache_key) || !self.is_ready() {
            return self.list_from_storage(key, opts).await;
        }
        let attributes = || self.span_attributes();
        let listing = self.get_list_cached(key, &cache_key, opts, (min_rv, apply_limit));
        tracing_ctx::in_span("cacher.GetList", attributes, listing).await
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<&Preconditions>,
        update: UpdateFn<'_>,
    ) -> Result<Object> {
        self.storage
            .guaranteed_update(key, ignore_not_found, preconditions, update)
            .await
    }

    async fn count(&self, key: &str) -> Result<i64> {
        self.storage.count(key).await
    }

    async fn current_revision(&self) -> Result<i64> {
        self.storage.current_revision().await
    }

    async fn health(&self) -> Result<()> {
        self.storage.health().await
    }

    fn is_ready(&self) -> bool {
        Cacher::is_ready(self)
    }

    async fn wait_ready(&self) {
        Cacher::wait_ready(self).await
    }
}

/// Upstream's `cacher.GetList` span events: how many objects the cache
/// holds under the key, and how many of them the list returns.
fn listed(count: usize) {
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    tracing_ctx::add_event(
        "Listed items from cache",
        vec![Attribute::new("count", count)],
    );
}

fn filtered(count: usize) {
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    tracing_ctx::add_event("Filtered items", vec![Attribute::new("count", count)]);
}
