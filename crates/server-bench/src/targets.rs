//! `server-bench --targets`: every figure of the performance targets table
//! (issue 19) in one run, side by side with raw etcd. Raw etcd's create
//! transactions are measured first; then, per backend, the server is
//! started on an empty data directory (startup time), filled with
//! ConfigMaps while its resident memory is read at each object count,
//! restarted on those objects (restart time), and loaded with GETs of one
//! object, LISTs of a namespace served from the watch cache (JSON and
//! protobuf) and creates at each concurrency step, each with the server
//! CPU it took from `/proc`.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use tokio::time::Instant;

use crate::client::Protocol;
use crate::load::{self, Limits, Load, Shape};
use crate::objects::Bodies;
use crate::phases::{self, JSON, PROTOBUF};
use crate::procfs::Process;
use crate::raw_etcd::RawEtcd;
use crate::server::{Launch, Server, Startup};
use crate::{summary, Args, BenchError};

/// Namespace whose ConfigMaps are listed (filled first).
const LIST_NAMESPACE: &str = "bench-list";
/// Namespace holding the rest of the stored objects.
const FILL_NAMESPACE: &str = "bench-fill";
/// Namespace of the create steps.
const CREATE_NAMESPACE: &str = "bench-create";
/// How long filling may take.
const FILL_TIMEOUT: Duration = Duration::from_secs(3600);

/// A storage backend of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The embedded store in the data directory.
    Embedded,
    /// A real etcd started for the run.
    Etcd,
}

impl Backend {
    pub fn label(self) -> &'static str {
        match self {
            Backend::Embedded => "embedded store",
            Backend::Etcd => "etcd",
        }
    }

    /// "on the embedded store", "on etcd".
    pub fn on(self) -> &'static str {
        match self {
            Backend::Embedded => "on the embedded store",
            Backend::Etcd => "on etcd",
        }
    }
}

/// What one backend measured.
pub struct BackendFigures {
    pub backend: Backend,
    /// Start on an empty data directory.
    pub startup: Startup,
    /// Bytes of one stored ConfigMap as JSON (a GET's body).
    pub object_bytes: usize,
    /// VmRSS once the namespaces exist, before the objects.
    pub rss_base: u64,
    /// VmRSS at each count of stored objects.
    pub rss: Vec<(u64, u64)>,
    /// Restart on all the stored objects, and how many there were.
    pub restart: Startup,
    pub restart_objects: u64,
    pub get: Load,
    pub list_json: Load,
    pub list_protobuf: Load,
    /// Creates per concurrency step.
    pub creates: Vec<(usize, Load)>,
}

/// Everything `--targets` measured.
pub struct Figures {
    /// Raw etcd's create transactions per concurrency step (CPU: etcd's).
    pub raw_etcd: Vec<(usize, Load)>,
    pub backends: Vec<BackendFigures>,
    pub version: String,
}

impl Figures {
    /// Failed requests of every load.
    pub fn errors(&self) -> u64 {
        let raw = self.raw_etcd.iter().map(|(_, l)| l.errors);
        let servers = self.backends.iter().flat_map(|b| {
            [b.get.errors, b.list_json.errors, b.list_protobuf.errors]
                .into_iter()
                .chain(b.creates.iter().map(|(_, l)| l.errors))
        });
        raw.chain(servers).sum()
    }
}

/// Runs raw etcd and every backend; prints the tables and writes the plots.
pub async fn run(args: &Args) -> Result<u64, BenchError> {
    let parent = args.data_dir.clone().unwrap_or_else(std::env::temp_dir);
    eprintln!("[server-bench] raw etcd create transactions");
    let raw_etcd = measure_raw_etcd(args, &parent).await?;
    let mut backends = Vec::new();
    let mut version = String::from("unknown");
    for &backend in &args.backends {
        eprintln!("[server-bench] the server {}", backend.on());
        let (figures, v) = measure_backend(args, &parent, backend).await?;
        backends.push(figures);
        version = v;
    }
    let figures = Figures {
        raw_etcd,
        backends,
        version,
    };
    println!("{}", summary::render(args, &figures));
    if let Some(dir) = &args.plot_dir {
        crate::plot::write_all(dir, &figures)?;
        eprintln!("[server-bench] plots written to {}", dir.display());
    }
    Ok(figures.errors())
}

/// Raw etcd's create transactions at each concurrency step.
async fn measure_raw_etcd(
    args: &Args,
    parent: &std::path::Path,
) -> Result<Vec<(usize, Load)>, BenchError> {
    let etcd = RawEtcd::start(&args.etcd_binary, parent).await?;
    let process = Process::new(etcd.pid()?);
    let mut loads = Vec::new();
    for &step in &args.steps {
        let prefix = format!("/registry/configmaps/bench-raw/c{step}-");
        let cpu = process.cpu().await?;
        let tally = etcd
            .creates(
                &prefix,
                args.value_bytes,
                (step, args.connections),
                (args.seconds, args.requests),
            )
            .await?;
        let cpu = process.cpu().await?.saturating_sub(cpu);
        loads.push((step, Load::new(tally, cpu)));
    }
    etcd.stop().await?;
    Ok(loads)
}

/// Starts the server on `backend` and measures it; returns its figures and
/// its version.
async fn measure_backend(
    args: &Args,
    parent: &std::path::Path,
    backend: Backend,
) -> Result<(BackendFigures, String), BenchError> {
    let launch = Launch {
        binary: &args.kube_apiserver,
        parent,
        etcd: (backend == Backend::Etcd).then_some(args.etcd_binary.as_path()),
        extra_args: &args.server_args,
        timeout: args.startup_timeout,
    };
    let (mut server, startup) = Server::start(&launch).await?;
    let measured = measure_started(&mut server, args, backend, startup).await;
    server.stop().await?;
    measured
}

