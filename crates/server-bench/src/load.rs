//! Closed-loop load: a fixed number of requests in flight, each worker
//! sending its next request as soon as the previous one is answered, until a
//! deadline or a request budget; latencies of successful requests go into a
//! histogram, failures are counted with the first one kept for the report.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::{Request, StatusCode};
use http_body_util::Full;
use tokio::time::Instant;

use crate::client::{Client, Conn, Protocol};
use crate::BenchError;

/// How the load is spread over connections.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub protocol: Protocol,
    /// Requests in flight.
    pub concurrency: usize,
    /// HTTP/2 connections the streams share (HTTP/1.1 uses one connection
    /// per request in flight).
    pub connections: usize,
}

/// When a phase ends: at `until`, or once `max_requests` were sent.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub until: Instant,
    pub max_requests: Option<u64>,
}

/// What one phase measured.
pub struct Tally {
    /// Successful requests.
    pub ok: u64,
    /// Failed requests (wrong status, empty body or transport error).
    pub errors: u64,
    pub first_error: Option<String>,
    /// Latency of successful requests, in microseconds.
    pub latency: Histogram<u64>,
    /// From the first request sent to the last answered.
    pub elapsed: Duration,
}

impl Tally {
    pub fn new() -> Result<Tally, BenchError> {
        Ok(Tally {
            ok: 0,
            errors: 0,
            first_error: None,
            latency: latency_histogram()?,
            elapsed: Duration::ZERO,
        })
    }

    /// Counts a failure, keeping the first message.
    pub fn fail(&mut self, error: &BenchError) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(error.to_string());
        }
    }

    /// Counts a success that took `latency`.
    pub fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency.saturating_record(micros);
        self.ok += 1;
    }

    /// Adds another worker's counts.
    pub fn merge(&mut self, other: Tally) -> Result<(), BenchError> {
        self.ok += other.ok;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.latency.add(other.latency)?;
        Ok(())
    }
}

/// One measured load: requests, latency and the CPU of the process that
/// served it.
pub struct Load {
    /// Successful requests (events received, for the fan-out).
    pub requests: u64,
    /// Failed requests (plus events not received, for the fan-out).
    pub errors: u64,
    pub first_error: Option<String>,
    pub elapsed: Duration,
    /// Latency quantiles in microseconds, if anything succeeded.
    pub p50: Option<u64>,
    pub p99: Option<u64>,
    /// CPU time of the serving process during the load.
    pub cpu: Duration,
}

impl Load {
    pub fn new(tally: Tally, cpu: Duration) -> Load {
        let (p50, p99) = quantiles(&tally.latency);
        Load {
            requests: tally.ok,
            errors: tally.errors,
            first_error: tally.first_error,
            elapsed: tally.elapsed,
            p50,
            p99,
            cpu,
        }
    }

    /// Successful requests per second.
    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// Serving CPU per successful request (none if no CPU tick was
    /// counted).
    pub fn cpu_per_request(&self) -> Option<Duration> {
        u32::try_from(self.requests)
            .ok()
            .filter(|&n| n > 0 && !self.cpu.is_zero())
            .map(|n| self.cpu / n)
    }
}

/// The median and 99th percentile of `latency`, if it holds anything.
pub fn quantiles(latency: &Histogram<u64>) -> (Option<u64>, Option<u64>) {
    if latency.is_empty() {
        return (None, None);
    }
    (
        Some(latency.value_at_quantile(0.5)),
        Some(latency.value_at_quantile(0.99)),
    )
}

/// An empty histogram of latencies in microseconds, from 1 µs to an hour
/// at three significant digits (longer values are recorded as an hour).
pub fn latency_histogram() -> Result<Histogram<u64>, BenchError> {
    Ok(Histogram::new_with_bounds(1, 3_600_000_000, 3)?)
}

/// Opens the connections of `shape`: one sender per request in flight.
pub async fn open(client: &Client, shape: Shape) -> Result<Vec<Conn>, BenchError> {
    let concurrency = shape.concurrency.max(1);
    match shape.protocol {
        Protocol::H1 => {
            let mut conns = Vec::with_capacity(concurrency);
            for _ in 0..concurrency {
                conns.push(client.connect(Protocol::H1).await?);
            }
            Ok(conns)
        }
        Protocol::H2 => {
            let count = shape.connections.clamp(1, concurrency);
            let mut shared = Vec::with_capacity(count);
            for _ in 0..count {
                shared.push(client.connect(Protocol::H2).await?);
            }
            Ok((0..concurrency)
                .filter_map(|i| shared[i % count].share())
                .collect())
        }
    }
}

/// Builds request number `seq` of a phase.
pub type MakeRequest = Arc<dyn Fn(u64) -> Result<Request<Full<Bytes>>, BenchError> + Send + Sync>;

/// Runs one phase on `conns` (one worker each): requests from `make`, each
/// expected to answer `expect` with a non-empty body.
pub async fn drive(
    conns: Vec<Conn>,
    limits: Limits,
    expect: StatusCode,
    make: MakeRequest,
) -> Result<Tally, BenchError> {
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = conns
        .into_iter()
        .map(|conn| tokio::spawn(worker(conn, limits, expect, make.clone(), next.clone())))
        .collect();
    let mut total = Tally::new()?;
    for worker in workers {
        total.merge(worker.await??)?;
    }
    total.elapsed = start.elapsed();
    Ok(total)
}

async fn worker(
    mut conn: Conn,
    limits: Limits,
    expect: StatusCode,
    make: MakeRequest,
    next: Arc<AtomicU64>,
) -> Result<Tally, BenchError> {
    let mut tally = Tally::new()?;
    loop {
        let seq = next.fetch_add(1, Ordering::Relaxed);
        if limits.max_requests.is_some_and(|max| seq >= max) || Instant::now() >= limits.until {
            return Ok(tally);
        }
        let request = make(seq)?;
        let sent = Instant::now();
        match conn.call(request, expect).await {
            Ok(outcome) if outcome.bytes > 0 => tally.record(sent.elapsed()),
            Ok(_) => tally.fail(&BenchError::Check("empty response body".into())),
            Err(e @ BenchError::Status { .. }) => tally.fail(&e),
            // The connection is gone: this worker stops.
            Err(e) => {
                tally.fail(&e);
                return Ok(tally);
            }
        }
    }
}
