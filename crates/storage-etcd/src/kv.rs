//! [`EtcdKv`]: the storage layer's [`Kv`] over an etcd v3 cluster, issuing
//! the same requests as upstream's etcd3 store.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::proto::{PbKeyValue, PbTxnOpResponse};
use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, PutOptions, Txn};
use storage::error::Result;
use storage::{
    KeyValue, Kv, KvWatchStream, RangeRequest, RangeResponse, StorageError, TxnOp, TxnResponse,
};

use crate::compact::Compaction;
use crate::config::EtcdConfig;
use crate::error::{ConnectError, Failure, Retry};
use crate::members::Members;
use crate::rpc;
use crate::watch;

/// A [`Kv`] backed by etcd. Share it behind an `Arc`; requests multiplex
/// over one connection per configured server.
pub struct EtcdKv {
    members: Members,
    /// The key the health check reads: `<prefix>/health`, as upstream's.
    health_key: String,
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
        Ok(EtcdKv {
            members: Members::connect(&config).await?,
            health_key: format!("{}/health", config.prefix.trim_end_matches('/')),
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
            Failure::Compacted => StorageError::TooOldResourceVersion {
                requested,
                compacted: self
                    .compaction
                    .fetch(&self.members)
                    .await
                    .unwrap_or_else(|_| self.compaction.known()),
            },
            Failure::FutureRevision => StorageError::TooLargeResourceVersion {
                requested,
                current: self.current_revision().await.unwrap_or(0),
            },
            other => other.into_storage_error(),
        }
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
            keys_only,
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
        if keys_only {
            options = options.with_keys_only();
        }
        let request = (key, options);
        let sent = self.members.call(
            rpc::RANGE,
            Retry::Idempotent,
            request,
            |m, (key, options)| {
                let mut kv = m.kv.clone();
                async move { kv.get(key, Some(options)).await }
            },
        );
        let resp = match sent.await {
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
        let sent = self
            .members
            .call(rpc::TXN, Retry::NotSentOnly, txn, |m, txn| {
                let mut kv = m.kv.clone();
                async move { kv.txn(txn).await }
            });
        let resp = match sent.await {
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
        let target = watch::Target {
            key,
            prefix,
            start_revision,
        };
        watch::open(&self.members, target, self.compaction.clone()).await
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        self.compaction.compact(&self.members, revision).await
    }

    async fn compacted_revision(&self) -> Result<i64> {
        self.compaction.fetch(&self.members).await
    }

    async fn current_revision(&self) -> Result<i64> {
        // Any read carries the revision in its header; count one key.
        let request = (self.health_key.clone(), GetOptions::new().with_count_only());
        let sent = self.members.call(
            rpc::RANGE,
            Retry::Idempotent,
            request,
            |m, (key, options)| {
                let mut kv = m.kv.clone();
                async move { kv.get(key, Some(options)).await }
            },
        );
        let resp = sent.await.map_err(Failure::into_storage_error)?;
        Ok(resp.0.header.map_or(0, |h| h.revision))
    }

    /// A lease of `ttl` (whole seconds, at least one), then a put attached
    /// to it, as upstream's store writes an object with a TTL (its lease
    /// manager grants a fresh lease for TTLs this short).
    async fn put_with_ttl(&self, key: &str, value: Bytes, ttl: Duration) -> Result<i64> {
        let seconds = i64::try_from(ttl.as_secs().max(1)).unwrap_or(i64::MAX);
        let granted = self
            .members
            .call(
                rpc::LEASE_GRANT,
                Retry::NotSentOnly,
                seconds,
                |m, seconds| {
                    let mut lease = m.lease.clone();
                    async move { lease.grant(seconds, None).await }
                },
            )
            .await
            .map_err(Failure::into_storage_error)?;
        let options = PutOptions::new().with_lease(granted.id());
        let request = (key.to_owned(), Vec::from(value), options);
        let put = self
            .members
            .call(
                rpc::PUT,
                Retry::NotSentOnly,
                request,
                |m, (key, value, options)| {
                    let mut kv = m.kv.clone();
                    async move { kv.put(key, value, Some(options)).await }
                },
            )
            .await
            .map_err(Failure::into_storage_error)?;
        Ok(put.header().map_or(0, |h| h.revision()))
    }

    /// Upstream's etcd health check: a read of `<prefix>/health` within the
    /// health check timeout.
    async fn health(&self) -> Result<()> {
        let timeout = self.config.health_timeout;
        let key = self.health_key.clone();
        let sent = self
            .members
            .call(rpc::HEALTH, Retry::Idempotent, key, |m, key| {
                let mut kv = m.kv.clone();
                async move { kv.get(key, None).await }
            });
        match tokio::time::timeout(timeout, sent).await {
            Ok(result) => result.map(drop).map_err(Failure::into_storage_error),
            Err(_) => Err(StorageError::Timeout(format!(
                "etcd health check did not finish within {timeout:?}"
            ))),
        }
    }
}
