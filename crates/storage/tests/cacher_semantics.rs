//! The storage semantics suite run through the watch cache, on the embedded
//! backend: each case's resource prefix gets a cacher, as each resource does
//! in the server.

use std::sync::Arc;

use async_trait::async_trait;
use storage::error::Result;
use storage::{Kv, KvWatchStream, RangeRequest, RangeResponse, TxnOp, TxnResponse};
use storage_embedded::EmbeddedKv;

/// An embedded KV that owns its temporary directory.
struct TempKv {
    kv: EmbeddedKv,
    _dir: tempfile::TempDir,
}

#[async_trait]
impl Kv for TempKv {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        self.kv.range(req).await
    }
    async fn txn(&self, key: &str, expected: i64, op: TxnOp) -> Result<TxnResponse> {
        self.kv.txn(key, expected, op).await
    }
    async fn watch(&self, key: &str, prefix: bool, start: i64) -> Result<KvWatchStream> {
        self.kv.watch(key, prefix, start).await
    }
    async fn compact(&self, revision: i64) -> Result<()> {
        self.kv.compact(revision).await
    }
    async fn compacted_revision(&self) -> Result<i64> {
        self.kv.compacted_revision().await
    }
    async fn current_revision(&self) -> Result<i64> {
        self.kv.current_revision().await
    }
    fn committed_revision(&self) -> Option<i64> {
        self.kv.committed_revision()
    }
    async fn health(&self) -> Result<()> {
        self.kv.health().await
    }
}

async fn make_kv() -> Arc<dyn Kv> {
    let dir = tempfile::tempdir().expect("temp dir");
    let kv = EmbeddedKv::open(dir.path()).expect("open embedded kv");
    Arc::new(TempKv { kv, _dir: dir })
}

storage::semantics_suite!(@cacher make_kv);
