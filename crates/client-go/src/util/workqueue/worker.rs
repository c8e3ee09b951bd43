//! A controller's worker loop (the `processNextWorkItem` every upstream
//! controller writes): take a key, reconcile it, forget its failures on
//! success or add it again rate-limited on failure, then hand it back.

use std::fmt::{Debug, Display};
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::rate_limiting_queue::RateLimitingQueue;

/// Runs `workers` workers on `queue` until `stop`, then shuts the queue
/// down and waits for them (the body of an upstream controller's `Run`).
pub async fn run_workers<T, E, F, Fut>(
    queue: Arc<RateLimitingQueue<T>>,
    workers: usize,
    stop: CancellationToken,
    reconcile: F,
) where
    T: Clone + Eq + Hash + Debug + Send + Sync + 'static,
    E: Display + 'static,
    F: Fn(T) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
{
    let mut tasks = JoinSet::new();
    for _ in 0..workers {
        tasks.spawn(run_worker(queue.clone(), reconcile.clone()));
    }
    stop.cancelled().await;
    queue.shut_down();
    while tasks.join_next().await.is_some() {}
}

/// Works `queue` until it shuts down.
pub async fn run_worker<T, E, F, Fut>(queue: Arc<RateLimitingQueue<T>>, reconcile: F)
where
    T: Clone + Eq + Hash + Debug + Send + Sync + 'static,
    E: Display,
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    while let Some(item) = queue.get().await {
        match reconcile(item.clone()).await {
            Ok(()) => queue.forget(&item),
            Err(e) => {
                tracing::debug!(?item, error = %e, "reconcile failed; requeued");
                queue.add_rate_limited(item.clone());
            }
        }
        queue.done(&item);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn failures_are_retried_with_backoff_and_forgotten_on_success() {
        let queue = RateLimitingQueue::<&str>::with_default_limiter();
        let attempts = Arc::new(AtomicUsize::new(0));
        let counted = attempts.clone();
        let worker = tokio::spawn(run_worker(queue.clone(), move |_key| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 2 {
                    Err("not yet")
                } else {
                    Ok(())
                }
            }
        }));
        queue.add("a");
        tokio::task::yield_now().await;
        assert_eq!(attempts.load(Ordering::SeqCst), 1);
        assert_eq!(queue.num_requeues(&"a"), 1);
        // Retried after 5 ms, then after 10 ms more.
        tokio::time::sleep(Duration::from_millis(5)).await;
        tokio::task::yield_now().await;
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_millis(10)).await;
        tokio::task::yield_now().await;
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
        assert_eq!(queue.num_requeues(&"a"), 0);
        queue.shut_down();
        worker.await.unwrap();
    }

    #[tokio::test]
    async fn one_key_is_never_reconciled_by_two_workers_at_once() {
        let queue = RateLimitingQueue::<&str>::with_default_limiter();
        let (busy, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let stop = CancellationToken::new();
        let (b, m) = (busy.clone(), most.clone());
        let workers = tokio::spawn(run_workers(queue.clone(), 4, stop.clone(), move |_key| {
            let (busy, most) = (b.clone(), m.clone());
            async move {
                let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                busy.fetch_sub(1, Ordering::SeqCst);
                Ok::<(), &str>(())
            }
        }));
        for _ in 0..50 {
            queue.add("a");
            tokio::task::yield_now().await;
        }
        stop.cancel();
        workers.await.unwrap();
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }
}
