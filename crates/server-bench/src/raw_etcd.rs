//! The reference the server's write rate is measured against: raw etcd.
//! A single-member etcd is started for the run with its data on the same
//! disk as the server's, and the bench itself drives create transactions
//! at it over gRPC (`etcd-client`) — each a `Txn` that puts a key only if
//! it does not exist yet (create revision 0), as a Kubernetes create is
//! stored — from a fixed number of tasks in flight sharing a few gRPC
//! connections, the same shape as the HTTP load.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, KvClient, Txn, TxnOp};
use tempfile::TempDir;
use tokio::process::Child;
use tokio::time::Instant;

use crate::load::{Limits, Tally};
use crate::server::start_etcd;
use crate::BenchError;

/// A raw etcd started for the run; killed when dropped.
pub struct RawEtcd {
    child: Child,
    url: String,
    dir: TempDir,
}

impl RawEtcd {
    /// Starts etcd with its data in a new directory under `parent`.
    pub async fn start(binary: &Path, parent: &Path) -> Result<RawEtcd, BenchError> {
        let dir = tempfile::Builder::new()
            .prefix("server-bench-raw-etcd-")
            .tempdir_in(parent)?;
        let (child, url) = start_etcd(binary, dir.path()).await?;
        Ok(RawEtcd { child, url, dir })
    }

    /// Creates keys `<prefix><n>` with `value_bytes`-byte values from
    /// `concurrency` tasks over `connections` gRPC connections for
    /// `seconds` (or `requests` transactions, if fewer); each successful
    /// transaction is a request of the tally.
    pub async fn creates(
        &self,
        prefix: &str,
        value_bytes: usize,
        (concurrency, connections): (usize, usize),
        (seconds, requests): (Duration, Option<u64>),
    ) -> Result<Tally, BenchError> {
        let mut clients = Vec::with_capacity(connections.max(1));
        for _ in 0..connections.clamp(1, concurrency.max(1)) {
            let client = etcd_client::Client::connect([self.url.as_str()], None)
                .await
                .map_err(|e| BenchError::Etcd(e.to_string()))?;
            clients.push(client.kv_client());
        }
        let value: Arc<[u8]> = vec![b'x'; value_bytes].into();
        let next = Arc::new(AtomicU64::new(0));
        let start = Instant::now();
        let limits = Limits {
            until: start + seconds,
            max_requests: requests,
        };
        let tasks: Vec<_> = (0..concurrency.max(1))
            .map(|i| {
                let kv = clients[i % clients.len()].clone();
                let writer = Writer {
                    prefix: prefix.to_string(),
                    value: value.clone(),
                    next: next.clone(),
                };
                tokio::spawn(writer.run(kv, limits))
            })
            .collect();
        let mut total = Tally::new()?;
        for task in tasks {
            total.merge(task.await??)?;
        }
        total.elapsed = start.elapsed();
        Ok(total)
    }

    /// etcd's process id.
    pub fn pid(&self) -> Result<u32, BenchError> {
        self.child
            .id()
            .ok_or_else(|| BenchError::Server("etcd exited".into()))
    }

    /// Stops etcd and removes its data.
    pub async fn stop(mut self) -> Result<(), BenchError> {
        self.child.kill().await?;
        self.dir.close()?;
        Ok(())
    }
}

/// One task in flight: creates the next key until the deadline.
struct Writer {
    prefix: String,
    value: Arc<[u8]>,
    next: Arc<AtomicU64>,
}

impl Writer {
    async fn run(self, mut kv: KvClient, limits: Limits) -> Result<Tally, BenchError> {
        let mut tally = Tally::new()?;
        loop {
            let seq = self.next.fetch_add(1, Ordering::Relaxed);
            if limits.max_requests.is_some_and(|max| seq >= max) || Instant::now() >= limits.until {
                return Ok(tally);
            }
            let key = format!("{}{seq}", self.prefix);
            let txn = Txn::new()
                .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key, self.value.to_vec(), None)]);
            let sent = Instant::now();
            match kv.txn(txn).await {
                Ok(response) if response.succeeded() => tally.record(sent.elapsed()),
                Ok(_) => tally.fail(&BenchError::Check("the key existed".into())),
                Err(e) => tally.fail(&BenchError::Etcd(e.to_string())),
            }
        }
    }
}
