//! `server-bench --scale`: upstream's scale targets on the embedded store.
//! A fresh server (its service range widened to hold every service) is
//! filled with namespaces, then services and pods spread over them, every
//! create timed as a mutating request; with them stored, pods are created
//! for `--seconds` more (the mutating latency with the objects stored),
//! all pods are listed three times (a full LIST, JSON), and the server's
//! resident memory is read.

use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use tokio::time::Instant;

use crate::client::{Client, Protocol};
use crate::load::{self, Limits, Load, MakeRequest, Shape, Tally};
use crate::objects::{self, Bodies};
use crate::phases::{self, JSON};
use crate::report::{group, micros, millis};
use crate::server::{Launch, Server};
use crate::{Args, BenchError};

/// The targets: mutating p99, full LIST of pods, memory.
const MUTATING_P99: Duration = Duration::from_millis(50);
const LIST_ALL_PODS: Duration = Duration::from_secs(1);
const MEMORY: u64 = 8 << 30;
/// Full LISTs of every pod made.
const LISTS: u64 = 3;
/// How long storing the objects may take.
const FILL_TIMEOUT: Duration = Duration::from_secs(3600);
/// A service range with room for a million services.
const SERVICE_RANGE: &str = "--service-cluster-ip-range=10.96.0.0/12";

/// What the scale run measured.
struct Scale {
    /// Creates while storing the objects, and how long storing took.
    fill: Load,
    /// Pod creates with every object stored.
    mutating: Load,
    /// Full LISTs of every pod.
    lists: Load,
    rss: u64,
    peak: u64,
}

/// Runs the scale test and prints its table; returns the failed requests.
pub async fn run(args: &Args) -> Result<u64, BenchError> {
    let parent = args.data_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut extra = args.server_args.clone();
    if !extra
        .iter()
        .any(|a| a.starts_with("--service-cluster-ip-range"))
    {
        extra.push(SERVICE_RANGE.to_string());
    }
    let launch = Launch {
        binary: &args.kube_apiserver,
        parent: &parent,
        etcd: None,
        extra_args: &extra,
        timeout: args.startup_timeout,
    };
    eprintln!("[server-bench] scale run on the embedded store");
    let (server, _) = Server::start(&launch).await?;
    let scale = measure(&server, args).await;
    server.stop().await?;
    let scale = scale?;
    println!("{}", render(args, &scale));
    Ok(scale.fill.errors + scale.mutating.errors + scale.lists.errors)
}

async fn measure(server: &Server, args: &Args) -> Result<Scale, BenchError> {
    let client = &server.client;
    let namespaces = args.scale_namespaces.max(1);
    let ns = move |i: u64| format!("scale-{}", i % namespaces);
    let shape = |concurrency| Shape {
        protocol: Protocol::H2,
        concurrency,
        connections: args.connections,
    };
    let started = Instant::now();
    let cpu = server.process.cpu().await?;
    let namespace_target = client.target(Protocol::H2, "/api/v1/namespaces")?;
    let make: MakeRequest = Arc::new(move |i| {
        namespace_target.request(Method::POST, JSON, Some(objects::namespace(&ns(i))))
    });
    eprintln!("[server-bench] storing {namespaces} namespaces");
    let mut fill = store(client, shape(args.steps_max()), namespaces, make).await?;
    eprintln!("[server-bench] storing {} services", args.scale_services);
    let make = spread(client, "services", Bodies::services("svc"), namespaces);
    fill.merge(store(client, shape(args.steps_max()), args.scale_services, make).await?)?;
    let accounts = service_accounts(client).await?;
    eprintln!(
        "[server-bench] storing {} pods ({accounts} ServiceAccounts stored)",
        args.scale_pods
    );
    let make = spread(client, "pods", Bodies::pods("p"), namespaces);
    fill.merge(store(client, shape(args.steps_max()), args.scale_pods, make).await?)?;
    fill.elapsed = started.elapsed();
    let fill = Load::new(fill, server.process.cpu().await?.saturating_sub(cpu));

    eprintln!("[server-bench] pod creates with the objects stored");
    let make = spread(client, "pods", Bodies::pods("m"), namespaces);
    let limits = (args.seconds, args.requests);
    let mutating = phases::timed(
        server,
        shape(args.concurrency),
        limits,
        StatusCode::CREATED,
        make,
    )
    .await?;

    eprintln!("[server-bench] full LISTs of every pod");
    let make = phases::reads(client.target(Protocol::H2, "/api/v1/pods")?, JSON);
    let limits = (FILL_TIMEOUT, Some(LISTS));
    let lists = phases::timed(server, shape(1), limits, StatusCode::OK, make).await?;
    let memory = server.process.memory().await?;
    Ok(Scale {
        fill,
        mutating,
        lists,
        rss: memory.rss,
        peak: memory.peak,
    })
}

