//! The benchmark's load phases against a started server: the objects they
//! need are created first (namespaces, the ConfigMap that is read, the
//! listed collection, checked by one JSON and one protobuf list), then each
//! phase runs once per protocol, with the server's CPU time read before and
//! after it and its resident memory after it.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use tokio::time::Instant;

use crate::client::{Client, Conn, Protocol};
use crate::load::{self, Limits, Load, MakeRequest, Shape};
use crate::objects::{self, Bodies};
use crate::server::Server;
use crate::watch::{self, Plan};
use crate::{Args, BenchError};

/// Namespace of the ConfigMap that is read.
pub const GET_NAMESPACE: &str = "bench-get";
/// Namespace of the listed ConfigMaps.
const LIST_NAMESPACE: &str = "bench-list";
/// Name prefix of the ConfigMap that is read (its sequence number is 0).
const GET_PREFIX: &str = "get";
pub const JSON: &str = "application/json";
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// How long filling the listed namespace may take.
const FILL_TIMEOUT: Duration = Duration::from_secs(600);

/// A load phase starts once the server used less than this share of one
/// core over [`SETTLE_WINDOW`]: work left over from before (a restart's
/// informers listing every object, say) is not charged to the phase.
const SETTLED_CPU_SHARE: f64 = 0.1;
const SETTLE_WINDOW: Duration = Duration::from_millis(250);
/// How long a phase waits for the server to settle before starting anyway.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);

/// A load phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// GET of one ConfigMap.
    Get,
    /// LIST of the listed namespace, as JSON.
    ListJson,
    /// LIST of the listed namespace, as protobuf.
    ListProtobuf,
    /// CREATE of ConfigMaps.
    Create,
    /// Watchers of a namespace while ConfigMaps are created in it.
    Watch,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::Get,
        Phase::ListJson,
        Phase::ListProtobuf,
        Phase::Create,
        Phase::Watch,
    ];
}

/// One table row: a phase on one protocol.
pub struct Row {
    pub phase: Phase,
    pub protocol: Protocol,
    /// What it measured, with the server's CPU time.
    pub load: Load,
    /// Server resident memory after the phase, bytes.
    pub rss: u64,
}

/// Everything the phases measured.
pub struct Measured {
    /// The server's `/version` gitVersion.
    pub version: String,
    pub rows: Vec<Row>,
}

/// Prepares the objects and runs every phase on every protocol.
pub async fn run_all(server: &mut Server, args: &Args) -> Result<Measured, BenchError> {
    let mut protocols: Vec<Protocol> = Vec::with_capacity(args.http.len());
    for &protocol in &args.http {
        if !protocols.contains(&protocol) {
            protocols.push(protocol);
        }
    }
    let client = server.client.clone();
    eprintln!("[server-bench] creating the objects the phases use");
    let version = setup(&client, args, &protocols).await?;
    let mut rows = Vec::new();
    for &protocol in &protocols {
        for &phase in &args.phases {
            eprintln!("[server-bench] {phase:?} over {}", protocol.label());
            server.check_running()?;
            rows.push(measure(server, args, protocol, phase).await?);
        }
    }
    Ok(Measured { version, rows })
}

fn create_namespace(protocol: Protocol) -> String {
    format!("bench-create-{}", slug(protocol))
}

fn watch_namespace(protocol: Protocol) -> String {
    format!("bench-watch-{}", slug(protocol))
}

fn slug(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::H1 => "h1",
        Protocol::H2 => "h2",
    }
}

/// Creates the namespaces, the read ConfigMap and the listed collection,
/// checks both list encodings and returns the server's version.
async fn setup(client: &Client, args: &Args, protocols: &[Protocol]) -> Result<String, BenchError> {
    let http = Protocol::H2;
    let mut conn = client.connect(http).await?;
    let mut namespaces = vec![GET_NAMESPACE.to_string(), LIST_NAMESPACE.to_string()];
    for &protocol in protocols {
        namespaces.push(create_namespace(protocol));
        namespaces.push(watch_namespace(protocol));
    }
    create_namespaces(&mut conn, client, &namespaces).await?;
    create_get_object(&mut conn, client, args.value_bytes).await?;
    fill_list(client, args).await?;
    check_lists(&mut conn, client, args.list_objects).await?;

    let target = client.target(http, "/version")?;
    let version: serde_json::Value = serde_json::from_slice(
        &conn
            .get_body(target.request(Method::GET, JSON, None)?)
            .await?,
    )?;
    Ok(version["gitVersion"]
        .as_str()
        .unwrap_or("unknown")
        .to_string())
}

