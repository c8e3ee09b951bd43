//! Fan-out of cache events to watchers (upstream's `cacheWatcher` and the
//! cacher's dispatch loop). Each watcher has a bounded buffer; events are
//! filtered and converted once, at dispatch, so a watcher only wakes for
//! what it selected. A watcher whose buffer stays full past the dispatch
//! time budget is terminated — its stream ends and the client re-lists — so
//! one slow reader never holds the others back.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::watch_cache::{CacheEvent, WatchFilter};
use crate::interface::{Object, WatchEvent};

/// One registered watcher, as the dispatcher sees it.
struct Watcher {
    id: u64,
    sender: mpsc::Sender<WatchEvent>,
    filter: WatchFilter,
    /// Events at or below this revision were part of the initial events.
    start_rv: i64,
    allow_bookmarks: bool,
    /// When the next periodic bookmark is due (ms since the registry's epoch).
    next_bookmark_ms: AtomicU64,
    state: Arc<WatcherState>,
}

/// What the watcher's stream and the dispatcher share.
#[derive(Default)]
struct WatcherState {
    /// Set when the cacher ends the watch (unresponsive reader, re-list or
    /// shutdown): the stream ends without draining its buffer, as upstream.
    terminated: AtomicBool,
}

/// Upstream's `timeBudget`: how long one dispatch may wait for blocked
/// watchers. It refills at `refresh` per second up to `max`.
#[derive(Debug)]
pub(crate) struct TimeBudget {
    budget: Duration,
    max: Duration,
    refresh_per_second: Duration,
    last: Instant,
}

impl TimeBudget {
    pub fn new(max: Duration, refresh_per_second: Duration) -> Self {
        TimeBudget {
            budget: Duration::ZERO,
            max,
            refresh_per_second,
            last: Instant::now(),
        }
    }

    pub fn take_available(&mut self) -> Duration {
        let now = Instant::now();
        let refill = self
            .refresh_per_second
            .mul_f64(now.saturating_duration_since(self.last).as_secs_f64());
        self.budget = (self.budget + refill).min(self.max);
        self.last = now;
        std::mem::take(&mut self.budget)
    }

    pub fn return_unused(&mut self, unused: Duration) {
        self.budget = (self.budget + unused).min(self.max);
    }
}

/// How a new watcher starts.
pub(crate) struct NewWatcher {
    pub filter: WatchFilter,
    pub start_rv: i64,
    pub allow_bookmarks: bool,
    pub buffer: usize,
    pub initial: Initial,
}

/// The events a watcher yields before live ones.
pub(crate) enum Initial {
    /// The state at `start_rv`, sent as Added (predicate applied lazily).
    State(std::vec::IntoIter<Object>),
    /// Buffered events after the requested revision.
    Events(std::vec::IntoIter<Arc<CacheEvent>>),
}

/// The set of live watchers of one cacher.
pub(crate) struct Registry {
    watchers: Mutex<HashMap<u64, Arc<Watcher>>>,
    next_id: AtomicU64,
    epoch: Instant,
    bookmark_frequency: Duration,
}

