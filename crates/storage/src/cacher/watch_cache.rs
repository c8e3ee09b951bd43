//! The cacher's in-memory state (upstream's `watchCache` and
//! `watchCacheHistory`): the current objects ordered by key, the revision the
//! state is at, and a sliding window of recent events from which watches
//! resume. Objects are shared by `Arc` between the store, the window and the
//! events handed to watchers, so memory stays proportional to the live data.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::StorageError;
use crate::interface::{Object, Predicate, WatchEvent};
use crate::kv::KeyValue;
use crate::object::StoredObject;

/// One change as the cache saw it, shared by every watcher it is sent to.
#[derive(Debug)]
pub(crate) struct CacheEvent {
    /// The revision of the write.
    pub rv: i64,
    pub key: Arc<str>,
    pub change: Change,
    /// When the cache received it; drives the window's resizing.
    recorded: Instant,
}

#[derive(Debug)]
pub(crate) enum Change {
    /// A create or an update; `prev` is the object the cache held before.
    Put {
        obj: Object,
        prev: Option<Object>,
        /// `prev` re-versioned to `rv`, built once for watchers that see
        /// this update leave their selection.
        prev_at_rv: OnceLock<Object>,
    },
    /// A deletion; the object is the last state with the deletion's revision.
    Delete { obj: Object },
}

/// Which keys and objects one watch is interested in.
#[derive(Debug, Clone)]
pub(crate) struct WatchFilter {
    pub key: String,
    pub recursive: bool,
    pub predicate: Predicate,
}

impl WatchFilter {
    pub fn covers_key(&self, key: &str) -> bool {
        if self.recursive {
            key.starts_with(&self.key)
        } else {
            key == self.key
        }
    }
}

impl CacheEvent {
    /// The event this change means for a watcher with `filter` (upstream's
    /// `convertToWatchEvent`): entering the selection is Added, leaving it is
    /// Deleted carrying the old object at the new revision.
    pub fn to_watch_event(&self, filter: &WatchFilter) -> Option<WatchEvent> {
        if !filter.covers_key(&self.key) {
            return None;
        }
        match &self.change {
            Change::Delete { obj } => filter
                .predicate
                .matches_stored(obj)
                .then(|| WatchEvent::Deleted(obj.clone())),
            Change::Put { obj, prev, .. } => {
                let now = filter.predicate.matches_object(obj);
                let before = prev
                    .as_ref()
                    .is_some_and(|p| filter.predicate.matches_stored(p));
                match (now, before) {
                    (true, false) => Some(WatchEvent::Added(obj.clone())),
                    (true, true) => Some(WatchEvent::Modified(obj.clone())),
                    (false, true) => self.prev_at_rv().map(WatchEvent::Deleted),
                    (false, false) => None,
                }
            }
        }
    }

    fn prev_at_rv(&self) -> Option<Object> {
        let Change::Put {
            prev: Some(prev),
            prev_at_rv,
            ..
        } = &self.change
        else {
            return None;
        };
        Some(
            prev_at_rv
                .get_or_init(|| {
                    let copy = prev.peek(|prev| with_resource_version(prev, self.rv));
                    Arc::new(copy.into())
                })
                .clone(),
        )
    }
}

/// The revision `obj`'s `metadata.resourceVersion` names (read without
/// keeping a tree: the cache holds objects as JSON).
fn revision_of(obj: &StoredObject) -> Option<i64> {
    obj.metadata_str("resourceVersion")?.parse().ok()
}

/// A copy of `obj` with `metadata.resourceVersion` set to `rv`.
fn with_resource_version(obj: &Value, rv: i64) -> Value {
    let mut copy = obj.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        crate::versioner::stamp(meta, rv);
    }
    copy
}

/// Bounds of the event window (upstream's watch cache capacity settings).
#[derive(Debug, Clone, Copy)]
pub struct WindowConfig {
    /// The window never shrinks below this many events.
    pub lower_bound: usize,
    /// The window never grows beyond this many events.
    pub upper_bound: usize,
    /// The window grows while its oldest event is younger than this and
    /// shrinks when most of it is older (upstream's eventFreshDuration).
    pub event_fresh_duration: Duration,
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            lower_bound: 100,
            upper_bound: 100 * 1024,
            // Upstream: the bookmark frequency (1 min) plus 15 s.
            event_fresh_duration: Duration::from_secs(75),
        }
    }
}

