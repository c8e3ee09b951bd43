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

/// A small deterministic generator (xorshift) for the write mix.
struct Mix(u64);

impl Mix {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// Applies one watch event to a replica of the collection, checking it is
/// possible (no Added for a present key, no change to an absent one).
fn replay(
    replica: &mut std::collections::BTreeMap<String, storage::Object>,
    event: WatchEvent,
) -> Result<i64, String> {
    let (kind, obj) = match event {
        WatchEvent::Added(o) => ("added", o),
        WatchEvent::Modified(o) => ("modified", o),
        WatchEvent::Deleted(o) => ("deleted", o),
        other => return Err(format!("unexpected {other:?}")),
    };
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let rv = obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or("no resourceVersion")?;
    let present = replica.contains_key(&name);
    match (kind, present) {
        ("added", false) | ("modified", true) => {
            replica.insert(name, obj);
        }
        ("deleted", true) => {
            replica.remove(&name);
        }
        _ => return Err(format!("{kind} {name} at {rv} but present={present}")),
    }
    Ok(rv)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_joining_during_writes_see_no_gaps_or_duplicates() {
    let store: Arc<dyn Storage> =
        Arc::new(Store::new(Arc::new(MemoryKv::new()), Arc::new(JsonCodec)));
    let mut config = CacherConfig::new(PREFIX);
    // Room for every event: this test is about ordering, not back-pressure.
    config.watcher_buffer = Some(1024);
    let cacher = Arc::new(Cacher::new(store.clone(), config));
    timeout(WAIT, cacher.wait_ready()).await.expect("ready");
    let (final_rv, final_rv_rx) = tokio::sync::watch::channel(0i64);
    let mut watchers = JoinSet::new();
    let mut mix = Mix(0x2545_f491_4f6c_dd1d);
    let mut last_rv = cacher.resource_version();
    for op in 0..400u64 {
        if op % 10 == 0 {
            // Join from "now" (the state, then changes) or from the last write.
            let from = if op % 20 == 0 { 0 } else { last_rv };
            let base = match from {
                0 => Default::default(),
                rv => {
                    let opts = storage::ListOptions {
                        version: storage::ReadVersion::Exact(rv),
                        recursive: true,
                        ..Default::default()
                    };
                    let list = store.get_list(PREFIX, opts).await.unwrap();
                    list.items
                        .into_iter()
                        .map(|o| (o["metadata"]["name"].as_str().unwrap().to_string(), o))
                        .collect()
                }
            };
            let opts = WatchOptions {
                resource_version: from,
                recursive: true,
                ..WatchOptions::default()
            };
            let mut stream = cacher.watch(PREFIX, opts).await.unwrap();
            let mut done = final_rv_rx.clone();
            watchers.spawn(timeout(WAIT, async move {
                let mut replica = base;
                let mut seen = 0;
                loop {
                    let target = *done.borrow();
                    if target != 0 && seen >= target {
                        return Ok::<_, String>(replica);
                    }
                    tokio::select! {
                        event = stream.next() => {
                            let event = event.ok_or("the watch ended")?;
                            seen = seen.max(replay(&mut replica, event)?);
                        }
                        _ = done.changed() => {}
                    }
                }
            }));
        }
        let name = format!("k{}", mix.next(20));
        let key = format!("{PREFIX}ns/{name}");
        let obj = json!({"metadata": {"name": name, "namespace": "ns"}, "data": {"op": op}});
        let written = match store.create(&key, obj).await {
            Ok(created) => created,
            Err(_) if mix.next(3) == 0 => store
                .delete(&key, None, &|_| async { Ok(()) }.boxed())
                .await
                .unwrap(),
            Err(_) => {
                let update = move |cur: Option<storage::Object>| {
                    let mut next = cur.map(|o| o.to_value()).unwrap_or_default();
                    next["data"]["op"] = json!(op);
                    async move { Ok(next) }.boxed()
                };
                store
                    .guaranteed_update(&key, false, None, &update)
                    .await
                    .unwrap()
            }
        };
        last_rv = written["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap();
    }
    final_rv.send_replace(last_rv);

    let list = storage::ListOptions {
        recursive: true,
        ..Default::default()
    };
    let expected: std::collections::BTreeMap<_, _> = store
        .get_list(PREFIX, list)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| (o["metadata"]["name"].as_str().unwrap().to_string(), o))
        .collect();
    let mut checked = 0;
    while let Some(result) = watchers.join_next().await {
        let replica = result
            .expect("watcher task")
            .expect("the watcher reaches the last write in time")
            .expect("a consistent event sequence");
        assert_eq!(replica, expected);
        checked += 1;
    }
    assert_eq!(checked, 40);
}
