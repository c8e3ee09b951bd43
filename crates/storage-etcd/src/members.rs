//! The etcd members of `--etcd-servers` and failover between them.
//!
//! Each member gets its own client. Requests go to a pinned member; when it
//! cannot be reached the request moves on to the next member, which becomes
//! the pinned one. (A single balanced channel over all members does not do
//! this: it keeps sending a share of the requests to a dead member.)

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use etcd_client::{Client, KvClient, LeaseClient, WatchClient};
use storage::StorageError;
use tokio::time::Instant;

use crate::config::EtcdConfig;
use crate::error::{ConnectError, Failure, Retry};
use crate::rpc::{self, Rpc};

/// Largest response accepted from etcd: big lists must not fail on the
/// transport's default 4 MiB (upstream sets the same limit).
const MAX_RECV_MSG_SIZE: usize = i32::MAX as usize;

/// The pause before repeating a request refused while etcd elects a leader
/// (an election takes about one election timeout, 1 s by default).
const ELECTION_PAUSE: Duration = Duration::from_millis(50);

/// The clients of one member.
pub(crate) struct Member {
    url: String,
    pub(crate) kv: KvClient,
    pub(crate) watch: WatchClient,
    pub(crate) lease: LeaseClient,
}

pub(crate) struct Members {
    members: Vec<Member>,
    /// Index of the member requests go to first.
    pinned: AtomicUsize,
    request_timeout: Duration,
}

impl Members {
    /// Sets up one client per server; connections are made lazily.
    pub(crate) async fn connect(config: &EtcdConfig) -> Result<Members, ConnectError> {
        let options = config.connect_options().await?;
        let mut members = Vec::with_capacity(config.servers.len());
        for server in &config.servers {
            let client = Client::connect([server], Some(options.clone()))
                .await
                .map_err(ConnectError::Client)?;
            members.push(Member {
                url: server.clone(),
                kv: client
                    .kv_client()
                    .max_decoding_message_size(MAX_RECV_MSG_SIZE),
                watch: client
                    .watch_client()
                    .max_decoding_message_size(MAX_RECV_MSG_SIZE),
                lease: client.lease_client(),
            });
        }
        Ok(Members {
            members,
            pinned: AtomicUsize::new(0),
            request_timeout: config.request_timeout,
        })
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Sends `request` with `send`, starting at the pinned member and moving
    /// on to the next ones while `retry` allows: once round the members for
    /// connection failures, and, while the cluster elects a leader, again
    /// after a pause until the request timeout (as etcd's client retries).
    /// Each attempt is bounded by the request timeout.
    pub(crate) async fn call<R, T, Fut>(
        &self,
        rpc: Rpc,
        retry: Retry,
        request: R,
        send: impl Fn(&Member, R) -> Fut,
    ) -> Result<T, Failure>
    where
        R: Clone,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let count = self.members.len();
        let first = self.pinned.load(Ordering::Relaxed);
        let deadline = Instant::now() + self.request_timeout;
        let mut connection_failures = 0;
        let mut last = None;
        for attempt in 0.. {
            let index = (first + attempt) % count.max(1);
            let Some(member) = self.members.get(index) else {
                break;
            };
            let attempt = rpc::traced(rpc, &member.url, send(member, request.clone()));
            match bounded(self.request_timeout, rpc.what, attempt).await {
                Ok(resp) => {
                    if index != first {
                        self.pinned.store(index, Ordering::Relaxed);
                        tracing::info!(server = %member.url, "etcd: switched to another server");
                    }
                    return Ok(resp);
                }
                Err(failure) if failure.may_retry(retry) => {
                    tracing::debug!(
                        server = %member.url,
                        ?failure,
                        "etcd: {} failed, trying the next server",
                        rpc.what
                    );
                    let election = failure.is_election();
                    last = Some(failure);
                    if election {
                        if Instant::now() + ELECTION_PAUSE >= deadline {
                            break;
                        }
                        tokio::time::sleep(ELECTION_PAUSE).await;
                    } else {
                        connection_failures += 1;
                        if connection_failures >= count {
                            break;
                        }
                    }
                }
                Err(failure) => return Err(failure),
            }
        }
        Err(last.unwrap_or_else(|| {
            Failure::Other(StorageError::Unreachable("no etcd servers".to_string()))
        }))
    }
}

/// Runs one etcd request with a timeout.
pub(crate) async fn bounded<T>(
    timeout: Duration,
    what: &str,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(timeout, request).await {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) => Err(Failure::classify(e)),
        Err(_) => Err(Failure::Other(StorageError::Timeout(format!(
            "etcd {what} request did not finish within {timeout:?}"
        )))),
    }
}
