//! Watch fan-out: many watchers of one namespace's ConfigMaps while objects
//! are created there. Each watcher counts the `ADDED` events it receives and
//! how long each took from its create being sent; the phase ends when every
//! watcher has seen every object, or at the deadline.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use tokio::time::Instant;

use crate::client::{Client, Conn, Protocol};
use crate::load::{self, Limits, MakeRequest, Shape, Tally};
use crate::objects::Bodies;
use crate::BenchError;

/// Watch streams per HTTP/2 connection (below the server's stream limit).
const STREAMS_PER_CONNECTION: usize = 50;
/// Bytes kept of each event line: enough to reach the object's name.
const HEAD_BYTES: usize = 512;
const ADDED: &[u8] = br#"{"type":"ADDED""#;

/// The watched namespace and the size of the fan-out.
pub struct Plan<'a> {
    pub namespace: &'a str,
    pub watchers: usize,
    pub events: u64,
    pub deadline: Instant,
}

/// What the fan-out measured.
pub struct FanOut {
    /// The creates that produced the events.
    pub creates: Tally,
    /// Events received by all watchers.
    pub delivered: u64,
    /// Events every watcher should have received in total.
    pub expected: u64,
    /// From the first create sent to the last event received.
    pub elapsed: Duration,
    /// Time from a create being sent to a watcher receiving its event, µs.
    pub latency: Histogram<u64>,
}

/// Runs the fan-out with creates spread as `shape` says.
pub async fn fan_out(
    client: &Client,
    shape: Shape,
    objects: &Bodies,
    plan: &Plan<'_>,
) -> Result<FanOut, BenchError> {
    let collection = format!("/api/v1/namespaces/{}/configmaps", plan.namespace);
    let since = resource_version(client, shape.protocol, &collection).await?;
    let watch = client.target(
        shape.protocol,
        &format!("{collection}?watch=true&resourceVersion={since}"),
    )?;
    let mut streams = Vec::with_capacity(plan.watchers);
    for conn in open_watch_conns(client, shape.protocol, plan.watchers).await? {
        let mut conn = conn;
        let response = conn
            .send(watch.request(Method::GET, "application/json", None)?)
            .await?;
        if response.status() != StatusCode::OK {
            return Err(BenchError::Status {
                status: response.status(),
                body: String::new(),
            });
        }
        // The connection stays open while its stream is read.
        streams.push((conn, response.into_body()));
    }
    let epoch = Instant::now();
    let sent: Arc<[AtomicU64]> = (0..plan.events).map(|_| AtomicU64::new(0)).collect();
    let readers: Vec<_> = streams
        .into_iter()
        .map(|stream| {
            let reader = Reader {
                events: plan.events,
                sent: sent.clone(),
                epoch,
                deadline: plan.deadline,
            };
            tokio::spawn(reader.read(stream))
        })
        .collect();
    let target = client.target(shape.protocol, &collection)?;
    let template = objects.clone();
    let stamps = sent.clone();
    let make: MakeRequest = Arc::new(move |seq| {
        if let Some(stamp) = stamps.get(usize::try_from(seq).unwrap_or(usize::MAX)) {
            stamp.store(micros(epoch.elapsed()).max(1), Ordering::Relaxed);
        }
        target.request(Method::POST, "application/json", Some(template.body(seq)))
    });
    let limits = Limits {
        until: plan.deadline,
        max_requests: Some(plan.events),
    };
    let conns = load::open(client, shape).await?;
    let creates = load::drive(conns, limits, StatusCode::CREATED, make).await?;
    let mut latency = load::latency_histogram()?;
    let mut delivered = 0;
    let mut last = epoch;
    for reader in readers {
        let seen = reader.await??;
        delivered += seen.events;
        last = last.max(seen.finished);
        latency.add(seen.latency)?;
    }
    Ok(FanOut {
        creates,
        delivered,
        expected: plan.events * plan.watchers as u64,
        elapsed: last - epoch,
        latency,
    })
}

/// The collection's current resourceVersion, where the watches start.
async fn resource_version(
    client: &Client,
    protocol: Protocol,
    collection: &str,
) -> Result<String, BenchError> {
    let mut conn = client.connect(protocol).await?;
    let target = client.target(protocol, &format!("{collection}?limit=1"))?;
    let body = conn
        .get_body(target.request(Method::GET, "application/json", None)?)
        .await?;
    let list: serde_json::Value = serde_json::from_slice(&body)?;
    list.pointer("/metadata/resourceVersion")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| BenchError::Check("list without metadata.resourceVersion".into()))
}

