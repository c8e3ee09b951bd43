//! The [`Storage`] implementation over any [`Kv`]: upstream's etcd3 store
//! (`k8s.io/apiserver/pkg/storage/etcd3/store.go`), written once so the
//! embedded and etcd backends share the same semantics.
//!
//! Objects are stored without `metadata.resourceVersion` and
//! `metadata.selfLink`; every object handed out carries the key's mod
//! revision as its resourceVersion.

mod handoff;
mod list;
mod object;
mod update;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use component_base::tracing::{self as tracing_ctx, Attribute};
use serde_json::Value;

use crate::codec::{Codec, Encoded};
use crate::error::{Result, StorageError};
use crate::interface::{
    GetOptions, KnownVersion, KnownVersions, ListOptions, ListResult, Object, Preconditions,
    ReadVersion, Storage, UpdateFn, ValidateDeletionFn, WatchOptions, WatchStream,
};
use crate::kv::{prefix_end, Kv, RangeRequest, TxnOp, TxnResponse};

use handoff::Handoff;
use object::{decode_object, prepare_for_storage, set_resource_version};

/// etcd's default `--max-request-bytes` (1.5 MiB): larger values are refused.
pub const DEFAULT_MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// How often a watch with bookmarks enabled reports progress when the
/// backend sends no progress notifications of its own.
pub const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// The storage semantics over a revisioned KV.
#[derive(Clone)]
pub struct Store {
    kv: Arc<dyn Kv>,
    codec: Arc<dyn Codec>,
    max_object_bytes: usize,
    bookmark_interval: Duration,
    /// Written objects handed to this store's watches.
    handoff: Arc<Handoff>,
    /// The group and resource stored, for the spans.
    group: String,
    resource: String,
}

impl Store {
    pub fn new(kv: Arc<dyn Kv>, codec: Arc<dyn Codec>) -> Self {
        Store {
            kv,
            codec,
            max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
            bookmark_interval: DEFAULT_BOOKMARK_INTERVAL,
            handoff: Arc::default(),
            group: String::new(),
            resource: String::new(),
        }
    }

    /// Names the group and resource stored, as the `group` and `resource`
    /// attributes of the spans of writes.
    pub fn with_resource(mut self, group: &str, resource: &str) -> Self {
        self.group = group.to_owned();
        self.resource = resource.to_owned();
        self
    }

    /// Upstream's attributes of the `Create etcd3` and `GuaranteedUpdate
    /// etcd3` spans (upstream's `type`, a Go type name, has no counterpart).
    fn span_attributes(&self, key: &str) -> Vec<Attribute> {
        vec![
            Attribute::new("audit-id", tracing_ctx::audit_id()),
            Attribute::new("key", key.to_owned()),
            Attribute::new("group", self.group.clone()),
            Attribute::new("resource", self.resource.clone()),
        ]
    }

    /// Refuses encoded objects larger than `bytes` with `TooLarge`.
    pub fn with_max_object_bytes(mut self, bytes: usize) -> Self {
        self.max_object_bytes = bytes;
        self
    }

    /// Sets how often bookmark-enabled watches report the latest revision
    /// they have seen (zero disables the timer; KV progress still counts).
    pub fn with_bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// The KV underneath (for compaction and diagnostics).
    pub fn kv(&self) -> &Arc<dyn Kv> {
        &self.kv
    }

    async fn create_traced(&self, key: &str, mut obj: Value) -> Result<Object> {
        prepare_for_storage(key, &mut obj)?;
        tracing_ctx::add_event("About to Encode", Vec::new());
        let Encoded { data, exact } = self.encode(&obj)?;
        tracing_ctx::add_event(
            "Encode succeeded",
            vec![Attribute::new("len", length(&data))],
        );
        let ticket = self.handoff.expect(key, &data);
        let txn = self.kv.txn(key, 0, TxnOp::Put(data.clone())).await;
        match &txn {
            Ok(_) => tracing_ctx::add_event("Txn call succeeded", Vec::new()),
            Err(e) => tracing_ctx::add_event("Txn call failed", error_attributes(e)),
        }
        match txn? {
            TxnResponse::Succeeded { revision, .. } => {
                let obj = self.written(key, obj, (&data, exact), revision)?;
                ticket.fill(revision, &obj);
                Ok(obj)
            }
            TxnResponse::Failed { .. } => Err(StorageError::AlreadyExists {
                key: key.to_string(),
            }),
        }
    }