/// The recent events, oldest first, with an adaptive capacity.
#[derive(Debug)]
struct Window {
    events: VecDeque<Arc<CacheEvent>>,
    capacity: usize,
    config: WindowConfig,
    /// Whether an event was dropped since the last re-list: until then the
    /// window covers everything after the list's revision.
    dropped_since_relist: bool,
}

impl Window {
    fn new(config: WindowConfig) -> Self {
        let lower = config.lower_bound.max(1);
        let config = WindowConfig {
            lower_bound: lower,
            upper_bound: config.upper_bound.max(lower),
            ..config
        };
        Window {
            events: VecDeque::with_capacity(lower),
            capacity: lower,
            config,
            dropped_since_relist: false,
        }
    }

    fn push(&mut self, event: Arc<CacheEvent>) {
        self.resize(event.recorded);
        while self.events.len() >= self.capacity {
            self.events.pop_front();
            self.dropped_since_relist = true;
        }
        self.events.push_back(event);
    }

    /// Upstream's `resizeCacheLocked`: double a full window whose oldest
    /// event is still fresh; halve it when even its newest quarter is stale.
    fn resize(&mut self, now: Instant) {
        if self.events.len() < self.capacity {
            return;
        }
        let fresh = self.config.event_fresh_duration;
        let age = |event: &CacheEvent| now.saturating_duration_since(event.recorded);
        if self.events.front().is_some_and(|e| age(e) < fresh) {
            self.capacity = (self.capacity * 2).min(self.config.upper_bound);
            return;
        }
        let quarter = self.events.len() - self.capacity / 4;
        if self.events.get(quarter).is_some_and(|e| age(e) > fresh) {
            let smaller = (self.capacity / 2).max(self.config.lower_bound);
            if smaller < self.capacity {
                let excess = self.events.len().saturating_sub(smaller);
                self.events.drain(..excess);
                self.dropped_since_relist |= excess > 0;
                self.capacity = smaller;
                self.events.shrink_to(smaller);
            }
        }
    }

    fn reset(&mut self) {
        self.events.clear();
        self.dropped_since_relist = false;
    }
}

/// One object the cache holds, with the revision its resourceVersion
/// names: lists from storage compare it for every key they read, which
/// would otherwise look into every object's metadata.
#[derive(Debug)]
struct Held {
    obj: Object,
    rv: i64,
}

/// The cached state of one resource.
#[derive(Debug)]
pub(crate) struct WatchCache {
    objects: BTreeMap<Arc<str>, Held>,
    window: Window,
    /// Every event up to this revision has been applied.
    rv: i64,
    /// The revision of the last re-list.
    list_rv: i64,
    /// False until the first list, and again while re-listing.
    ready: bool,
    progress_reported: bool,
}

