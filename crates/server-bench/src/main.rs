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
//! The benchmark builds nothing: run `cargo build --release -p
//! kube-apiserver` first.

mod client;
mod load;
mod objects;
mod phases;
mod procfs;
mod report;
mod server;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::client::Protocol;
use crate::phases::Phase;
use crate::server::{Launch, Server};

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
    let failed = measured.rows.iter().map(|row| row.errors).sum();
    println!("{}", report::render(args, &startup, &measured, &after?));
    Ok(failed)
}
