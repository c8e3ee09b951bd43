//! A [`Queue`] with rate-limited re-adds (upstream's
//! `workqueue/rate_limiting_queue.go`).

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::default_rate_limiters::{default_controller_rate_limiter, RateLimiter};
use super::queue::Queue;

pub struct RateLimitingQueue<T> {
    queue: Arc<Queue<T>>,
    limiter: Box<dyn RateLimiter<T>>,
}

impl<T: Clone + Eq + Hash + Debug + Send + Sync + 'static> RateLimitingQueue<T> {
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Arc<Self> {
        Arc::new(RateLimitingQueue {
            queue: Arc::default(),
            limiter: Box::new(limiter),
        })
    }

    /// With [`default_controller_rate_limiter`].
    pub fn with_default_limiter() -> Arc<Self> {
        Self::new(default_controller_rate_limiter())
    }

    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay);
    }

    /// Adds `item` now and every `period` until `stop`, on a task of its
    /// own (the `wait.PollImmediateUntil(period, add)` of controllers that
    /// recheck on a timer).
    pub fn add_every(self: &Arc<Self>, item: T, period: Duration, stop: CancellationToken) {
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(period);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = interval.tick() => match queue.upgrade() {
                        Some(queue) => queue.add(item.clone()),
                        None => return,
                    },
                }
            }
        });
    }

    /// Adds `item` after the wait its failures so far call for.
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Clears `item`'s failures.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn shut_down(&self) {
        self.queue.shut_down();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn add_every_adds_now_and_each_period_until_stopped() {
        let queue = RateLimitingQueue::<&str>::with_default_limiter();
        let stop = CancellationToken::new();
        queue.add_every("key", Duration::from_secs(60), stop.clone());
        assert_eq!(queue.get().await, Some("key"));
        queue.done(&"key");
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert!(queue.is_empty());
        tokio::time::sleep(Duration::from_secs(1)).await;
        tokio::task::yield_now().await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("key"));
        queue.done(&"key");
        stop.cancel();
        tokio::time::sleep(Duration::from_secs(120)).await;
        assert!(queue.is_empty());
    }
}
