//! A small in-memory MVCC [`Kv`] with etcd's revision, compaction and watch
//! semantics: the reference backend the semantics suite runs against in this
//! crate's own tests, and a dependency-free KV for the watch cache's unit
//! tests. Not durable and not fast; never used by the server.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::error::{Result, StorageError};
use crate::kv::{
    KeyValue, Kv, KvEvent, KvEventKind, KvWatchItem, KvWatchStream, RangeRequest, RangeResponse,
    TxnOp, TxnResponse,
};

pub struct MemoryKv {
    inner: Mutex<Inner>,
}

impl Default for MemoryKv {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryKv {
    /// An empty store at revision 1, as a new etcd is (so no list of it
    /// reports revision 0, which watches read as "the current state").
    pub fn new() -> Self {
        MemoryKv {
            inner: Mutex::new(Inner {
                revision: 1,
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state stays consistent even if a holder panicked mid-test.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Version {
    create_revision: i64,
    mod_revision: i64,
    /// None: the key was deleted at `mod_revision`.
    value: Option<Bytes>,
}

struct Watcher {
    key: String,
    prefix: bool,
    tx: mpsc::UnboundedSender<KvEvent>,
}

impl Watcher {
    fn wants(&self, key: &str) -> bool {
        if self.prefix {
            key.starts_with(&self.key)
        } else {
            key == self.key
        }
    }
}

#[derive(Default)]
struct Inner {
    revision: i64,
    compacted: i64,
    /// Every key's versions in ascending revision order.
    keys: BTreeMap<String, Vec<Version>>,
    /// Events with revision >= `compacted`, ascending.
    log: Vec<KvEvent>,
    watchers: Vec<Watcher>,
}

impl Inner {
    fn key_value(key: &str, version: &Version) -> Option<KeyValue> {
        version.value.as_ref().map(|value| KeyValue {
            key: key.to_string(),
            value: value.clone(),
            create_revision: version.create_revision,
            mod_revision: version.mod_revision,
        })
    }

    fn latest(&self, key: &str) -> Option<KeyValue> {
        let version = self.keys.get(key)?.last()?;
        Self::key_value(key, version)
    }

    fn check_revision(&self, revision: i64) -> Result<()> {
        if revision > self.revision {
            return Err(StorageError::TooLargeResourceVersion {
                requested: revision,
                current: self.revision,
            });
        }
        if revision < self.compacted {
            return Err(StorageError::TooOldResourceVersion {
                requested: revision,
                compacted: self.compacted,
            });
        }
        Ok(())
    }

    fn publish(&mut self, event: KvEvent) {
        self.watchers
            .retain(|w| !w.wants(&event.kv.key) || w.tx.send(event.clone()).is_ok());
        self.log.push(event);
    }
}

#[async_trait]
impl Kv for MemoryKv {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        let inner = self.lock();
        let at = if req.revision == 0 {
            inner.revision
        } else {
            inner.check_revision(req.revision)?;
            req.revision
        };
        let end = match req.range_end.as_deref() {
            None => Bound::Included(req.key.as_str()),
            Some("\0") => Bound::Unbounded,
            Some(end) => Bound::Excluded(end),
        };
        let mut kvs = Vec::new();
        let mut count = 0;
        for (key, versions) in inner
            .keys
            .range::<str, _>((Bound::Included(req.key.as_str()), end))
        {
            let visible = versions
                .iter()
                .rev()
                .find(|v| v.mod_revision <= at)
                .and_then(|v| Inner::key_value(key, v));
            if let Some(mut kv) = visible {
                if req.keys_only {
                    kv.value = Bytes::new();
                }
                count += 1;
                if !req.count_only && (req.limit == 0 || (kvs.len() as i64) < req.limit) {
                    kvs.push(kv);
                }
            }
        }
        let more = !req.count_only && (kvs.len() as i64) < count;
        Ok(RangeResponse {
            kvs,
            more,
            count,
            revision: inner.revision,
        })
    }

    async fn txn(&self, key: &str, expected_mod_revision: i64, op: TxnOp) -> Result<TxnResponse> {
        let mut inner = self.lock();
        let current = inner.latest(key);
        if current.as_ref().map_or(0, |kv| kv.mod_revision) != expected_mod_revision {
            return Ok(TxnResponse::Failed {
                current,
                revision: inner.revision,
            });
        }
        if current.is_none() && matches!(op, TxnOp::Delete) {
            // Deleting an absent key changes nothing, as in etcd.
            return Ok(TxnResponse::Succeeded {
                revision: inner.revision,
                prev: None,
            });
        }
        Ok(put(&mut inner, key, op, current))
    }

    async fn watch(&self, key: &str, prefix: bool, start_revision: i64) -> Result<KvWatchStream> {
        let mut inner = self.lock();
        if start_revision > 0 && start_revision < inner.compacted {
            return Err(StorageError::TooOldResourceVersion {
                requested: start_revision,
                compacted: inner.compacted,
            });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let watcher = Watcher {
            key: key.to_string(),
            prefix,
            tx,
        };
        if start_revision > 0 {
            for event in inner
                .log
                .iter()
                .filter(|e| e.kv.mod_revision >= start_revision)
            {
                if watcher.wants(&event.kv.key) {
                    // The receiver is alive: it is in this scope.
                    let _ = watcher.tx.send(event.clone());
                }
            }
        }
        inner.watchers.push(watcher);
        drop(inner);
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            let event = rx.recv().await?;
            Some((Ok(KvWatchItem::Event(event)), rx))
        })))
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        let mut inner = self.lock();
        if revision <= inner.compacted {
            return Err(StorageError::TooOldResourceVersion {
                requested: revision,
                compacted: inner.compacted,
            });
        }
        inner.check_revision(revision)?;
        inner.compacted = revision;
        inner.keys.retain(|_, versions| {
            // Keep the version visible at `revision` (unless a tombstone) and newer.
            let visible = versions.iter().rposition(|v| v.mod_revision <= revision);
            if let Some(i) = visible {
                let keep_from = if versions[i].value.is_some() {
                    i
                } else {
                    i + 1
                };
                versions.drain(..keep_from);
            }
            !versions.is_empty()
        });
        inner.log.retain(|e| e.kv.mod_revision >= revision);
        Ok(())
    }

    async fn compacted_revision(&self) -> Result<i64> {
        Ok(self.lock().compacted)
    }

    async fn current_revision(&self) -> Result<i64> {
        Ok(self.lock().revision)
    }

    async fn health(&self) -> Result<()> {
        Ok(())
    }
}

/// Applies a write to `key` whose compare held, at the next revision.
fn put(inner: &mut Inner, key: &str, op: TxnOp, prev: Option<KeyValue>) -> TxnResponse {
    inner.revision += 1;
    let revision = inner.revision;
    let (kind, version) = match op {
        TxnOp::Put(value) => (
            KvEventKind::Put,
            Version {
                create_revision: prev.as_ref().map_or(revision, |p| p.create_revision),
                mod_revision: revision,
                value: Some(value),
            },
        ),
        TxnOp::Delete => (
            KvEventKind::Delete,
            Version {
                create_revision: 0,
                mod_revision: revision,
                value: None,
            },
        ),
    };
    let kv = KeyValue {
        key: key.to_string(),
        value: version.value.clone().unwrap_or_default(),
        create_revision: version.create_revision,
        mod_revision: revision,
    };
    inner.keys.entry(key.to_string()).or_default().push(version);
    inner.publish(KvEvent {
        kind,
        kv,
        prev: prev.clone(),
    });
    let prev = (kind == KvEventKind::Delete).then_some(prev).flatten();
    TxnResponse::Succeeded { revision, prev }
}
