//! `storage-bench`: measures the storage layer on the embedded store and on
//! a real etcd started for the run, through the same `Storage` API the API
//! server uses, and prints a Markdown table:
//!
//! * durable creates per second and their p50/p99 latency at several
//!   writer concurrencies;
//! * time per full list of a large collection: the raw KV range, through
//!   the store (range plus decoding) and from the watch cache, next to the
//!   cost of JSON-encoding it;
//! * watch fan-out: events per second delivered to many cache watchers.
//!
//! Every measurement is bounded in time; flags change the sizes.

mod backend;
mod list;
mod report;
mod watch;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use storage::store::Store;
use storage::{JsonCodec, Storage, StorageError};
use tokio::time::Instant;

use crate::backend::{Backend, BackendKind};
use crate::report::BackendResults;
use crate::workload::{create_concurrently, Objects, Stop};

/// Measures the embedded store and etcd through the storage API.
#[derive(Debug, Parser)]
#[command(name = "storage-bench")]
pub struct Args {
    /// Backends to measure, in order.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [BackendKind::Embedded, BackendKind::Etcd])]
    backends: Vec<BackendKind>,
    /// Concurrent writers of the create measurement, one row each.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 16, 64])]
    writers: Vec<usize>,
    /// Size of each object's data field in bytes.
    #[arg(long, default_value_t = 1024)]
    value_bytes: usize,
    /// Seconds each create row writes for.
    #[arg(long, default_value = "3", value_parser = parse_seconds)]
    write_seconds: Duration,
    /// Objects in the listed collection.
    #[arg(long, default_value_t = 10_000)]
    list_objects: usize,
    /// Seconds each way of listing repeats for (at least 3 lists).
    #[arg(long, default_value = "2", value_parser = parse_seconds)]
    list_seconds: Duration,
    /// Watchers of the fan-out measurement.
    #[arg(long, default_value_t = 1000)]
    watchers: usize,
    /// Creates in the watched write stream.
    #[arg(long, default_value_t = 4000)]
    watch_events: usize,
    /// Concurrent writers producing the watched write stream (more than one,
    /// so that the stream is not bound by one writer's fsync latency).
    #[arg(long, default_value_t = 16)]
    watch_writers: usize,
    /// Per-watcher buffer of the watch cache; by default it holds the whole
    /// stream, so that no watcher is cut off and the figure is the delivery
    /// throughput (the cacher's own default for a fresh cache is 20).
    #[arg(long)]
    watcher_buffer: Option<usize>,
    /// Where the backends keep their data (a temporary directory inside it);
    /// defaults to the system's temporary directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// The etcd server binary.
    #[arg(long, default_value = "etcd")]
    etcd_binary: PathBuf,
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|e| format!("{s:?}: {e}"))?;
    if secs <= 0.0 {
        return Err(format!("{s:?}: must be positive"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{s:?}: {e}"))
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Storage(#[from] StorageError),
    #[error("embedded store: {0}")]
    Embedded(#[from] storage_embedded::OpenError),
    #[error("etcd client: {0}")]
    EtcdConnect(#[from] storage_etcd::ConnectError),
    #[error("starting etcd: {0}")]
    EtcdStart(String),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("encoding: {0}")]
    Json(#[from] serde_json::Error),
    #[error("histogram: {0}")]
    HistogramCreate(#[from] hdrhistogram::CreationError),
    #[error("histogram: {0}")]
    HistogramAdd(#[from] hdrhistogram::AdditionError),
    #[error("benchmark task: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("unexpected result: {0}")]
    Check(String),
    #[error("invalid arguments: {0}")]
    Args(String),
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("storage-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("storage-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), BenchError> {
    if args.writers.contains(&0) || args.watch_writers == 0 {
        return Err(BenchError::Args("writer counts must be at least 1".into()));
    }
    let parent = args.data_dir.clone().unwrap_or_else(std::env::temp_dir);
    let objects = Objects::new(args.value_bytes);
    let mut results = Vec::with_capacity(args.backends.len());
    for &kind in &args.backends {
        progress(kind, "starting");
        let backend = Backend::open(kind, &parent, &args.etcd_binary).await?;
        let measured = measure(kind, &backend, &objects, args).await;
        backend.shutdown().await?;
        results.push(measured?);
    }
    println!("{}", report::render(args, &results));
    Ok(())
}

/// Runs every measurement against one backend.
async fn measure(
    kind: BackendKind,
    backend: &Backend,
    objects: &Objects,
    args: &Args,
) -> Result<BackendResults, BenchError> {
    let store: Arc<dyn Storage> = Arc::new(Store::new(backend.kv(), Arc::new(JsonCodec)));
    let mut writes = Vec::with_capacity(args.writers.len());
    for &writers in &args.writers {
        progress(kind, &format!("creates, {writers} writers"));
        let prefix = format!("/registry/benchwrites-{writers}");
        let stop = Stop::At(Instant::now() + args.write_seconds);
        let creates = create_concurrently(store.clone(), objects, &prefix, writers, stop).await?;
        writes.push(creates);
    }
    progress(kind, &format!("list of {} objects", args.list_objects));
    let kv = backend.kv();
    let list = list::measure(
        kv.as_ref(),
        store.clone(),
        objects,
        args.list_objects,
        args.list_seconds,
    )
    .await?;
    progress(
        kind,
        &format!("watch fan-out to {} watchers", args.watchers),
    );
    let shape = watch::Shape {
        watchers: args.watchers,
        events: args.watch_events,
        writers: args.watch_writers,
        buffer: args.watcher_buffer,
    };
    let fan_out = watch::measure(store, objects, shape).await?;
    Ok(BackendResults {
        kind,
        writes,
        list,
        fan_out,
    })
}

fn progress(kind: BackendKind, what: &str) {
    eprintln!("[{}] {what}", kind.name());
}