impl WatchCache {
    pub fn new(config: WindowConfig) -> Self {
        WatchCache {
            objects: BTreeMap::new(),
            window: Window::new(config),
            rv: 0,
            list_rv: 0,
            ready: false,
            progress_reported: false,
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready
    }

    pub fn rv(&self) -> i64 {
        self.rv
    }

    pub fn window_capacity(&self) -> usize {
        self.window.capacity
    }

    pub fn event_fresh_duration(&self) -> Duration {
        self.window.config.event_fresh_duration
    }

    /// Replaces the state with a fresh list taken at `rv` and becomes ready.
    pub fn replace(&mut self, items: impl IntoIterator<Item = (String, Object)>, rv: i64) {
        let held = |(key, obj): (String, Object)| {
            let rv = revision_of(&obj).unwrap_or_default();
            (Arc::from(key), Held { obj, rv })
        };
        self.objects = items.into_iter().map(held).collect();
        self.window.reset();
        self.rv = rv;
        self.list_rv = rv;
        self.ready = true;
    }

    /// Marks the state as stale (a re-list is under way).
    pub fn set_unready(&mut self) {
        self.ready = false;
    }

    /// Every event up to `rv` has been seen (a progress notification).
    pub fn advance(&mut self, rv: i64) {
        // Progress past the last event shows the feed reports revisions of
        // writes elsewhere, which is what lets consistent reads wait.
        self.progress_reported |= rv > self.rv;
        self.rv = self.rv.max(rv);
    }

    /// Whether the feed has reported progress beyond its own events since
    /// a consistent read last waited for it in vain (upstream checks the
    /// backend's RequestWatchProgress support instead).
    pub fn progress_reported(&self) -> bool {
        self.progress_reported
    }

    /// A consistent read waited for progress that did not come: stop waiting
    /// until the feed reports progress again.
    pub fn progress_missed(&mut self) {
        self.progress_reported = false;
    }

    /// Applies a create/update (`deleted == false`) or a deletion at `rv` and
    /// records it in the window.
    pub fn apply(&mut self, key: &str, obj: Object, deleted: bool, rv: i64) -> Arc<CacheEvent> {
        let key: Arc<str> = match self.objects.get_key_value(key) {
            Some((existing, _)) => existing.clone(),
            None => Arc::from(key),
        };
        let change = if deleted {
            self.objects.remove(&key);
            Change::Delete { obj }
        } else {
            let held = Held {
                obj: obj.clone(),
                rv,
            };
            let prev = self.objects.insert(key.clone(), held);
            Change::Put {
                obj,
                prev: prev.map(|held| held.obj),
                prev_at_rv: OnceLock::new(),
            }
        };
        let event = Arc::new(CacheEvent {
            rv,
            key,
            change,
            recorded: Instant::now(),
        });
        self.window.push(event.clone());
        self.rv = self.rv.max(rv);
        event
    }

    pub fn get(&self, key: &str) -> Option<&Object> {
        self.objects.get(key).map(|held| &held.obj)
    }

    /// The object held for `key` when it is the version written at
    /// `revision`.
    pub fn get_at(&self, key: &str, revision: i64) -> Option<&Object> {
        let held = self.objects.get(key)?;
        (held.rv == revision).then_some(&held.obj)
    }

    /// For each of `kvs` (read from storage, in key order), the object held
    /// for its key when it is the version written at the kv's mod revision
    /// (a [`crate::KnownVersions`] answer). One walk of the held keys beside
    /// the batch: kvs out of key order are only found less often.
    pub fn versions_of(&self, kvs: &[KeyValue]) -> Vec<Option<Object>> {
        let Some(first) = kvs.first() else {
            return Vec::new();
        };
        let from = Bound::Included(first.key.as_str());
        let mut walk = self
            .objects
            .range::<str, _>((from, Bound::Unbounded))
            .peekable();
        let mut find = |kv: &KeyValue| {
            while walk.next_if(|(key, _)| ***key < *kv.key).is_some() {}
            let (key, held) = walk.peek()?;
            let same = ***key == *kv.key && held.rv == kv.mod_revision;
            same.then(|| Arc::clone(&held.obj))
        };
        kvs.iter().map(&mut find).collect()
    }

    /// The objects under `prefix`, in key order.
    pub fn range<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a Object)> {
        self.objects
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .map(|(key, held)| (&**key, &held.obj))
            .take_while(move |(key, _)| key.starts_with(prefix))
    }