async fn measure_started(
    server: &mut Server,
    args: &Args,
    backend: Backend,
    startup: Startup,
) -> Result<(BackendFigures, String), BenchError> {
    let (object_bytes, version) = setup(server, args).await?;
    let rss_base = server.process.memory().await?.rss;
    let mut rss = Vec::new();
    let mut stored = 0;
    for &count in &args.rss_objects {
        eprintln!("[server-bench] storing {count} objects");
        fill(server, args, stored, count).await?;
        stored = stored.max(count);
        rss.push((count, server.process.memory().await?.rss));
    }
    if args.hold {
        eprintln!("[server-bench] holding {stored} objects stored until interrupted");
        tokio::signal::ctrl_c().await?;
        return Err(BenchError::Server(format!(
            "interrupted holding {stored} objects"
        )));
    }
    fill(server, args, stored, args.cache_list_objects).await?;
    let restart_objects = stored.max(args.cache_list_objects);
    eprintln!("[server-bench] restarting on {restart_objects} objects");
    let restart = server.restart().await?;
    let figures = BackendFigures {
        backend,
        startup,
        object_bytes,
        rss_base,
        rss,
        restart,
        restart_objects,
        get: read(server, args, &phases::get_path(), JSON).await?,
        list_json: read(server, args, &list_path(), JSON).await?,
        list_protobuf: read(server, args, &list_path(), PROTOBUF).await?,
        creates: create_steps(server, args).await?,
    };
    Ok((figures, version))
}

fn list_path() -> String {
    format!("/api/v1/namespaces/{LIST_NAMESPACE}/configmaps")
}

/// Creates the namespaces and the read object; returns the size of the
/// object as JSON and the server's version.
async fn setup(server: &Server, args: &Args) -> Result<(usize, String), BenchError> {
    let client = &server.client;
    let mut conn = client.connect(Protocol::H2).await?;
    let namespaces = [
        phases::GET_NAMESPACE,
        LIST_NAMESPACE,
        FILL_NAMESPACE,
        CREATE_NAMESPACE,
    ]
    .map(String::from);
    phases::create_namespaces(&mut conn, client, &namespaces).await?;
    phases::create_get_object(&mut conn, client, args.value_bytes).await?;
    let get = client.target(Protocol::H2, &phases::get_path())?;
    let object = conn.get_body(get.request(Method::GET, JSON, None)?).await?;
    let version = client.target(Protocol::H2, "/version")?;
    let version: serde_json::Value = serde_json::from_slice(
        &conn
            .get_body(version.request(Method::GET, JSON, None)?)
            .await?,
    )?;
    let version = version["gitVersion"].as_str().unwrap_or("unknown").into();
    Ok((object.len(), version))
}

/// Stores objects number `from` to `to` (exclusive): the first
/// `--cache-list-objects` in the listed namespace, the rest in another.
async fn fill(server: &Server, args: &Args, from: u64, to: u64) -> Result<(), BenchError> {
    if to <= from {
        return Ok(());
    }
    let client = &server.client;
    let listed = client.target(Protocol::H2, &list_path())?;
    let rest = client.target(
        Protocol::H2,
        &format!("/api/v1/namespaces/{FILL_NAMESPACE}/configmaps"),
    )?;
    let (listed_objects, rest_objects) = (
        Bodies::config_maps("l", args.value_bytes),
        Bodies::config_maps("f", args.value_bytes),
    );
    let split = args.cache_list_objects;
    let make: load::MakeRequest = Arc::new(move |seq| {
        let n = from + seq;
        if n < split {
            listed.request(Method::POST, JSON, Some(listed_objects.body(n)))
        } else {
            rest.request(Method::POST, JSON, Some(rest_objects.body(n)))
        }
    });
    let limits = Limits {
        until: Instant::now() + FILL_TIMEOUT,
        max_requests: Some(to - from),
    };
    let conns = load::open(client, shape(args, args.steps_max())).await?;
    let filled = load::drive(conns, limits, StatusCode::CREATED, make).await?;
    match filled.first_error {
        Some(error) => Err(BenchError::Check(format!("storing objects: {error}"))),
        None => Ok(()),
    }
}

fn shape(args: &Args, concurrency: usize) -> Shape {
    Shape {
        protocol: Protocol::H2,
        concurrency,
        connections: args.connections,
    }
}

/// Repeats one read with `--concurrency` in flight for `--seconds`.
async fn read(
    server: &Server,
    args: &Args,
    path: &str,
    accept: &'static str,
) -> Result<Load, BenchError> {
    eprintln!("[server-bench] GET {path} as {accept}");
    let make = phases::reads(server.client.target(Protocol::H2, path)?, accept);
    let limits = (args.seconds, args.requests);
    phases::timed(
        server,
        shape(args, args.concurrency),
        limits,
        StatusCode::OK,
        make,
    )
    .await
}

/// Creates ConfigMaps at each concurrency step for `--seconds` each.
async fn create_steps(server: &Server, args: &Args) -> Result<Vec<(usize, Load)>, BenchError> {
    let path = format!("/api/v1/namespaces/{CREATE_NAMESPACE}/configmaps");
    let mut loads = Vec::new();
    for &step in &args.steps {
        eprintln!("[server-bench] creates, {step} in flight");
        let objects = Bodies::config_maps(&format!("c{step}"), args.value_bytes);
        let make = phases::creates(server.client.target(Protocol::H2, &path)?, objects);
        let limits = (args.seconds, args.requests);
        let load = phases::timed(server, shape(args, step), limits, StatusCode::CREATED, make);
        loads.push((step, load.await?));
    }
    Ok(loads)
}