    /// Upstream's `Get`, in its `Get etcd3` span with the call's and the
    /// decoding's events.
    ///
    /// `known` (for a most-recent read) may hold the version read already
    /// decoded; it is used while no trace is recorded, whose span shows the
    /// decode as upstream's does.
    async fn get_traced(
        &self,
        key: &str,
        opts: GetOptions,
        known: Option<KnownVersion<'_>>,
    ) -> Result<Option<Object>> {
        let revision = match opts.version {
            ReadVersion::Exact(n) => n,
            _ => 0,
        };
        let request = RangeRequest {
            key: key.to_string(),
            revision,
            ..RangeRequest::default()
        };
        let resp = self.kv.range(request).await;
        match &resp {
            Ok(_) => tracing_ctx::add_event("Get call succeeded", Vec::new()),
            Err(e) => tracing_ctx::add_event("Get call failed", error_attributes(e)),
        }
        let resp = resp?;
        check_minimum(opts.version, resp.revision)?;
        let Some(kv) = resp.kvs.into_iter().next() else {
            if opts.ignore_not_found {
                return Ok(None);
            }
            return Err(StorageError::NotFound {
                key: key.to_string(),
            });
        };
        let reused = known.filter(|_| !tracing_ctx::recording());
        if let Some(obj) = reused.and_then(|known| known(kv.mod_revision)) {
            return Ok(Some(obj));
        }
        let decoded = self.decode(&kv.key, &kv.value, kv.mod_revision);
        let mut attributes = vec![Attribute::new("len", length(&kv.value))];
        match &decoded {
            Ok(_) => tracing_ctx::add_event("Decode succeeded", attributes),
            Err(e) => {
                attributes.extend(error_attributes(e));
                tracing_ctx::add_event("Decode failed", attributes);
            }
        }
        Ok(Some(Arc::new(decoded?.into())))
    }

    /// What the write of `obj`, stored as `data` at `revision`, answers:
    /// as upstream's store, the object decoding `data` gives (in the
    /// `decode succeeded` event of the write's span), which is `obj` itself
    /// when the codec found the encoding `exact`.
    fn written(
        &self,
        key: &str,
        obj: Value,
        (data, exact): (&[u8], bool),
        revision: i64,
    ) -> Result<Object> {
        let decoded = if exact {
            Ok(obj)
        } else {
            self.codec.decode(key, data)
        };
        let mut attributes = vec![Attribute::new("len", length(data))];
        let mut obj = match decoded {
            Ok(obj) => obj,
            Err(e) => {
                attributes.extend(error_attributes(&e));
                tracing_ctx::add_event("decode failed", attributes);
                return Err(e);
            }
        };
        tracing_ctx::add_event("decode succeeded", attributes);
        set_resource_version(key, &mut obj, revision)?;
        Ok(Arc::new(obj.into()))
    }

    /// Encodes `obj`, refusing it when it is larger than the KV takes.
    fn encode(&self, obj: &Value) -> Result<Encoded> {
        let encoded = self.codec.encode_checked(obj)?;
        if encoded.data.len() > self.max_object_bytes {
            return Err(StorageError::TooLarge {
                size: encoded.data.len(),
                limit: self.max_object_bytes,
            });
        }
        Ok(encoded)
    }

    fn decode(&self, key: &str, data: &[u8], revision: i64) -> Result<Value> {
        decode_object(self.codec.as_ref(), key, data, revision)
    }
}