    /// The entries under `prefix`, copied out (pointers only) so callers can
    /// filter them without holding the cache.
    pub fn range_entries(&self, prefix: &str) -> Vec<(Arc<str>, Object)> {
        self.objects
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(key, held)| (key.clone(), held.obj.clone()))
            .collect()
    }

    /// The objects a watch from "now" starts with: everything `filter`
    /// covers (the predicate is applied later, off the lock).
    pub fn current_objects(&self, filter: &WatchFilter) -> Vec<Object> {
        if filter.recursive {
            self.range(&filter.key)
                .map(|(_, obj)| obj.clone())
                .collect()
        } else {
            self.get(&filter.key).cloned().into_iter().collect()
        }
    }

    /// The buffered events after `rv` (upstream's `GetIntervalLocked`);
    /// `TooOldResourceVersion` when the window no longer reaches back to it.
    pub fn events_after(&self, rv: i64) -> Result<Vec<Arc<CacheEvent>>, StorageError> {
        let oldest = match self.window.events.front() {
            Some(first) if self.window.dropped_since_relist => first.rv,
            _ => self.list_rv + 1,
        };
        if rv < oldest - 1 {
            return Err(StorageError::TooOldResourceVersion {
                requested: rv,
                compacted: oldest - 1,
            });
        }
        let events = &self.window.events;
        let start = events.partition_point(|e| e.rv <= rv);
        Ok(events.range(start..).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(name: &str, rv: i64, label: &str) -> Object {
        Arc::new(
            json!({
                "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv.to_string(),
                             "labels": {"app": label}}
            })
            .into(),
        )
    }

    fn key(name: &str) -> String {
        format!("/pods/ns/{name}")
    }

    fn ready_cache(config: WindowConfig) -> WatchCache {
        let mut cache = WatchCache::new(config);
        cache.replace(vec![(key("a"), pod("a", 5, "x"))], 10);
        cache
    }

    fn app_filter(value: &'static str) -> WatchFilter {
        WatchFilter {
            key: "/pods/".into(),
            recursive: true,
            predicate: Predicate::new(move |o| o["metadata"]["labels"]["app"] == value),
        }
    }

    #[test]
    fn apply_tracks_state_and_previous_objects() {
        let mut cache = ready_cache(WindowConfig::default());
        let event = cache.apply(&key("a"), pod("a", 11, "y"), false, 11);
        assert_eq!(cache.rv(), 11);
        match &event.change {
            Change::Put {
                prev: Some(prev), ..
            } => {
                assert_eq!(prev["metadata"]["resourceVersion"], "5")
            }
            other => panic!("unexpected change {other:?}"),
        }
        cache.apply(&key("b"), pod("b", 12, "x"), false, 12);
        cache.apply(&key("a"), pod("a", 13, "y"), true, 13);
        let keys: Vec<_> = cache.range("/pods/").map(|(k, _)| k.to_string()).collect();
        assert_eq!(keys, vec![key("b")]);
        assert!(cache.range("/pods/other/").next().is_none());
    }

    fn kv(name: &str, mod_revision: i64) -> KeyValue {
        KeyValue {
            key: key(name),
            value: bytes::Bytes::new(),
            create_revision: 1,
            mod_revision,
        }
    }

    #[test]
    fn versions_of_finds_held_objects_at_their_revisions() {
        let mut cache = ready_cache(WindowConfig::default());
        for (name, rv) in [("b", 11), ("c", 12), ("e", 13), ("g", 14)] {
            cache.apply(&key(name), pod(name, rv, "x"), false, rv);
        }
        // "a" held at 5, "b" newer than read, "d" not held, "e" held,
        // "f" not held, "g" held, "h" past every held key.
        let kvs = [
            kv("a", 5),
            kv("b", 9),
            kv("d", 12),
            kv("e", 13),
            kv("f", 13),
            kv("g", 14),
            kv("h", 15),
        ];
        let found = cache.versions_of(&kvs);
        assert_eq!(found.len(), kvs.len());
        let held = |name: &str| cache.get(&key(name)).cloned();
        for (kv, found) in kvs.iter().zip(&found) {
            let name = kv.key.rsplit('/').next().unwrap();
            match (name, found) {
                ("a" | "e" | "g", Some(obj)) => assert!(Arc::ptr_eq(obj, &held(name).unwrap())),
                ("b" | "d" | "f" | "h", None) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(Arc::ptr_eq(
            cache.get_at(&key("e"), 13).unwrap(),
            &held("e").unwrap()
        ));
        assert!(cache.get_at(&key("e"), 12).is_none() && cache.get_at(&key("d"), 12).is_none());
        // A batch starting past the held keys, and an empty one.
        assert_eq!(cache.versions_of(&[kv("z", 1)]), vec![None]);
        assert!(cache.versions_of(&[]).is_empty());
        // Out of key order: nothing wrong is found, "a" after "g" is missed.
        let found = cache.versions_of(&[kv("g", 14), kv("a", 5)]);
        assert!(found[0].is_some() && found[1].is_none());
    }

    #[test]
    fn only_progress_past_the_last_event_counts_as_reported() {
        let mut cache = ready_cache(WindowConfig::default());
        cache.apply(&key("b"), pod("b", 11, "x"), false, 11);
        // A bookmark at the last event's revision says nothing new.
        cache.advance(11);
        assert!(!cache.progress_reported());
        cache.advance(15);
        assert!(cache.progress_reported());
        assert_eq!(cache.rv(), 15);
        cache.progress_missed();
        assert!(!cache.progress_reported());
        cache.advance(12);
        assert!(!cache.progress_reported());
        assert_eq!(cache.rv(), 15);
    }

    #[test]
    fn predicate_transitions_follow_upstream() {
        let mut cache = ready_cache(WindowConfig::default());
        let to_y = cache.apply(&key("a"), pod("a", 11, "y"), false, 11);
        // Leaving the selection: Deleted with the old object at the new revision.
        match to_y.to_watch_event(&app_filter("x")) {
            Some(WatchEvent::Deleted(obj)) => {
                assert_eq!(obj["metadata"]["resourceVersion"], "11");
                assert_eq!(obj["metadata"]["labels"]["app"], "x");
            }
            other => panic!("unexpected {other:?}"),
        }
        // Entering the selection: Added.
        assert!(matches!(
            to_y.to_watch_event(&app_filter("y")),
            Some(WatchEvent::Added(_))
        ));
        // Neither before nor after: nothing.
        assert!(to_y.to_watch_event(&app_filter("z")).is_none());
        let stay = cache.apply(&key("a"), pod("a", 12, "y"), false, 12);
        assert!(matches!(
            stay.to_watch_event(&app_filter("y")),
            Some(WatchEvent::Modified(_))
        ));
        let gone = cache.apply(&key("a"), pod("a", 13, "y"), true, 13);
        assert!(matches!(
            gone.to_watch_event(&app_filter("y")),
            Some(WatchEvent::Deleted(_))
        ));
        assert!(gone.to_watch_event(&app_filter("x")).is_none());
        // A filter on another key sees nothing.
        let single = WatchFilter {
            key: key("b"),
            recursive: false,
            predicate: Predicate::everything(),
        };
        assert!(stay.to_watch_event(&single).is_none());
    }

    #[test]
    fn events_after_respects_the_window_start() {
        let config = WindowConfig {
            lower_bound: 4,
            upper_bound: 4,
            event_fresh_duration: Duration::from_secs(75),
        };
        let mut cache = ready_cache(config);
        // Before anything is dropped the window reaches back to the list.
        assert!(cache.events_after(10).unwrap().is_empty());
        assert!(matches!(
            cache.events_after(9),
            Err(StorageError::TooOldResourceVersion {
                requested: 9,
                compacted: 10
            })
        ));
        for rv in 11..=16 {
            cache.apply(&key("a"), pod("a", rv, "x"), false, rv);
        }
        // Capacity 4: events 13..=16 remain.
        let rvs: Vec<_> = cache
            .events_after(12)
            .unwrap()
            .iter()
            .map(|e| e.rv)
            .collect();
        assert_eq!(rvs, vec![13, 14, 15, 16]);
        let rvs: Vec<_> = cache
            .events_after(14)
            .unwrap()
            .iter()
            .map(|e| e.rv)
            .collect();
        assert_eq!(rvs, vec![15, 16]);
        assert!(cache.events_after(16).unwrap().is_empty());
        assert!(cache.events_after(30).unwrap().is_empty());
        assert!(matches!(
            cache.events_after(11),
            Err(StorageError::TooOldResourceVersion {
                requested: 11,
                compacted: 12
            })
        ));
        // A re-list starts a new window.
        cache.replace(Vec::new(), 20);
        assert!(cache.events_after(20).unwrap().is_empty());
        assert!(cache.events_after(16).is_err());
    }

    #[test]
    fn window_grows_while_fresh_and_shrinks_when_stale() {
        let config = WindowConfig {
            lower_bound: 2,
            upper_bound: 8,
            event_fresh_duration: Duration::from_millis(50),
        };
        let mut cache = ready_cache(config);
        for rv in 11..=30 {
            cache.apply(&key("a"), pod("a", rv, "x"), false, rv);
        }
        assert_eq!(cache.window_capacity(), 8);
        std::thread::sleep(Duration::from_millis(80));
        cache.apply(&key("a"), pod("a", 31, "x"), false, 31);
        assert_eq!(cache.window_capacity(), 4);
        let rvs: Vec<_> = cache
            .events_after(27)
            .unwrap()
            .iter()
            .map(|e| e.rv)
            .collect();
        assert_eq!(rvs, vec![28, 29, 30, 31]);
    }
}