/// One sender per watcher: its own HTTP/1.1 connection, or a stream of a
/// shared HTTP/2 connection.
async fn open_watch_conns(
    client: &Client,
    protocol: Protocol,
    watchers: usize,
) -> Result<Vec<Conn>, BenchError> {
    let shape = Shape {
        protocol,
        concurrency: watchers,
        connections: watchers.div_ceil(STREAMS_PER_CONNECTION),
    };
    load::open(client, shape).await
}

/// What one watcher saw.
struct Seen {
    events: u64,
    finished: Instant,
    latency: Histogram<u64>,
}

/// Reads one watch stream.
struct Reader {
    events: u64,
    sent: Arc<[AtomicU64]>,
    epoch: Instant,
    deadline: Instant,
}

impl Reader {
    async fn read(
        self,
        (conn, mut body): (Conn, hyper::body::Incoming),
    ) -> Result<Seen, BenchError> {
        let mut seen = Seen {
            events: 0,
            finished: Instant::now(),
            latency: load::latency_histogram()?,
        };
        let mut lines = Lines::default();
        while seen.events < self.events {
            let frame = match tokio::time::timeout_at(self.deadline, body.frame()).await {
                Ok(Some(frame)) => frame?,
                // The stream ended (the watcher was cut off) or time is up.
                Ok(None) | Err(_) => break,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            lines.feed(&data, |line| self.event(line, &mut seen));
        }
        drop(conn);
        Ok(seen)
    }

    /// Counts an `ADDED` line and records its delay.
    fn event(&self, line: &[u8], seen: &mut Seen) {
        if !line.starts_with(ADDED) {
            return;
        }
        seen.events += 1;
        seen.finished = Instant::now();
        let sent = created_seq(line)
            .and_then(|seq| self.sent.get(usize::try_from(seq).ok()?))
            .map(|stamp| stamp.load(Ordering::Relaxed))
            .filter(|&stamp| stamp > 0);
        if let Some(stamp) = sent {
            let now = micros(seen.finished - self.epoch);
            seen.latency.saturating_record(now.saturating_sub(stamp));
        }
    }
}

/// Splits a stream into newline-terminated lines, keeping only the first
/// [`HEAD_BYTES`] of each (JSON watch events are one line each).
#[derive(Default)]
struct Lines {
    head: Vec<u8>,
}

impl Lines {
    fn feed(&mut self, mut chunk: &[u8], mut on_line: impl FnMut(&[u8])) {
        while let Some(end) = chunk.iter().position(|&b| b == b'\n') {
            self.keep(&chunk[..end]);
            on_line(&self.head);
            self.head.clear();
            chunk = &chunk[end + 1..];
        }
        self.keep(chunk);
    }

    fn keep(&mut self, part: &[u8]) {
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&part[..part.len().min(room)]);
    }
}

/// The sequence number in the name of a created object (`…"name":"w-17"…`).
fn created_seq(line: &[u8]) -> Option<u64> {
    let key = br#""name":""#;
    let at = line.windows(key.len()).position(|w| w == key)? + key.len();
    let name = &line[at..];
    let end = name.iter().position(|&b| b == b'"')?;
    let digits = std::str::from_utf8(&name[..end]).ok()?;
    Bodies::seq_of(digits)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        for chunk in chunks {
            lines.feed(chunk, |line| out.push(line.to_vec()));
        }
        out
    }

    #[test]
    fn lines_span_chunks() {
        let out = lines_of(&[b"{\"a\":1}\n{\"b\"", b":2}\n", b"{\"c\":3}"]);
        assert_eq!(out, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
    }

    #[test]
    fn long_lines_keep_their_head() {
        let long = vec![b'x'; HEAD_BYTES * 3];
        let out = lines_of(&[&long, &long, b"\n"]);
        assert_eq!(out, vec![vec![b'x'; HEAD_BYTES]]);
    }

    #[test]
    fn finds_the_created_sequence_number() {
        let name = Bodies::config_maps("w", 0).name(42);
        let line = format!(
            r#"{{"type":"ADDED","object":{{"kind":"ConfigMap","metadata":{{"name":"{name}"}}}}}}"#
        );
        assert_eq!(created_seq(line.as_bytes()), Some(42));
        assert_eq!(created_seq(br#"{"type":"ADDED","object":{}}"#), None);
        assert_eq!(created_seq(br#"{"metadata":{"name":"other"}}"#), None);
    }
}