impl Registry {
    pub fn new(bookmark_frequency: Duration) -> Self {
        Registry {
            watchers: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
            bookmark_frequency,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<Watcher>>> {
        self.watchers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn next_bookmark_ms(&self) -> u64 {
        let frequency = u64::try_from(self.bookmark_frequency.as_millis()).unwrap_or(u64::MAX);
        self.now_ms().saturating_add(frequency)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Registers a watcher and returns its stream. Call it while holding the
    /// cache's read lock, so no event falls between the initial events and
    /// the live ones (duplicates are dropped by `start_rv`).
    pub fn register(self: &Arc<Self>, new: NewWatcher) -> CacheWatchStream {
        let (sender, receiver) = mpsc::channel(new.buffer.max(1));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(WatcherState::default());
        let watcher = Arc::new(Watcher {
            id,
            sender,
            filter: new.filter.clone(),
            start_rv: new.start_rv,
            allow_bookmarks: new.allow_bookmarks,
            next_bookmark_ms: AtomicU64::new(self.next_bookmark_ms()),
            state: state.clone(),
        });
        self.lock().insert(id, watcher);
        CacheWatchStream {
            initial: new.initial,
            filter: new.filter,
            receiver,
            state,
            registry: Arc::downgrade(self),
            id,
        }
    }

    fn snapshot(&self) -> Vec<Arc<Watcher>> {
        self.lock().values().cloned().collect()
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    fn terminate(&self, watcher: &Watcher) {
        watcher.state.terminated.store(true, Ordering::Release);
        self.remove(watcher.id);
    }

    /// Ends every watch (re-list or shutdown).
    pub fn terminate_all(&self) {
        let watchers: Vec<_> = self.lock().drain().map(|(_, w)| w).collect();
        for watcher in watchers {
            watcher.state.terminated.store(true, Ordering::Release);
        }
    }

    /// Sends `event` to every interested watcher. Watchers with room get it
    /// at once; the rest are waited for within `budget`, and those still
    /// full when it runs out are terminated.
    pub async fn dispatch(&self, event: &CacheEvent, budget: &Mutex<TimeBudget>) {
        let mut blocked = Vec::new();
        for watcher in self.snapshot() {
            if event.rv <= watcher.start_rv {
                continue;
            }
            let Some(watch_event) = event.to_watch_event(&watcher.filter) else {
                continue;
            };
            match watcher.sender.try_send(watch_event) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(watch_event)) => {
                    blocked.push((watcher, watch_event))
                }
                Err(mpsc::error::TrySendError::Closed(_)) => self.remove(watcher.id),
            }
        }
        if blocked.is_empty() {
            return;
        }
        let available = lock_budget(budget).take_available();
        let started = Instant::now();
        let deadline = started + available;
        for (watcher, watch_event) in blocked {
            match tokio::time::timeout_at(deadline, watcher.sender.send(watch_event)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => self.remove(watcher.id),
                Err(_) => {
                    tracing::debug!(
                        key = %watcher.filter.key,
                        "terminating an unresponsive watcher whose buffer stayed full"
                    );
                    self.terminate(&watcher);
                }
            }
        }
        lock_budget(budget).return_unused(available.saturating_sub(started.elapsed()));
    }

    /// Sends a bookmark at `rv` to every watcher that asked for bookmarks and
    /// whose next one is due; never blocks (upstream drops a bookmark for a
    /// full watcher and tries again later).
    pub fn dispatch_bookmarks(&self, rv: i64) {
        let now = self.now_ms();
        for watcher in self.snapshot() {
            if !watcher.allow_bookmarks
                || rv <= watcher.start_rv
                || watcher.next_bookmark_ms.load(Ordering::Relaxed) > now
            {
                continue;
            }
            match watcher.sender.try_send(WatchEvent::Bookmark(rv)) {
                Ok(()) => watcher
                    .next_bookmark_ms
                    .store(self.next_bookmark_ms(), Ordering::Relaxed),
                Err(mpsc::error::TrySendError::Full(_)) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => self.remove(watcher.id),
            }
        }
    }
}

fn lock_budget(budget: &Mutex<TimeBudget>) -> MutexGuard<'_, TimeBudget> {
    budget.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The stream a cache watch returns: its initial events, then live ones.
pub(crate) struct CacheWatchStream {
    initial: Initial,
    filter: WatchFilter,
    receiver: mpsc::Receiver<WatchEvent>,
    state: Arc<WatcherState>,
    registry: std::sync::Weak<Registry>,
    id: u64,
}

impl CacheWatchStream {
    fn next_initial(&mut self) -> Option<WatchEvent> {
        match &mut self.initial {
            Initial::State(objects) => objects
                .find(|obj| self.filter.predicate.matches_stored(obj))
                .map(WatchEvent::Added),
            Initial::Events(events) => events.find_map(|e| e.to_watch_event(&self.filter)),
        }
    }
}

impl Stream for CacheWatchStream {
    type Item = WatchEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        let this = self.get_mut();
        if this.state.terminated.load(Ordering::Acquire) {
            return Poll::Ready(None);
        }
        if let Some(event) = this.next_initial() {
            return Poll::Ready(Some(event));
        }
        match this.receiver.poll_recv(cx) {
            // A terminated watcher ends without draining what is buffered.
            Poll::Ready(Some(_)) if this.state.terminated.load(Ordering::Acquire) => {
                Poll::Ready(None)
            }
            other => other,
        }
    }
}

impl Drop for CacheWatchStream {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.remove(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::{FutureExt, StreamExt};
    use serde_json::json;

    use super::super::watch_cache::{WatchCache, WindowConfig};
    use super::*;
    use crate::interface::Predicate;

    fn obj(rv: i64) -> Object {
        Arc::new(json!({"metadata": {"name": "a", "resourceVersion": rv.to_string()}}).into())
    }

    fn watcher(start_rv: i64, buffer: usize, allow_bookmarks: bool) -> NewWatcher {
        NewWatcher {
            filter: WatchFilter {
                key: "/p/".into(),
                recursive: true,
                predicate: Predicate::everything(),
            },
            start_rv,
            allow_bookmarks,
            buffer,
            initial: Initial::Events(Vec::new().into_iter()),
        }
    }

    fn no_budget() -> Mutex<TimeBudget> {
        Mutex::new(TimeBudget::new(Duration::ZERO, Duration::ZERO))
    }

    #[tokio::test]
    async fn dispatch_skips_what_the_initial_events_covered() {
        let registry = Arc::new(Registry::new(Duration::from_secs(60)));
        let mut cache = WatchCache::new(WindowConfig::default());
        cache.replace(Vec::new(), 1);
        let covered = cache.apply("/p/a", obj(5), false, 5);
        let fresh = cache.apply("/p/a", obj(6), false, 6);
        let mut stream = registry.register(watcher(5, 4, false));
        registry.dispatch(&covered, &no_budget()).await;
        registry.dispatch(&fresh, &no_budget()).await;
        match stream.next().await {
            Some(WatchEvent::Modified(o)) => assert_eq!(o["metadata"]["resourceVersion"], "6"),
            other => panic!("unexpected {other:?}"),
        }
        assert!(
            stream.next().now_or_never().is_none(),
            "nothing else is queued"
        );
        drop(stream);
        assert_eq!(registry.len(), 0);
    }

    #[tokio::test]
    async fn a_full_watcher_is_terminated_without_draining() {
        let registry = Arc::new(Registry::new(Duration::from_secs(60)));
        let mut cache = WatchCache::new(WindowConfig::default());
        cache.replace(Vec::new(), 1);
        let mut slow = registry.register(watcher(1, 1, false));
        let mut fast = registry.register(watcher(1, 1, false));
        for rv in 2..=3 {
            let event = cache.apply("/p/a", obj(rv), false, rv);
            registry.dispatch(&event, &no_budget()).await;
            // The fast watcher reads each event as it comes.
            assert!(matches!(
                fast.next().await,
                Some(WatchEvent::Added(_) | WatchEvent::Modified(_))
            ));
        }
        assert_eq!(registry.len(), 1);
        // The slow one had an event buffered, but its stream just ends.
        assert!(slow.next().await.is_none());
    }

    #[tokio::test]
    async fn bookmarks_go_to_watchers_that_asked_once_due() {
        let registry = Arc::new(Registry::new(Duration::ZERO));
        let mut asked = registry.register(watcher(5, 4, true));
        let mut silent = registry.register(watcher(5, 4, false));
        // Not past the watcher's start: nothing to report.
        registry.dispatch_bookmarks(5);
        registry.dispatch_bookmarks(7);
        assert!(matches!(asked.next().await, Some(WatchEvent::Bookmark(7))));
        assert!(asked.next().now_or_never().is_none());
        assert!(silent.next().now_or_never().is_none());
    }

    #[tokio::test]
    async fn time_budget_refills_up_to_its_maximum() {
        let mut budget = TimeBudget::new(Duration::from_millis(100), Duration::from_millis(50));
        assert!(budget.take_available() < Duration::from_millis(5));
        tokio::time::sleep(Duration::from_millis(200)).await;
        let taken = budget.take_available();
        assert!(
            taken >= Duration::from_millis(9) && taken <= Duration::from_millis(20),
            "{taken:?}"
        );
        budget.return_unused(Duration::from_secs(1));
        assert_eq!(budget.take_available(), Duration::from_millis(100));
        assert!(budget.take_available() < Duration::from_millis(5));
    }
}
