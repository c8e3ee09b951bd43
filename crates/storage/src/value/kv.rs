//! A [`Kv`] that transforms the values of keys under configured prefixes
//! (each resource's key root) on their way in and out, so encryption at rest
//! works the same over every backend. Keys outside every prefix pass
//! through untouched; the rules can be swapped while serving (automatic
//! reload of the encryption configuration).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use super::Transformer;
use crate::error::{Result, StorageError};
use crate::kv::{
    KeyValue, Kv, KvWatchItem, KvWatchStream, RangeRequest, RangeResponse, TxnOp, TxnResponse,
};

/// Which transformer applies to which keys: the longest matching prefix wins.
#[derive(Debug, Clone, Default)]
pub struct TransformerRules {
    /// Longest prefix first.
    rules: Vec<(String, Arc<dyn Transformer>)>,
}

impl TransformerRules {
    pub fn new(mut rules: Vec<(String, Arc<dyn Transformer>)>) -> Self {
        rules.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        TransformerRules { rules }
    }

    /// The transformer of `key`, if any prefix covers it.
    pub fn for_key(&self, key: &str) -> Option<&Arc<dyn Transformer>> {
        self.rules
            .iter()
            .find(|(prefix, _)| key.starts_with(prefix.as_str()))
            .map(|(_, t)| t)
    }

    pub fn prefixes(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|(p, _)| p.as_str())
    }
}

/// Wraps a backend; see the module doc.
pub struct TransformingKv {
    inner: Arc<dyn Kv>,
    rules: RwLock<Arc<TransformerRules>>,
}

fn transform_error(key: &str, e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal(format!("unable to transform key {key:?}: {e}"))
}

impl TransformingKv {
    pub fn new(inner: Arc<dyn Kv>, rules: TransformerRules) -> Self {
        TransformingKv {
            inner,
            rules: RwLock::new(Arc::new(rules)),
        }
    }

    /// Replaces the rules; requests already running finish with the old ones.
    pub fn set_rules(&self, rules: TransformerRules) {
        // A poisoned lock only means a writer panicked mid-swap of an Arc,
        // which cannot leave it half-written.
        let mut guard = self.rules.write().unwrap_or_else(|p| p.into_inner());
        *guard = Arc::new(rules);
    }

    fn rules(&self) -> Arc<TransformerRules> {
        self.rules.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

fn decode(rules: &TransformerRules, kv: &mut KeyValue) -> Result<()> {
    // Deletions in watch events carry no value.
    if kv.value.is_empty() {
        return Ok(());
    }
    if let Some(t) = rules.for_key(&kv.key) {
        kv.value = t
            .transform_from_storage(&kv.value, kv.key.as_bytes())
            .map_err(|e| transform_error(&kv.key, e))?;
    }
    Ok(())
}

fn decode_opt(rules: &TransformerRules, kv: &mut Option<KeyValue>) -> Result<()> {
    kv.as_mut().map_or(Ok(()), |kv| decode(rules, kv))
}

#[async_trait]
impl Kv for TransformingKv {
    async fn range(&self, req: RangeRequest) -> Result<RangeResponse> {
        let mut resp = self.inner.range(req).await?;
        let rules = self.rules();
        for kv in &mut resp.kvs {
            decode(&rules, kv)?;
        }
        Ok(resp)
    }

    async fn txn(&self, key: &str, expected_mod_revision: i64, op: TxnOp) -> Result<TxnResponse> {
        let rules = self.rules();
        let op = match (op, rules.for_key(key)) {
            (TxnOp::Put(value), Some(t)) => TxnOp::Put(
                t.transform_to_storage(&value, key.as_bytes())
                    .map_err(|e| transform_error(key, e))?,
            ),
            (op, _) => op,
        };
        let mut resp = self.inner.txn(key, expected_mod_revision, op).await?;
        match &mut resp {
            TxnResponse::Succeeded { prev, .. } => decode_opt(&rules, prev)?,
            TxnResponse::Failed { current, .. } => decode_opt(&rules, current)?,
        }
        Ok(resp)
    }

    async fn watch(&self, key: &str, prefix: bool, start_revision: i64) -> Result<KvWatchStream> {
        let stream = self.inner.watch(key, prefix, start_revision).await?;
        let rules = self.rules();
        Ok(Box::pin(stream.map(move |item| {
            let mut item = item?;
            if let KvWatchItem::Event(ev) = &mut item {
                decode(&rules, &mut ev.kv)?;
                decode_opt(&rules, &mut ev.prev)?;
            }
            Ok(item)
        })))
    }

    async fn compact(&self, revision: i64) -> Result<()> {
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> Result<i64> {
        self.inner.compacted_revision().await
    }

    fn committed_revision(&self) -> Option<i64> {
        self.inner.committed_revision()
    }

    async fn current_revision(&self) -> Result<i64> {
        self.inner.current_revision().await
    }

    async fn health(&self) -> Result<()> {
        self.inner.health().await
    }

    async fn put_with_ttl(&self, key: &str, value: Bytes, ttl: Duration) -> Result<i64> {
        let value = match self.rules().for_key(key) {
            Some(t) => t
                .transform_to_storage(&value, key.as_bytes())
                .map_err(|e| transform_error(key, e))?,
            None => value,
        };
        self.inner.put_with_ttl(key, value, ttl).await
    }
}
