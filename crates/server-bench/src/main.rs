//! `server-bench`: measures the built `kube-apiserver` binary as a whole.
//! It starts the server with a fresh data directory (on the embedded store,
//! or on a real etcd started for the run), times its startup, then drives
//! load over HTTPS as the admin of the generated `admin.kubeconfig` and
//! prints Markdown tables:
//!
//! * startup: spawn to `admin.kubeconfig`, `/livez` and `/readyz` answering
//!   200, CPU used and resident memory once ready;
//! * per load phase and protocol: GET of one ConfigMap, LIST of a namespace
//!   of ConfigMaps as JSON and as protobuf, CREATE of ConfigMaps, and a watch
//!   fan-out — requests/s, p50/p99 latency, the server's CPU seconds during
//!   the phase, requests per server CPU-second and resident memory after it.
//!
//! With `--targets` it measures instead every figure of the performance
//! targets table (issue 19) side by side with raw etcd, and draws plots
//! (see `targets`); `--scale` adds the scale run (see `scale`).
//!
//! The benchmark builds nothing: run `cargo build --release -p
//! kube-apiserver` first.

mod client;
mod load;
mod objects;
mod phases;
mod plot;
mod procfs;
mod raw_etcd;
mod report;
mod scale;
mod server;
mod summary;
mod targets;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::client::Protocol;
use crate::phases::Phase;
use crate::server::{Launch, Server};
use crate::targets::Backend;

/// Measures the kube-apiserver binary: startup, memory and load.
#[derive(Debug, Parser)]
#[command(name = "server-bench")]
pub struct Args {
    /// The kube-apiserver binary to measure.
    #[arg(long, default_value = "target/release/kube-apiserver")]
    kube_apiserver: PathBuf,
    /// Store the server's data in a real etcd started for the run (else the
    /// embedded store in the data directory).
    #[arg(long)]
    etcd: bool,
    /// The etcd server binary (with --etcd).
    #[arg(long, default_value = "etcd")]
    etcd_binary: PathBuf,
    /// More flags for the server (repeat for several).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// HTTP versions to drive the load with, one set of rows each.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Protocol::H2, Protocol::H1])]
    http: Vec<Protocol>,
    /// Load phases to run, in order.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Phase::ALL)]
    phases: Vec<Phase>,
    /// Requests in flight during a phase.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// HTTP/2 connections the requests in flight share (HTTP/1.1 opens one
    /// connection per request in flight).
    #[arg(long, default_value_t = 2)]
    connections: usize,
    /// Seconds each load phase runs for.
    #[arg(long, default_value = "5", value_parser = parse_seconds)]
    seconds: Duration,
    /// Ends each load phase after this many requests, if sooner.
    #[arg(long)]
    requests: Option<u64>,
    /// ConfigMaps in the listed namespace.
    #[arg(long, default_value_t = 1000)]
    list_objects: u64,
    /// Size of each ConfigMap's data value in bytes.
    #[arg(long, default_value_t = 1024)]
    value_bytes: usize,
    /// Watchers of the fan-out phase.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// ConfigMaps created while they watch.
    #[arg(long, default_value_t = 500)]
    watch_events: u64,
    /// Seconds the fan-out may take before missing events count as errors.
    #[arg(long, default_value = "60", value_parser = parse_seconds)]
    watch_timeout: Duration,
    /// Seconds the server may take to become ready.
    #[arg(long, default_value = "60", value_parser = parse_seconds)]
    startup_timeout: Duration,
    /// Where the server's temporary data directory is made (default: the
    /// system's temporary directory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Measure the performance targets table (issue 19) against raw etcd
    /// instead of the phases.
    #[arg(long)]
    targets: bool,
    /// With --targets: the backends measured.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Backend::Embedded, Backend::Etcd])]
    backends: Vec<Backend>,
    /// With --targets: creates (and raw etcd transactions) in flight, one
    /// load each; the targets table is taken at the last.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 4, 16, 64])]
    steps: Vec<usize>,
    /// With --targets: stored objects at which resident memory is read.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000, 25_000, 50_000, 100_000])]
    rss_objects: Vec<u64>,
    /// With --targets: once the --rss-objects are stored, wait for SIGINT,
    /// then stop the server, remove its data and exit (the first backend
    /// only), for a profiler to read the server's memory
    /// (scripts/memory-budget).
    #[arg(long)]
    hold: bool,
    /// With --targets: ConfigMaps in the namespace listed from the watch cache.
    #[arg(long, default_value_t = 12_000)]
    cache_list_objects: u64,
    /// With --targets: write throughput.svg and memory.svg here.
    #[arg(long)]
    plot_dir: Option<PathBuf>,
    /// Run the scale test on the embedded store (pods, namespaces and
    /// services stored; mutating latency, full LIST of pods, memory).
    #[arg(long)]
    scale: bool,
    /// With --scale: pods stored.
    #[arg(long, default_value_t = 150_000)]
    scale_pods: u64,
    /// With --scale: namespaces (the pods are spread over them).
    #[arg(long, default_value_t = 10_000)]
    scale_namespaces: u64,
    /// With --scale: services stored.
    #[arg(long, default_value_t = 10_000)]
    scale_services: u64,
}