/// Upstream's `validateMinimumResourceVersion`: a read "not older than" a
/// revision the store has not reached yet cannot be served.
fn check_minimum(version: ReadVersion, current: i64) -> Result<()> {
    match version {
        ReadVersion::NotOlderThan(requested) if requested > current => {
            Err(StorageError::TooLargeResourceVersion { requested, current })
        }
        _ => Ok(()),
    }
}

/// A byte count as a span attribute's value.
fn length(data: &[u8]) -> i64 {
    i64::try_from(data.len()).unwrap_or(i64::MAX)
}

/// The `err` attribute of upstream's failure events.
fn error_attributes(e: &StorageError) -> Vec<Attribute> {
    vec![Attribute::new("err", e.to_string())]
}

/// Upstream's `prepareKey` checks: no empty key and no `.` or `..` path
/// segments, so a key can never climb out of its collection.
pub(crate) fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key == "/" {
        return Err(StorageError::Internal(format!("empty key: {key:?}")));
    }
    if key
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err(StorageError::Internal(format!("invalid key: {key:?}")));
    }
    Ok(())
}

#[async_trait]
impl Storage for Store {
    async fn create(&self, key: &str, obj: Value) -> Result<Object> {
        check_key(key)?;
        let attributes = || self.span_attributes(key);
        tracing_ctx::in_span("Create etcd3", attributes, self.create_traced(key, obj)).await
    }

    async fn delete(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: ValidateDeletionFn<'_>,
    ) -> Result<Object> {
        check_key(key)?;
        update::delete(self, key, preconditions, validate).await
    }

    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        check_key(key)?;
        watch::watch(self, key, opts).await
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Object>> {
        check_key(key)?;
        let attributes = || self.span_attributes(key);
        tracing_ctx::in_span("Get etcd3", attributes, self.get_traced(key, opts, None)).await
    }

    async fn get_latest(
        &self,
        key: &str,
        ignore_not_found: bool,
        known: KnownVersion<'_>,
    ) -> Result<Option<Object>> {
        check_key(key)?;
        let opts = GetOptions {
            version: ReadVersion::MostRecent,
            ignore_not_found,
        };
        let attributes = || self.span_attributes(key);
        let read = self.get_traced(key, opts, Some(known));
        tracing_ctx::in_span("Get etcd3", attributes, read).await
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        self.list(key, opts, None).await
    }

    async fn get_list_reusing(
        &self,
        key: &str,
        opts: ListOptions,
        known: KnownVersions,
    ) -> Result<ListResult> {
        self.list(key, opts, Some(known)).await
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<&Preconditions>,
        update: UpdateFn<'_>,
    ) -> Result<Object> {
        check_key(key)?;
        let attributes = || self.span_attributes(key);
        let updating =
            update::guaranteed_update(self, key, ignore_not_found, preconditions, update);
        tracing_ctx::in_span("GuaranteedUpdate etcd3", attributes, updating).await
    }

    async fn count(&self, key: &str) -> Result<i64> {
        check_key(key)?;
        // Count children of `key/` only, as upstream does.
        let prefix = if key.ends_with('/') {
            key.to_string()
        } else {
            format!("{key}/")
        };
        let resp = self
            .kv
            .range(RangeRequest {
                range_end: Some(prefix_end(&prefix)),
                key: prefix,
                count_only: true,
                ..RangeRequest::default()
            })
            .await?;
        Ok(resp.count)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cannot_escape_their_collection() {
        for bad in [
            "", "/", "..", "../x", "/a/..", "/a/../b", ".", "./a", "/a/.", "/a/./b",
        ] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
        for good in [
            "/registry/pods/ns/a",
            "/registry/pods/",
            "/a/..b",
            "/a/b.",
            "/a",
        ] {
            assert!(check_key(good).is_ok(), "{good:?}");
        }
    }
}
