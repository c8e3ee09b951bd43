//! [`EtcdKv`]: the storage layer's [`Kv`] over an etcd v3 cluster, issuing
//! the same requests as upstream's etcd3 store.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::proto::{PbKeyValue, PbTxnOpResponse};
use etcd_client::{
    Client, Compare, CompareOp, DeleteOptions, GetOptions, KvClient, Txn, WatchClient,
};
use storage::{
    KeyValue, Kv, KvWatchStream, RangeRequest, RangeResponse, StorageError, TxnOp, TxnResponse,
};

use storage::error::Result;

use crate::compact::Compaction;
use crate::config::EtcdConfig;
use crate::error::{is_permission_denied, ConnectError, Failure};
use crate::watch;

/// The key upstream's etcd health check reads.
const HEALTH_KEY: &str = "health";

/// Largest response accepted from etcd: big lists must not fail on the
/// transport's default 4 MiB (upstream sets the same limit).
const MAX_RECV_MSG_SIZE: usize = i32::MAX as usize;

/// A [`Kv`] backed by etcd. Cheap to share behind an `Arc`; all requests
/// multiplex over the client's connections to the configured servers.
pub struct EtcdKv {
    kv: KvClient,
    watch: WatchClient,
    config: EtcdConfig,
    compaction: Arc<Compaction>,
}

impl std::fmt::Debug for EtcdKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdKv")
            .field("servers", &self.config.servers)
            .finish_non_exhaustive()
    }
}

impl EtcdKv {
    /// Sets up a client for the configured servers. Connections are made
    /// lazily, so this succeeds while etcd is down; use
    /// [`crate::wait_for_etcd`] to wait for it at startup.
    pub async fn connect(config: EtcdConfig) -> Result<EtcdKv, ConnectError> {
        let options = config.connect_options().await?;
        let client = Client::connect(&config.servers, Some(options))
            .await
            .map_err(ConnectError::Client)?;
        Ok(EtcdKv {
            kv: client
                .kv_client()
                .max_decoding_message_size(MAX_RECV_MSG_SIZE),
            watch: client
                .watch_client()
                .max_decoding_message_size(MAX_RECV_MSG_SIZE),
            config,
            compaction: Arc::default(),
        })
    }

    /// The configuration this client was made from.
    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// Completes a failure of a read at `requested` (0: latest), looking up
    /// the compacted or current revision the error reports.
    async fn revision_error(&self, failure: Failure, requested: i64) -> StorageError {
        match failure {
            Failure::Compacted => {
                let compacted = self
                    .compaction
                    .fetch(self.kv.clone(), self.config.request_timeout)
                    .await
                    .unwrap_or_else(|_| self.compaction.known());
                StorageError::TooOldResourceVersion {
                    requested,
                    compacted,
                }
            }
            Failure::FutureRevision => StorageError::TooLargeResourceVersion {
                requested,
                current: self.current_revision().await.unwrap_or(0),
            },
            other => other.into_storage_error(),
        }
    }
}

/// Runs one etcd request with the request timeout.
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

/// Converts etcd's key-value, checking that the key is a UTF-8 path.
pub(crate) fn key_value(kv: PbKeyValue) -> Result<KeyValue> {
    let key = String::from_utf8(kv.key).map_err(|e| StorageError::Corrupt {
        key: String::from_utf8_lossy(e.as_bytes()).into_owned(),
        message: "etcd key is not UTF-8".to_string(),
    })?;
    Ok(KeyValue {
        key,
        value: Bytes::from(kv.value),
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
    })
}

