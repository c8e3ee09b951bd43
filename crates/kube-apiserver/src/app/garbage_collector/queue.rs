//! A work queue of object uids (client-go's workqueue, reduced): an item
//! queued twice is processed once, and an item queued again while a worker
//! holds it is processed again after that worker is done, never by two
//! workers at once.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

#[derive(Default)]
struct State {
    order: VecDeque<String>,
    queued: HashSet<String>,
    active: HashSet<String>,
    /// Queued again while active.
    again: HashSet<String>,
}

#[derive(Default)]
pub struct Queue {
    state: Mutex<State>,
    ready: Notify,
}

impl Queue {
    pub fn add(&self, item: String) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        if s.active.contains(&item) {
            s.again.insert(item);
        } else if s.queued.insert(item.clone()) {
            s.order.push_back(item);
            drop(s);
            self.ready.notify_one();
        }
    }

    /// Queues `item` again after `delay` (a failed attempt).
    pub fn add_after(self: &Arc<Self>, item: String, delay: Duration) {
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.add(item);
        });
    }

    /// The next item, waiting for one; hand it back with [`Queue::done`].
    pub async fn next(&self) -> String {
        loop {
            if let Some(item) = self.pop() {
                return item;
            }
            self.ready.notified().await;
        }
    }

    fn pop(&self) -> Option<String> {
        let mut s = self.state.lock().ok()?;
        let item = s.order.pop_front()?;
        s.queued.remove(&item);
        s.active.insert(item.clone());
        // Another worker may take the next item.
        if !s.order.is_empty() {
            self.ready.notify_one();
        }
        Some(item)
    }

    pub fn done(&self, item: &str) {
        let again = self.state.lock().is_ok_and(|mut s| {
            s.active.remove(item);
            s.again.remove(item)
        });
        if again {
            self.add(item.to_owned());
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.state.lock().map(|s| s.order.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn items_are_deduplicated_and_requeued_after_done() {
        let q = Queue::default();
        q.add("a".into());
        q.add("a".into());
        q.add("b".into());
        assert_eq!(q.len(), 2);
        let a = q.next().await;
        assert_eq!(a, "a");
        // Queued while active: held back until done.
        q.add("a".into());
        assert_eq!(q.len(), 1);
        q.done(&a);
        assert_eq!(q.len(), 2);
        assert_eq!(q.next().await, "b");
        assert_eq!(q.next().await, "a");
    }
}