/// Creates the namespaces `names`.
pub async fn create_namespaces(
    conn: &mut Conn,
    client: &Client,
    names: &[String],
) -> Result<(), BenchError> {
    let target = client.target(Protocol::H2, "/api/v1/namespaces")?;
    for name in names {
        let body = objects::namespace(name);
        conn.call(
            target.request(Method::POST, JSON, Some(body))?,
            StatusCode::CREATED,
        )
        .await?;
    }
    Ok(())
}

/// Creates the ConfigMap the GET phase reads (in [`GET_NAMESPACE`]).
pub async fn create_get_object(
    conn: &mut Conn,
    client: &Client,
    value_bytes: usize,
) -> Result<(), BenchError> {
    let get = Bodies::config_maps(GET_PREFIX, value_bytes);
    let path = format!("/api/v1/namespaces/{GET_NAMESPACE}/configmaps");
    let target = client.target(Protocol::H2, &path)?;
    conn.call(
        target.request(Method::POST, JSON, Some(get.body(0)))?,
        StatusCode::CREATED,
    )
    .await?;
    Ok(())
}

/// The path of the ConfigMap the GET phase reads.
pub fn get_path() -> String {
    let name = Bodies::config_maps(GET_PREFIX, 0).name(0);
    format!("/api/v1/namespaces/{GET_NAMESPACE}/configmaps/{name}")
}

/// Creates the listed ConfigMaps.
async fn fill_list(client: &Client, args: &Args) -> Result<(), BenchError> {
    let http = Protocol::H2;
    let collection = format!("/api/v1/namespaces/{LIST_NAMESPACE}/configmaps");
    let shape = Shape {
        protocol: http,
        concurrency: args.concurrency,
        connections: args.connections,
    };
    let limits = Limits {
        until: Instant::now() + FILL_TIMEOUT,
        max_requests: Some(args.list_objects),
    };
    let make = creates(
        client.target(http, &collection)?,
        Bodies::config_maps("l", args.value_bytes),
    );
    let filled = load::drive(
        load::open(client, shape).await?,
        limits,
        StatusCode::CREATED,
        make,
    )
    .await?;
    if let Some(error) = filled.first_error {
        return Err(BenchError::Check(format!(
            "filling {LIST_NAMESPACE}: {error}"
        )));
    }
    Ok(())
}

/// Checks that the listed namespace holds `expected` items of ours and that lists
/// are served as protobuf when asked.
async fn check_lists(conn: &mut Conn, client: &Client, expected: u64) -> Result<(), BenchError> {
    let collection = format!("/api/v1/namespaces/{LIST_NAMESPACE}/configmaps");
    let target = client.target(Protocol::H2, &collection)?;
    let list: serde_json::Value = serde_json::from_slice(
        &conn
            .get_body(target.request(Method::GET, JSON, None)?)
            .await?,
    )?;
    // The namespace's `kube-root-ca.crt` (published by the server, as
    // kube-controller-manager does) is listed too.
    let items = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["metadata"]["name"] != "kube-root-ca.crt")
        .count();
    if u64::try_from(items).ok() != Some(expected) {
        return Err(BenchError::Check(format!(
            "the list holds {items} items, not {expected}"
        )));
    }
    let response = conn
        .send(target.request(Method::GET, PROTOBUF, None)?)
        .await?;
    let content_type = response.headers().get(http::header::CONTENT_TYPE).cloned();
    if !content_type
        .as_ref()
        .is_some_and(|t| t.as_bytes().starts_with(PROTOBUF.as_bytes()))
    {
        return Err(BenchError::Check(format!(
            "a protobuf list was answered as {content_type:?}"
        )));
    }
    Ok(())
}

/// Requests creating `objects` in the collection at `target`.
pub fn creates(target: crate::client::Target, objects: Bodies) -> MakeRequest {
    Arc::new(move |seq| target.request(Method::POST, JSON, Some(objects.body(seq))))
}

/// Requests repeating one read.
pub fn reads(target: crate::client::Target, accept: &'static str) -> MakeRequest {
    Arc::new(move |_| target.request(Method::GET, accept, None))
}

