//! The list measurement: a collection of N objects read in full, as a raw
//! KV range (the backend alone), through the store (every list goes to the
//! KV and decodes every object) and
//! through the watch cache (`ReadVersion::Any`, served from memory), next to
//! the cost of JSON-encoding the same items, which a list response pays.

use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use storage::cacher::{Cacher, CacherConfig};
use storage::{prefix_end, Kv, ListOptions, Object, RangeRequest, ReadVersion, Storage};
use tokio::time::Instant;

use crate::workload::{create_concurrently, latency_histogram, micros, Objects, Stop};
use crate::BenchError;

/// The collection the list measurement fills.
const PREFIX: &str = "/registry/benchlist";
/// Writers that fill the collection.
const FILL_WRITERS: usize = 64;
/// Each list is repeated at least this often, however slow.
const MIN_ITERATIONS: u64 = 3;
/// How long the cache may take to load the collection.
const CACHE_READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Time per full list, by way of reading it.
pub struct ListTimes {
    /// Microseconds per range read of the collection's raw key-values.
    pub kv: Histogram<u64>,
    /// Microseconds per list through the store (from the KV).
    pub store: Histogram<u64>,
    /// Microseconds per list through the watch cache.
    pub cacher: Histogram<u64>,
    /// Microseconds to JSON-encode the listed items.
    pub encode: Histogram<u64>,
}

/// Fills the collection with `objects` objects, then lists it repeatedly for
/// about `duration` per way of reading.
pub async fn measure(
    kv: &dyn Kv,
    store: Arc<dyn Storage>,
    objects: &Objects,
    count: usize,
    duration: Duration,
) -> Result<ListTimes, BenchError> {
    create_concurrently(
        store.clone(),
        objects,
        PREFIX,
        FILL_WRITERS,
        Stop::Count(count),
    )
    .await?;
    let kv_times = time_ranges(kv, count, duration).await?;
    let store_times = time_lists(store.as_ref(), ReadVersion::MostRecent, count, duration).await?;

    let cacher = Cacher::new(store, CacherConfig::new(format!("{PREFIX}/")));
    tokio::time::timeout(CACHE_READY_TIMEOUT, cacher.wait_ready())
        .await
        .map_err(|_| {
            BenchError::Check(format!(
                "watch cache not ready after {CACHE_READY_TIMEOUT:?}"
            ))
        })?;
    let cacher_times = time_lists(&cacher, ReadVersion::Any, count, duration).await?;

    let items = list(&cacher, ReadVersion::Any, count).await?;
    // Encoding is CPU-bound: keep it off the runtime's workers.
    let encode_times =
        tokio::task::spawn_blocking(move || time_encoding(&items, duration)).await??;
    Ok(ListTimes {
        kv: kv_times,
        store: store_times,
        cacher: cacher_times,
        encode: encode_times,
    })
}

/// Lists the whole collection and checks it holds `expected` items.
async fn list(
    storage: &dyn Storage,
    version: ReadVersion,
    expected: usize,
) -> Result<Vec<Object>, BenchError> {
    let opts = ListOptions {
        version,
        recursive: true,
        ..ListOptions::default()
    };
    let items = storage.get_list(PREFIX, opts).await?.items;
    if items.len() != expected {
        return Err(BenchError::Check(format!(
            "list returned {} items, expected {expected}",
            items.len()
        )));
    }
    Ok(items)
}

async fn time_lists(
    storage: &dyn Storage,
    version: ReadVersion,
    expected: usize,
    duration: Duration,
) -> Result<Histogram<u64>, BenchError> {
    // One untimed list warms caches (and the etcd connection).
    list(storage, version, expected).await?;
    let mut times = latency_histogram()?;
    let started = Instant::now();
    while times.len() < MIN_ITERATIONS || started.elapsed() < duration {
        let begun = Instant::now();
        let items = list(storage, version, expected).await?;
        times.saturating_record(micros(begun.elapsed()));
        // Dropping 10,000 decoded objects is part of a list's cost.
        drop(items);
    }
    Ok(times)
}

/// Reads the collection's key-values straight from the KV, repeatedly.
async fn time_ranges(
    kv: &dyn Kv,
    expected: usize,
    duration: Duration,
) -> Result<Histogram<u64>, BenchError> {
    let prefix = format!("{PREFIX}/");
    let request = RangeRequest {
        range_end: Some(prefix_end(&prefix)),
        key: prefix,
        ..RangeRequest::default()
    };
    // One untimed read warms caches (and the etcd connection).
    range(kv, &request, expected).await?;
    let mut times = latency_histogram()?;
    let started = Instant::now();
    while times.len() < MIN_ITERATIONS || started.elapsed() < duration {
        let begun = Instant::now();
        range(kv, &request, expected).await?;
        times.saturating_record(micros(begun.elapsed()));
    }
    Ok(times)
}

/// One range read, checked to hold `expected` keys.
async fn range(kv: &dyn Kv, request: &RangeRequest, expected: usize) -> Result<(), BenchError> {
    let found = kv.range(request.clone()).await?.kvs.len();
    if found != expected {
        return Err(BenchError::Check(format!(
            "range returned {found} keys, expected {expected}"
        )));
    }
    Ok(())
}

/// JSON-encodes `items` as a list body into a reused buffer, repeatedly.
fn time_encoding(items: &[Object], duration: Duration) -> Result<Histogram<u64>, BenchError> {
    let mut times = latency_histogram()?;
    let mut body = Vec::new();
    let started = std::time::Instant::now();
    while times.len() < MIN_ITERATIONS || started.elapsed() < duration {
        let begun = std::time::Instant::now();
        body.clear();
        body.extend_from_slice(br#"{"kind":"ConfigMapList","apiVersion":"v1","items":["#);
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            serde_json::to_writer(&mut body, item.as_ref())?;
        }
        body.extend_from_slice(b"]}");
        times.saturating_record(micros(begun.elapsed()));
    }
    Ok(times)
}