/// Requests creating `bodies` in `resource` of the namespaces, round robin.
fn spread(client: &Client, resource: &'static str, bodies: Bodies, namespaces: u64) -> MakeRequest {
    let client = client.clone();
    Arc::new(move |i| {
        let path = format!("/api/v1/namespaces/scale-{}/{resource}", i % namespaces);
        client
            .target(Protocol::H2, &path)?
            .request(Method::POST, JSON, Some(bodies.body(i)))
    })
}

/// How many ServiceAccounts are stored: a pod waits in admission for its
/// namespace's `default` one, which the service-account controller makes.
async fn service_accounts(client: &Client) -> Result<usize, BenchError> {
    let mut conn = client.connect(Protocol::H2).await?;
    let list = client.target(Protocol::H2, "/api/v1/serviceaccounts")?;
    let body = conn
        .get_body(list.request(Method::GET, JSON, None)?)
        .await?;
    let list: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| BenchError::Check(format!("listing ServiceAccounts: {e}")))?;
    Ok(list["items"].as_array().map_or(0, Vec::len))
}

/// Makes `count` creates; a failure ends the run.
async fn store(
    client: &Client,
    shape: Shape,
    count: u64,
    make: MakeRequest,
) -> Result<Tally, BenchError> {
    let limits = Limits {
        until: Instant::now() + FILL_TIMEOUT,
        max_requests: Some(count),
    };
    let conns = load::open(client, shape).await?;
    let tally = load::drive(conns, limits, StatusCode::CREATED, make).await?;
    if let (Some(p50), Some(p99)) = load::quantiles(&tally.latency) {
        let rate = tally.ok as f64 / tally.elapsed.as_secs_f64().max(1e-9);
        eprintln!("[server-bench]   {rate:.0} creates/s, p50 {p50} µs, p99 {p99} µs");
    }
    match &tally.first_error {
        Some(error) => Err(BenchError::Check(format!("storing objects: {error}"))),
        None => Ok(tally),
    }
}

fn render(args: &Args, scale: &Scale) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Scale run on the embedded store: {} namespaces, {} services and {} pods stored in {} \
         ({} creates/s, {} in flight)\n",
        group(args.scale_namespaces),
        group(args.scale_services),
        group(args.scale_pods),
        millis(scale.fill.elapsed),
        group(scale.fill.rate().round() as u64),
        args.steps_max(),
    );
    out.push_str("| figure | measured | target | status |\n|---|---|---|---|\n");
    let p99 = |load: &Load| load.p99.map(Duration::from_micros);
    let rows = [
        (
            format!(
                "mutating p99 while storing them ({} in flight)",
                args.steps_max()
            ),
            p99(&scale.fill),
            MUTATING_P99,
        ),
        (
            format!(
                "mutating p99 with them stored (pod creates, {} in flight, {} made)",
                args.concurrency,
                group(scale.mutating.requests)
            ),
            p99(&scale.mutating),
            MUTATING_P99,
        ),
        (
            format!("full LIST of every pod, JSON (slowest of {LISTS})"),
            scale.lists.p99.map(Duration::from_micros),
            LIST_ALL_PODS,
        ),
    ];
    for (figure, value, target) in rows {
        let (shown, met) = value.map_or(("n/a".to_string(), false), |v| (millis(v), v <= target));
        let _ = writeln!(
            out,
            "| {figure} | {shown} | ≤ {} | {} |",
            millis(target),
            if met { "met" } else { "not met" }
        );
    }
    let _ = writeln!(
        out,
        "| server memory (VmRSS now; peak VmHWM) | {:.2} GiB; {:.2} GiB | ≤ 8 GiB | {} |",
        scale.rss as f64 / f64::from(1u32 << 30),
        scale.peak as f64 / f64::from(1u32 << 30),
        if scale.peak <= MEMORY {
            "met"
        } else {
            "not met"
        }
    );
    let _ = writeln!(
        out,
        "\nserver CPU per full LIST of pods: {}; mutating p50 with the objects stored: {}",
        scale
            .lists
            .cpu_per_request()
            .map_or_else(|| "n/a".into(), millis),
        scale.mutating.p50.map_or_else(|| "n/a".into(), micros),
    );
    out
}