/// Runs one phase on one protocol.
async fn measure(
    server: &Server,
    args: &Args,
    protocol: Protocol,
    phase: Phase,
) -> Result<Row, BenchError> {
    let client = &server.client;
    let shape = Shape {
        protocol,
        concurrency: args.concurrency,
        connections: args.connections,
    };
    let list = format!("/api/v1/namespaces/{LIST_NAMESPACE}/configmaps");
    let (make, expect) = match phase {
        Phase::Watch => return measure_watch(server, args, shape).await,
        Phase::Get => (
            reads(client.target(protocol, &get_path())?, JSON),
            StatusCode::OK,
        ),
        Phase::ListJson => (reads(client.target(protocol, &list)?, JSON), StatusCode::OK),
        Phase::ListProtobuf => (
            reads(client.target(protocol, &list)?, PROTOBUF),
            StatusCode::OK,
        ),
        Phase::Create => {
            let path = format!(
                "/api/v1/namespaces/{}/configmaps",
                create_namespace(protocol)
            );
            let objects = Bodies::config_maps("c", args.value_bytes);
            (
                creates(client.target(protocol, &path)?, objects),
                StatusCode::CREATED,
            )
        }
    };
    Ok(Row {
        phase,
        protocol,
        load: timed(server, shape, (args.seconds, args.requests), expect, make).await?,
        rss: server.process.memory().await?.rss,
    })
}

/// Drives `make` with `shape` for `(seconds, at most requests)`; returns
/// what it measured with the server CPU time it took. Connections are opened
/// before the CPU clock starts: handshakes are not part of the phase.
pub async fn timed(
    server: &Server,
    shape: Shape,
    (seconds, requests): (Duration, Option<u64>),
    expect: StatusCode,
    make: MakeRequest,
) -> Result<Load, BenchError> {
    settle(server).await?;
    let conns = load::open(&server.client, shape).await?;
    let cpu = server.process.cpu().await?;
    let limits = Limits {
        until: Instant::now() + seconds,
        max_requests: requests,
    };
    let tally = load::drive(conns, limits, expect, make).await?;
    let cpu = server.process.cpu().await?.saturating_sub(cpu);
    Ok(Load::new(tally, cpu))
}

/// Waits until the server is idle (see [`SETTLED_CPU_SHARE`]), for at most
/// [`SETTLE_LIMIT`]; says so when that took more than one window.
async fn settle(server: &Server) -> Result<(), BenchError> {
    let started = Instant::now();
    let mut windows = 0;
    loop {
        let before = server.process.cpu().await?;
        tokio::time::sleep(SETTLE_WINDOW).await;
        let used = server.process.cpu().await?.saturating_sub(before);
        windows += 1;
        let settled = used.as_secs_f64() < SETTLE_WINDOW.as_secs_f64() * SETTLED_CPU_SHARE;
        if settled || started.elapsed() >= SETTLE_LIMIT {
            if windows > 1 {
                eprintln!(
                    "[server-bench]   waited {:.1} s for the server to settle ({} ms of CPU in the last {} ms)",
                    started.elapsed().as_secs_f64(),
                    used.as_millis(),
                    SETTLE_WINDOW.as_millis()
                );
            }
            return Ok(());
        }
    }
}

/// The fan-out phase: events received are its requests, events missed its
/// errors, delivery delays its latency.
async fn measure_watch(server: &Server, args: &Args, shape: Shape) -> Result<Row, BenchError> {
    let namespace = watch_namespace(shape.protocol);
    let plan = Plan {
        namespace: &namespace,
        watchers: args.watchers,
        events: args.watch_events,
        deadline: Instant::now() + args.watch_timeout,
    };
    let objects = Bodies::config_maps("w", args.value_bytes);
    let cpu = server.process.cpu().await?;
    let fan_out = watch::fan_out(&server.client, shape, &objects, &plan).await?;
    let cpu = server.process.cpu().await?.saturating_sub(cpu);
    let missed = fan_out.expected.saturating_sub(fan_out.delivered);
    let (p50, p99) = load::quantiles(&fan_out.latency);
    let first_error = fan_out.creates.first_error.or_else(|| {
        (missed > 0).then(|| {
            format!(
                "{missed} of {} events not received in {:?}",
                fan_out.expected, args.watch_timeout
            )
        })
    });
    let load = Load {
        requests: fan_out.delivered,
        errors: fan_out.creates.errors + missed,
        first_error,
        elapsed: fan_out.elapsed,
        p50,
        p99,
        cpu,
    };
    Ok(Row {
        phase: Phase::Watch,
        protocol: shape.protocol,
        load,
        rss: server.process.memory().await?.rss,
    })
}
