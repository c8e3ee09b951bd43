//! The watch fan-out measurement: many watchers of one collection through
//! the watch cache while a stream of creates runs, counting the events
//! delivered to all of them until every watcher has seen every write.
//!
//! By default each watcher's buffer holds the whole stream, so the figure is
//! the cache's delivery throughput; with the cacher's own small buffer a
//! watcher that falls behind a burst is cut off (as upstream), which the
//! run reports separately.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use storage::cacher::{Cacher, CacherConfig};
use storage::{Storage, WatchEvent, WatchOptions};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::workload::{create_concurrently, Objects, Stop};
use crate::BenchError;

/// The collection the watchers watch.
const PREFIX: &str = "/registry/benchwatch";
/// How long delivery may make no progress before the run gives up waiting.
const STALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the cache may take to become ready.
const CACHE_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// What the fan-out run measured.
pub struct FanOut {
    pub watchers: usize,
    /// Creates made while the watchers watched.
    pub writes: u64,
    /// How long the writers wrote.
    pub write_time: Duration,
    /// Events delivered over all watchers.
    pub delivered: u64,
    /// From the first write to the last event delivered.
    pub delivery_time: Duration,
    /// Watches the cache ended before they had every event (too slow).
    pub terminated: usize,
}

/// Counters the watcher tasks share with the measurement.
#[derive(Default)]
struct Tally {
    delivered: AtomicU64,
    ended: AtomicUsize,
}

/// How the fan-out run is shaped.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub watchers: usize,
    /// Creates in the write stream.
    pub events: usize,
    /// Concurrent writers producing the stream.
    pub writers: usize,
    /// Per-watcher buffer; `None` holds the whole stream.
    pub buffer: Option<usize>,
}

/// Opens the cache watches, creates the stream's objects and waits until
/// every watcher has every event.
pub async fn measure(
    store: Arc<dyn Storage>,
    objects: &Objects,
    shape: Shape,
) -> Result<FanOut, BenchError> {
    let mut config = CacherConfig::new(format!("{PREFIX}/"));
    config.watcher_buffer = Some(shape.buffer.unwrap_or(shape.events).max(1));
    let cacher = Arc::new(Cacher::new(store, config));
    tokio::time::timeout(CACHE_READY_TIMEOUT, cacher.wait_ready())
        .await
        .map_err(|_| {
            BenchError::Check(format!(
                "watch cache not ready after {CACHE_READY_TIMEOUT:?}"
            ))
        })?;
    let tally = Arc::new(Tally::default());
    let watchers = shape.watchers;
    let tasks = start_watchers(&cacher, watchers, &tally).await?;

    let started = Instant::now();
    let creates = create_concurrently(
        cacher.clone(),
        objects,
        PREFIX,
        shape.writers,
        Stop::Count(shape.events),
    )
    .await?;
    let write_time = started.elapsed();
    let expected = creates.count.saturating_mul(watchers as u64);
    let finished = wait_delivered(&tally, expected, watchers).await;
    let terminated = tally.ended.load(Ordering::Relaxed);

    drop(cacher);
    for task in tasks {
        task.abort();
    }
    Ok(FanOut {
        watchers,
        writes: creates.count,
        write_time,
        delivered: tally.delivered.load(Ordering::Relaxed),
        delivery_time: finished.duration_since(started),
        terminated,
    })
}

/// Opens the watches from the cache's current revision (no initial events)
/// and spawns one task per watch that counts its events.
async fn start_watchers(
    cacher: &Cacher,
    watchers: usize,
    tally: &Arc<Tally>,
) -> Result<Vec<JoinHandle<()>>, BenchError> {
    let opts = WatchOptions {
        resource_version: cacher.resource_version(),
        recursive: true,
        ..WatchOptions::default()
    };
    let mut tasks = Vec::with_capacity(watchers);
    for _ in 0..watchers {
        let mut stream = cacher.watch(PREFIX, opts.clone()).await?;
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                match event {
                    WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_) => {
                        tally.delivered.fetch_add(1, Ordering::Relaxed);
                    }
                    WatchEvent::Bookmark(_) => {}
                    WatchEvent::Error(_) => break,
                }
            }
            tally.ended.fetch_add(1, Ordering::Relaxed);
        }));
    }
    Ok(tasks)
}

/// Waits until `expected` events were delivered, every watch ended, or
/// delivery stalled; returns when the last event arrived.
async fn wait_delivered(tally: &Tally, expected: u64, watchers: usize) -> Instant {
    let mut last_count = tally.delivered.load(Ordering::Relaxed);
    let mut last_progress = Instant::now();
    loop {
        let count = tally.delivered.load(Ordering::Relaxed);
        if count != last_count {
            last_count = count;
            last_progress = Instant::now();
        }
        let all_ended = tally.ended.load(Ordering::Relaxed) >= watchers;
        if count >= expected || all_ended || last_progress.elapsed() > STALL_TIMEOUT {
            return last_progress;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