#[async_trait]
impl Kv for EtcdKv {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        let RangeRequest {
            key,
            range_end,
            revision,
            limit,
            count_only,
        } = req;
        let mut options = GetOptions::new();
        if let Some(end) = range_end {
            options = options.with_range(end);
        }
        if revision > 0 {
            options = options.with_revision(revision);
        }
        if limit > 0 {
            options = options.with_limit(limit);
        }
        if count_only {
            options = options.with_count_only();
        }
        let mut kv = self.kv.clone();
        let request = kv.get(key, Some(options));
        let resp = match bounded(self.config.request_timeout, "range", request).await {
            Ok(resp) => resp.0,
            Err(failure) => return Err(self.revision_error(failure, revision).await),
        };
        Ok(RangeResponse {
            kvs: resp.kvs.into_iter().map(key_value).collect::<Result<_>>()?,
            more: resp.more,
            count: resp.count,
            revision: resp.header.map_or(0, |h| h.revision),
        })
    }

    async fn txn(&self, key: &str, expected_mod_revision: i64, op: TxnOp) -> Result<TxnResponse> {
        let mut size = 0;
        let then = match op {
            TxnOp::Put(value) => {
                size = value.len();
                etcd_client::TxnOp::put(key, Vec::from(value), None)
            }
            TxnOp::Delete => {
                etcd_client::TxnOp::delete(key, Some(DeleteOptions::new().with_prev_key()))
            }
        };
        let txn = Txn::new()
            .when([Compare::mod_revision(
                key,
                CompareOp::Equal,
                expected_mod_revision,
            )])
            .and_then([then])
            .or_else([etcd_client::TxnOp::get(key, None)]);
        let mut kv = self.kv.clone();
        let resp = match bounded(self.config.request_timeout, "txn", kv.txn(txn)).await {
            Ok(resp) => resp.0,
            Err(Failure::TooLarge) => {
                return Err(StorageError::TooLarge {
                    size,
                    limit: self.config.max_request_bytes,
                })
            }
            Err(other) => return Err(other.into_storage_error()),
        };
        let revision = resp.header.map_or(0, |h| h.revision);
        let first = resp.responses.into_iter().find_map(|op| op.response);
        if resp.succeeded {
            // Only a delete asks for the previous key-value, as upstream's
            // store does (a put's is never used and may be large).
            let prev = match first {
                Some(PbTxnOpResponse::ResponseDeleteRange(d)) => d.prev_kvs.into_iter().next(),
                _ => None,
            };
            Ok(TxnResponse::Succeeded {
                revision,
                prev: prev.map(key_value).transpose()?,
            })
        } else {
            let current = match first {
                Some(PbTxnOpResponse::ResponseRange(r)) => r.kvs.into_iter().next(),
                _ => None,
            };
            Ok(TxnResponse::Failed {
                current: current.map(key_value).transpose()?,
                revision,
            })
        }
    }

    async fn watch(&self, key: &str, prefix: bool, start_revision: i64) -> Result<KvWatchStream> {
        watch::open(
            self.watch.clone(),
            watch::Target {
                key,
                prefix,
                start_revision,
            },
            self.compaction.clone(),
            self.config.request_timeout,
        )
        .await
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        self.compaction
            .compact(self.kv.clone(), revision, self.config.request_timeout)
            .await
    }

    async fn compacted_revision(&self) -> Result<i64> {
        self.compaction
            .fetch(self.kv.clone(), self.config.request_timeout)
            .await
    }

    async fn current_revision(&self) -> Result<i64> {
        let mut kv = self.kv.clone();
        let request = kv.get(HEALTH_KEY, Some(GetOptions::new().with_count_only()));
        let resp = bounded(self.config.request_timeout, "range", request)
            .await
            .map_err(Failure::into_storage_error)?;
        Ok(resp.0.header.map_or(0, |h| h.revision))
    }

    /// Upstream's etcd health check: a read of the `health` key within the
    /// health check timeout; "permission denied" still proves etcd is up.
    async fn health(&self) -> Result<()> {
        let timeout = self.config.health_timeout;
        let mut kv = self.kv.clone();
        match tokio::time::timeout(timeout, kv.get(HEALTH_KEY, None)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if is_permission_denied(&e) => Ok(()),
            Ok(Err(e)) => Err(Failure::classify(e).into_storage_error()),
            Err(_) => Err(StorageError::Timeout(format!(
                "etcd health check did not finish within {timeout:?}"
            ))),
        }
    }
}
