//! The benchmark's load phases against a started server: the objects they
//! need are created first (namespaces, the ConfigMap that is read, the
//! listed collection, checked by one JSON and one protobuf list), then each
//! phase runs once per protocol, with the server's CPU time read before and
//! after it and its resident memory after it.

use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use http::{Method, StatusCode};
use tokio::time::Instant;

use crate::client::{Client, Conn, Protocol};
use crate::load::{self, Limits, MakeRequest, Shape, Tally};
use crate::objects::{self, ConfigMaps};
use crate::server::Server;
use crate::watch::{self, Plan};
use crate::{Args, BenchError};

/// Namespace of the ConfigMap that is read.
const GET_NAMESPACE: &str = "bench-get";
/// Namespace of the listed ConfigMaps.
const LIST_NAMESPACE: &str = "bench-list";
/// Name prefix of the ConfigMap that is read (its sequence number is 0).
const GET_PREFIX: &str = "get";
const JSON: &str = "application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// How long filling the listed namespace may take.
const FILL_TIMEOUT: Duration = Duration::from_secs(600);

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
    /// Successful requests (events received, for the fan-out).
    pub requests: u64,
    /// Failed requests (plus events not received, for the fan-out).
    pub errors: u64,
    pub first_error: Option<String>,
    pub elapsed: Duration,
    /// Latency quantiles in microseconds, if anything succeeded.
    pub p50: Option<u64>,
    pub p99: Option<u64>,
    /// Server CPU time used during the phase.
    pub cpu: Duration,
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
    let target = client.target(http, "/api/v1/namespaces")?;
    for name in &namespaces {
        let body = objects::namespace(name);
        conn.call(
            target.request(Method::POST, JSON, Some(body))?,
            StatusCode::CREATED,
        )
        .await?;
    }
    let get = ConfigMaps::new(GET_PREFIX, args.value_bytes);
    let target = client.target(
        http,
        &format!("/api/v1/namespaces/{GET_NAMESPACE}/configmaps"),
    )?;
    conn.call(
        target.request(Method::POST, JSON, Some(get.body(0)))?,
        StatusCode::CREATED,
    )
    .await?;
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
        ConfigMaps::new("l", args.value_bytes),
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
fn creates(target: crate::client::Target, objects: ConfigMaps) -> MakeRequest {
    Arc::new(move |seq| target.request(Method::POST, JSON, Some(objects.body(seq))))
}

/// Requests repeating one read.
fn reads(target: crate::client::Target, accept: &'static str) -> MakeRequest {
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
        Phase::Get => {
            let name = ConfigMaps::new(GET_PREFIX, 0).name(0);
            let path = format!("/api/v1/namespaces/{GET_NAMESPACE}/configmaps/{name}");
            (reads(client.target(protocol, &path)?, JSON), StatusCode::OK)
        }
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
            let objects = ConfigMaps::new("c", args.value_bytes);
            (
                creates(client.target(protocol, &path)?, objects),
                StatusCode::CREATED,
            )
        }
    };
    // Connections are opened before the CPU clock starts: handshakes are
    // not part of the phase.
    let conns = load::open(client, shape).await?;
    let cpu = server.process.cpu().await?;
    let limits = Limits {
        until: Instant::now() + args.seconds,
        max_requests: args.requests,
    };
    let tally = load::drive(conns, limits, expect, make).await?;
    let cpu = server.process.cpu().await?.saturating_sub(cpu);
    Ok(row(
        phase,
        protocol,
        tally,
        cpu,
        server.process.memory().await?.rss,
    ))
}

fn row(phase: Phase, protocol: Protocol, tally: Tally, cpu: Duration, rss: u64) -> Row {
    let (p50, p99) = quantiles(&tally.latency);
    Row {
        phase,
        protocol,
        requests: tally.ok,
        errors: tally.errors,
        first_error: tally.first_error,
        elapsed: tally.elapsed,
        p50,
        p99,
        cpu,
        rss,
    }
}

fn quantiles(latency: &Histogram<u64>) -> (Option<u64>, Option<u64>) {
    if latency.is_empty() {
        return (None, None);
    }
    (
        Some(latency.value_at_quantile(0.5)),
        Some(latency.value_at_quantile(0.99)),
    )
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
    let objects = ConfigMaps::new("w", args.value_bytes);
    let cpu = server.process.cpu().await?;
    let fan_out = watch::fan_out(&server.client, shape, &objects, &plan).await?;
    let cpu = server.process.cpu().await?.saturating_sub(cpu);
    let missed = fan_out.expected.saturating_sub(fan_out.delivered);
    let (p50, p99) = quantiles(&fan_out.latency);
    let first_error = fan_out.creates.first_error.or_else(|| {
        (missed > 0).then(|| {
            format!(
                "{missed} of {} events not received in {:?}",
                fan_out.expected, args.watch_timeout
            )
        })
    });
    Ok(Row {
        phase: Phase::Watch,
        protocol: shape.protocol,
        requests: fan_out.delivered,
        errors: fan_out.creates.errors + missed,
        first_error,
        elapsed: fan_out.elapsed,
        p50,
        p99,
        cpu,
        rss: server.process.memory().await?.rss,
    })
}
