//! The work queue (upstream's `workqueue/queue.go` and
//! `delaying_queue.go`): an item added while queued is queued once; one
//! added while a worker holds it is queued again when that worker calls
//! [`Queue::done`], so no item is processed by two workers at once.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

struct State<T> {
    order: VecDeque<T>,
    /// Items to be processed: queued, or added again while processing.
    dirty: HashSet<T>,
    processing: HashSet<T>,
    /// Delayed items and when each is due (the earliest asked for).
    waiting: HashMap<T, Instant>,
}

pub struct Queue<T> {
    state: Mutex<State<T>>,
    ready: Notify,
    shutdown: CancellationToken,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            state: Mutex::new(State {
                order: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                waiting: HashMap::new(),
            }),
            ready: Notify::new(),
            shutdown: CancellationToken::new(),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + 'static> Queue<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn add(&self, item: T) {
        if self.shutdown.is_cancelled() {
            return;
        }
        let mut s = self.state();
        if !s.dirty.insert(item.clone()) || s.processing.contains(&item) {
            return;
        }
        s.order.push_back(item);
        drop(s);
        self.ready.notify_one();
    }

    /// Adds `item` once `delay` has passed; an item already waiting is
    /// added at the earlier of the two times.
    pub fn add_after(self: &Arc<Self>, item: T, delay: Duration) {
        if delay.is_zero() {
            return self.add(item);
        }
        let due = Instant::now() + delay;
        {
            let mut s = self.state();
            if s.waiting.get(&item).is_some_and(|d| *d <= due) {
                return;
            }
            s.waiting.insert(item.clone(), due);
        }
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = queue.shutdown.cancelled() => {}
                _ = tokio::time::sleep_until(due) => {
                    let mut s = queue.state();
                    // Superseded by an earlier add_after of the same item.
                    if s.waiting.get(&item) == Some(&due) {
                        s.waiting.remove(&item);
                        drop(s);
                        queue.add(item);
                    }
                }
            }
        });
    }

    /// The next item, waiting for one; None once shut down. Hand it back
    /// with [`Queue::done`].
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shutdown.is_cancelled() {
                return None;
            }
            if let Some(item) = self.pop() {
                return Some(item);
            }
            tokio::select! {
                _ = notified => {}
                _ = self.shutdown.cancelled() => return None,
            }
        }
    }

    fn pop(&self) -> Option<T> {
        let mut s = self.state();
        let item = s.order.pop_front()?;
        s.dirty.remove(&item);
        s.processing.insert(item.clone());
        // Another worker may take the next item.
        if !s.order.is_empty() {
            self.ready.notify_one();
        }
        Some(item)
    }

    /// A worker is done with `item`; queued again if added meanwhile.
    pub fn done(&self, item: &T) {
        let mut s = self.state();
        s.processing.remove(item);
        if s.dirty.contains(item) {
            s.order.push_back(item.clone());
            drop(s);
            self.ready.notify_one();
        }
    }

    /// Items waiting to be handed out.
    pub fn len(&self) -> usize {
        self.state().order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands out nothing more: [`Queue::get`] answers None.
    pub fn shut_down(&self) {
        self.shutdown.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn items_are_deduplicated_and_requeued_after_done() {
        let q = Queue::default();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let a = q.get().await.unwrap();
        assert_eq!(a, "a");
        // Added while a worker holds it: held back until done.
        q.add("a");
        q.add("a");
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("b"));
        q.done(&a);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        q.done(&"b");
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_items_come_at_the_earliest_time_asked() {
        let q = Arc::new(Queue::default());
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(5));
        q.add_after("a", Duration::from_secs(8));
        tokio::time::advance(Duration::from_millis(4999)).await;
        tokio::task::yield_now().await;
        assert!(q.is_empty());
        tokio::time::advance(Duration::from_millis(1)).await;
        tokio::task::yield_now().await;
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        tokio::time::advance(Duration::from_secs(10)).await;
        tokio::task::yield_now().await;
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn shut_down_wakes_every_waiting_worker() {
        let q: Arc<Queue<&str>> = Arc::default();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        q.shut_down();
        for w in workers {
            assert_eq!(w.await.unwrap(), None);
        }
        q.add("a");
        assert!(q.is_empty());
    }
}
