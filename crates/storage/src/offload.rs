//! CPU-heavy work of one request (decoding or encoding thousands of
//! objects) moved off the async workers. Go's scheduler preempts a
//! goroutine that runs long, so upstream's health checks and small requests
//! keep being served while big lists are decoded and encoded; tokio does
//! not preempt a task, so such work runs here instead: on tokio's blocking
//! pool, and at most one piece per core at once, so that a storm of large
//! lists queues here rather than crowding the workers off the CPUs.

use std::sync::OnceLock;

use tokio::sync::{Semaphore, SemaphorePermit};

/// Below this many objects, work stays on the request's own task: moving
/// it would cost more than it saves.
pub const INLINE_OBJECTS: usize = 200;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn permits() -> &'static Semaphore {
    static PERMITS: OnceLock<Semaphore> = OnceLock::new();
    PERMITS.get_or_init(|| Semaphore::new(cores()))
}

/// Admits one big read from storage (a list fetched and decoded whole) of
/// at most one per core at once, held until the read is decoded: the
/// fetched bytes and decoded objects of many lists never wait in memory
/// together for a core. A list asks once its first small batch showed more
/// to come, so small lists never wait for big ones.
pub async fn admit_read() -> SemaphorePermit<'static> {
    static READS: OnceLock<Semaphore> = OnceLock::new();
    let reads = READS.get_or_init(|| Semaphore::new(cores()));
    // The semaphore is never closed, so acquiring cannot fail.
    match reads.acquire().await {
        Ok(permit) => permit,
        Err(_) => unreachable!("the read semaphore is never closed"),
    }
}

/// Runs `work` on the blocking pool once one of the per-core permits is
/// free. Panics in `work` resume in the caller.
pub async fn run<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    // The semaphore is never closed, so acquiring cannot fail.
    let _permit = permits().acquire().await.ok();
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Runs `work` inline for fewer than [`INLINE_OBJECTS`] objects, else
/// through [`run`].
pub async fn run_for<T: Send + 'static>(
    objects: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    if objects < INLINE_OBJECTS {
        work()
    } else {
        run(work).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_big_work_off_the_worker_and_small_work_inline() {
        let worker = std::thread::current().id();
        let big = run_for(INLINE_OBJECTS, || std::thread::current().id()).await;
        assert_ne!(big, worker);
        let small = run_for(1, || std::thread::current().id()).await;
        assert_eq!(small, worker);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_one_piece_per_core_runs_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (running, most) = (running.clone(), most.clone());
                tokio::spawn(run(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    running.fetch_sub(1, Ordering::SeqCst);
                }))
            })
            .collect();
        for task in tasks {
            task.await.expect("task");
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let most = most.load(Ordering::SeqCst);
        assert!(
            most >= 1 && most <= cores,
            "{most} at once on {cores} cores"
        );
    }
}
