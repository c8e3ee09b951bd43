//! Fan-out of the watch cache: a thousand watchers on one write stream all
//! get every event in order, while a watcher that never reads is terminated
//! instead of holding the others back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use serde_json::json;
use storage::cacher::{Cacher, CacherConfig};
use storage::store::Store;
use storage::testing::MemoryKv;
use storage::{JsonCodec, Storage, WatchEvent, WatchOptions, WatchStream};
use tokio::task::JoinSet;
use tokio::time::{timeout, Instant};

const PREFIX: &str = "/registry/configmaps/";
const WATCHERS: usize = 1000;
const WRITES: usize = 120;
const BURST: usize = 8;
const BUFFER: usize = 16;
const WAIT: Duration = Duration::from_secs(20);

/// Reads `WRITES` events and checks they are the writes, in order.
async fn consume(mut stream: WatchStream, received: Arc<AtomicUsize>) -> Result<(), String> {
    let mut last_rv = 0;
    for i in 0..WRITES {
        let event = timeout(WAIT, stream.next())
            .await
            .map_err(|_| format!("no event {i} in time"))?;
        let obj = match event {
            Some(WatchEvent::Added(obj)) => obj,
            other => return Err(format!("event {i}: unexpected {other:?}")),
        };
        if obj["metadata"]["name"] != format!("cm{i}") {
            return Err(format!("event {i} is {}", obj["metadata"]["name"]));
        }
        let rv: i64 = obj["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or("no resourceVersion")?;
        if rv <= last_rv {
            return Err(format!("revision went from {last_rv} to {rv}"));
        }
        last_rv = rv;
        received.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_watcher_is_terminated_and_holds_nobody_back() {
    let store: Arc<dyn Storage> =
        Arc::new(Store::new(Arc::new(MemoryKv::new()), Arc::new(JsonCodec)));
    let mut config = CacherConfig::new(PREFIX);
    config.watcher_buffer = Some(BUFFER);
    let cacher = Arc::new(Cacher::new(store, config));
    timeout(WAIT, cacher.wait_ready()).await.expect("ready");
    let from_now = WatchOptions {
        resource_version: cacher.resource_version(),
        recursive: true,
        ..WatchOptions::default()
    };

    // Never polled until the end.
    let mut slow = cacher.watch(PREFIX, from_now.clone()).await.unwrap();
    let received = Arc::new(AtomicUsize::new(0));
    let mut consumers = JoinSet::new();
    for _ in 0..WATCHERS {
        let stream = cacher.watch(PREFIX, from_now.clone()).await.unwrap();
        consumers.spawn(consume(stream, received.clone()));
    }
    assert_eq!(cacher.watcher_count(), WATCHERS + 1);

    let started = Instant::now();
    for burst in 0..WRITES / BURST {
        for i in burst * BURST..(burst + 1) * BURST {
            let name = format!("cm{i}");
            let obj = json!({"metadata": {"name": name, "namespace": "ns"}, "data": {"i": i}});
            cacher
                .create(&format!("{PREFIX}ns/{name}"), obj)
                .await
                .unwrap();
        }
        // Every healthy watcher keeps up with the stream.
        let expected = WATCHERS * (burst + 1) * BURST;
        timeout(WAIT, async {
            while received.load(Ordering::Relaxed) < expected {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "burst {burst}: {} of {expected} events delivered",
                received.load(Ordering::Relaxed)
            )
        });
    }
    let elapsed = started.elapsed();

    while let Some(result) = consumers.join_next().await {
        result
            .expect("consumer task")
            .expect("consumer saw every event");
    }
    // The slow watcher overflowed long ago: it was dropped from the cacher
    // and its stream ends without replaying its stale buffer.
    assert_eq!(cacher.watcher_count(), 0);
    assert!(matches!(slow.next().now_or_never(), Some(None)));
    // At most one dispatch waited for it (the budget caps that at 100 ms).
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
}