impl Args {
    /// The largest concurrency step (at least 1).
    fn steps_max(&self) -> usize {
        self.steps.iter().copied().max().unwrap_or(1).max(1)
    }
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
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Server(String),
    #[error("kubeconfig {0}")]
    Kubeconfig(String),
    #[error("/proc: {0}")]
    Proc(String),
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("HTTP: {0}")]
    Hyper(#[from] hyper::Error),
    #[error("HTTP request: {0}")]
    Http(#[from] http::Error),
    #[error("URI: {0}")]
    Uri(#[from] http::uri::InvalidUri),
    #[error("header: {0}")]
    Header(#[from] http::header::InvalidHeaderValue),
    #[error("status {status}: {body}")]
    Status {
        status: http::StatusCode,
        body: String,
    },
    #[error("JSON: {0}")]
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
    #[error("etcd: {0}")]
    Etcd(String),
    #[error("plot {0}")]
    Plot(String),
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("server-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(failed) => {
            eprintln!("server-bench: {failed} request(s) failed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("server-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the benchmark and prints the tables; returns the failed requests.
async fn run(args: &Args) -> Result<u64, BenchError> {
    if args.concurrency == 0 || args.connections == 0 {
        return Err(BenchError::Args(
            "--concurrency and --connections must be at least 1".into(),
        ));
    }
    if !args.kube_apiserver.is_file() {
        return Err(BenchError::Args(format!(
            "{} is not a file; build it first (cargo build --release -p kube-apiserver)",
            args.kube_apiserver.display()
        )));
    }
    if args.targets || args.scale {
        if args.steps.contains(&0) {
            return Err(BenchError::Args("--steps must be at least 1".into()));
        }
        let mut failed = 0;
        if args.targets {
            failed += targets::run(args).await?;
        }
        if args.scale {
            failed += scale::run(args).await?;
        }
        return Ok(failed);
    }
    let parent = args.data_dir.clone().unwrap_or_else(std::env::temp_dir);
    eprintln!("[server-bench] starting {}", args.kube_apiserver.display());
    let launch = Launch {
        binary: &args.kube_apiserver,
        parent: &parent,
        etcd: args.etcd.then_some(args.etcd_binary.as_path()),
        extra_args: &args.server_args,
        timeout: args.startup_timeout,
    };
    let (mut server, startup) = Server::start(&launch).await?;
    let measured = phases::run_all(&mut server, args).await;
    let after = server.process.memory().await;
    server.stop().await?;
    let measured = measured?;
    let failed = measured.rows.iter().map(|row| row.load.errors).sum();
    println!("{}", report::render(args, &startup, &measured, &after?));
    Ok(failed)
}
