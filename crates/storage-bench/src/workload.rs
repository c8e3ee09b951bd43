//! The objects the benchmark writes — ConfigMap-shaped JSON with one data
//! field of a chosen size — and concurrent creation of them through the
//! `Storage` API, timing each create.

use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{json, Value};
use storage::Storage;
use tokio::time::Instant;

use crate::BenchError;

/// The namespace every benchmark object lives in.
const NAMESPACE: &str = "bench";

/// Builds objects whose `data.payload` holds `value_bytes` bytes.
#[derive(Clone)]
pub struct Objects {
    template: Arc<Value>,
}

impl Objects {
    pub fn new(value_bytes: usize) -> Self {
        let template = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "namespace": NAMESPACE },
            "data": { "payload": "x".repeat(value_bytes) },
        });
        Objects {
            template: Arc::new(template),
        }
    }

    /// The object named `name` and its key under the collection `prefix`
    /// (the default `prefix/namespace/name` layout).
    pub fn object(&self, prefix: &str, name: &str) -> (String, Value) {
        let mut obj = Value::clone(&self.template);
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("name".to_string(), Value::String(name.to_string()));
        }
        (format!("{prefix}/{NAMESPACE}/{name}"), obj)
    }
}

/// When concurrent writers stop.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// Keep creating until this instant.
    At(Instant),
    /// Create exactly this many objects in total.
    Count(usize),
}

/// What a run of concurrent creates did.
pub struct Creates {
    pub count: u64,
    pub elapsed: Duration,
    /// Create latencies in microseconds.
    pub latency: Histogram<u64>,
}

/// Creates objects under `prefix` from `writers` concurrent tasks until
/// `stop`, naming them `w<writer>-<n>`.
pub async fn create_concurrently(
    storage: Arc<dyn Storage>,
    objects: &Objects,
    prefix: &str,
    writers: usize,
    stop: Stop,
) -> Result<Creates, BenchError> {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(writers);
    for writer in 0..writers {
        let storage = storage.clone();
        let objects = objects.clone();
        let prefix = prefix.to_string();
        let quota = match stop {
            // Spread the total evenly; the first writers take the remainder.
            Stop::Count(total) => Some(total / writers + usize::from(writer < total % writers)),
            Stop::At(_) => None,
        };
        let deadline = match stop {
            Stop::At(at) => Some(at),
            Stop::Count(_) => None,
        };
        tasks.push(tokio::spawn(async move {
            let mut latency = latency_histogram()?;
            let mut n = 0usize;
            while quota.is_none_or(|q| n < q) && deadline.is_none_or(|d| Instant::now() < d) {
                let (key, obj) = objects.object(&prefix, &format!("w{writer}-{n}"));
                let begun = Instant::now();
                storage.create(&key, obj).await?;
                latency.saturating_record(micros(begun.elapsed()));
                n += 1;
            }
            Ok::<_, BenchError>(latency)
        }));
    }
    let mut latency = latency_histogram()?;
    for task in tasks {
        latency.add(task.await??)?;
    }
    Ok(Creates {
        count: latency.len(),
        elapsed: started.elapsed(),
        latency,
    })
}

/// A histogram of durations in microseconds, up to one minute.
pub fn latency_histogram() -> Result<Histogram<u64>, BenchError> {
    Ok(Histogram::new_with_bounds(1, 60_000_000, 3)?)
}

pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
