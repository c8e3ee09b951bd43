//! The [`Storage`] implementation over any [`Kv`]: upstream's etcd3 store
//! (`k8s.io/apiserver/pkg/storage/etcd3/store.go`), written once so the
//! embedded and etcd backends share the same semantics.
//!
//! Objects are stored without `metadata.resourceVersion` and
//! `metadata.selfLink`; every object handed out carries the key's mod
//! revision as its resourceVersion.

mod handoff;
mod object;
mod update;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use component_base::tracing::{self as tracing_ctx, Attribute};
use rayon::iter::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use serde_json::Value;

use crate::codec::Codec;
use crate::continue_token;
use crate::error::{Result, StorageError};
use crate::interface::{
    GetOptions, KnownVersion, KnownVersions, ListOptions, ListResult, Object, Preconditions,
    Predicate, ReadVersion, Storage, UpdateFn, ValidateDeletionFn, WatchOptions, WatchStream,
};
use crate::kv::{prefix_end, KeyValue, Kv, RangeRequest, TxnOp, TxnResponse};
use crate::offload;

use handoff::Handoff;
use object::{decode_object, prepare_for_storage, set_resource_version};

/// etcd's default `--max-request-bytes` (1.5 MiB): larger values are refused.
pub const DEFAULT_MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// How often a watch with bookmarks enabled reports progress when the
/// backend sends no progress notifications of its own.
pub const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// The most keys one list fetches from the KV at once while it fills a
/// filtered page (upstream's `maxLimit`).
const MAX_FETCH_LIMIT: i64 = 10_000;

/// The fewest objects one core decodes at a time when a batch is decoded
/// on every core.
const PARALLEL_DECODE_CHUNK: usize = 64;

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
        let data = self.encode(&obj)?;
        tracing_ctx::add_event(
            "Encode succeeded",
            vec![Attribute::new("len", length(&data))],
        );
        let ticket = self.written_ticket(key, &data);
        let txn = self.kv.txn(key, 0, TxnOp::Put(data)).await;
        match &txn {
            Ok(_) => tracing_ctx::add_event("Txn call succeeded", Vec::new()),
            Err(e) => tracing_ctx::add_event("Txn call failed", error_attributes(e)),
        }
        match txn? {
            TxnResponse::Succeeded { revision, .. } => {
                set_resource_version(key, &mut obj, revision)?;
                let obj = Arc::new(obj.into());
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

    /// Upstream's `GetList`, in its `List(recursive=…) etcd3` span.
    ///
    /// `known` may hold some versions read already decoded; they are used
    /// even while a trace is recorded, as upstream's span records no event
    /// per object decoded.
    async fn list_traced(
        &self,
        key: &str,
        opts: &ListOptions,
        known: Option<KnownVersions>,
    ) -> Result<ListResult> {
        let start = list_start(key, opts)?;
        let limit = opts.limit.filter(|l| *l > 0);
        let range_end = opts.recursive.then(|| prefix_end(&start.key_prefix));
        let mut revision = start.revision;
        let mut fetch_from = start.start_key;
        let mut fetch_limit = limit.unwrap_or(0);
        let mut items: Vec<Object> = Vec::new();
        let mut last_key: Option<String> = None;
        let big = limit.is_none_or(|l| l >= offload::INLINE_OBJECTS as i64);
        let _admitted = if big {
            Some(offload::admit_read().await)
        } else {
            None
        };
        let (has_more, remaining) = loop {
            let resp = self
                .kv
                .range(RangeRequest {
                    key: fetch_from,
                    range_end: range_end.clone(),
                    revision,
                    limit: fetch_limit,
                    count_only: false,
                })
                .await
                .map_err(|e| expired_continue(e, start.continued_from))?;
            check_minimum(opts.version, resp.revision)?;
            if resp.kvs.is_empty() && resp.more {
                return Err(StorageError::internal(
                    "no results were found, but the store indicated more values remain",
                ));
            }
            // Every later page and fetch reads the same revision.
            if revision == 0 {
                revision = resp.revision;
            }
            let (more, count) = (resp.more, resp.count);
            let wanted = limit.map(|l| {
                usize::try_from(l)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(items.len())
            });
            let (codec, predicate) = (self.codec.clone(), opts.predicate.clone());
            let known = known.clone();
            // Decoding thousands of objects holds a core: off the async workers.
            let batch = offload::run_for(resp.kvs.len(), move || {
                let select = Selection {
                    predicate: &predicate,
                    wanted,
                    known: known.as_ref(),
                };
                decode_batch(codec.as_ref(), resp.kvs, &select)
            })
            .await?;
            let has_more = more || batch.cut;
            items.extend(batch.items);
            last_key = batch.last_key.or(last_key);
            let Some(limit) = limit else {
                break (false, None);
            };
            if !has_more || items.len() as i64 >= limit {
                // The KV's count covers the range from this fetch's start, so it
                // is exact only when nothing was filtered out.
                let remaining = opts.predicate.is_everything().then(|| count - limit);
                break (has_more, remaining);
            }
            // Filtering dropped items: fetch bigger batches (upstream doubles).
            fetch_limit = fetch_limit
                .saturating_mul(2)
                .min(MAX_FETCH_LIMIT)
                .max(fetch_limit);
            fetch_from = format!("{}\0", last_key.as_deref().unwrap_or_default());
        };
        let continue_token = match (has_more, last_key) {
            (true, Some(last)) => Some(continue_token::encode(
                &format!("{last}\0"),
                &start.key_prefix,
                revision,
            )?),
            _ => None,
        };
        Ok(ListResult {
            items,
            resource_version: revision,
            remaining_item_count: continue_token.as_ref().and(remaining),
            continue_token,
        })
    }

    /// `get_list`, reusing `known`'s versions (see [`Store::list_traced`]).
    async fn list(
        &self,
        key: &str,
        opts: ListOptions,
        known: Option<KnownVersions>,
    ) -> Result<ListResult> {
        check_key(key)?;
        let name = if opts.recursive {
            "List(recursive=true) etcd3"
        } else {
            "List(recursive=false) etcd3"
        };
        let attributes = || list_span_attributes(key, &opts);
        tracing_ctx::in_span(name, attributes, self.list_traced(key, &opts, known)).await
    }

    /// The ticket of a create or update storing `data` at `key` (see
    /// [`handoff`]): an empty one unless the codec decodes as written.
    fn written_ticket(&self, key: &str, data: &Bytes) -> handoff::Ticket {
        if self.codec.decodes_as_written() {
            self.handoff.expect(key, data)
        } else {
            handoff::Ticket::none()
        }
    }

    fn encode(&self, obj: &Value) -> Result<Bytes> {
        let data = self.codec.encode(obj)?;
        if data.len() > self.max_object_bytes {
            return Err(StorageError::TooLarge {
                size: data.len(),
                limit: self.max_object_bytes,
            });
        }
        Ok(data)
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

/// Upstream's attributes of the `List(recursive=…) etcd3` span: the
/// request's `resourceVersion` (`resourceVersionMatch` is told apart only
/// for `Exact`: a parsed "not older than" may have been sent either way),
/// `limit` and `continue`.
fn list_span_attributes(key: &str, opts: &ListOptions) -> Vec<Attribute> {
    let (version, matching) = match opts.version {
        ReadVersion::MostRecent => (String::new(), ""),
        ReadVersion::Any => ("0".to_owned(), ""),
        ReadVersion::NotOlderThan(n) => (n.to_string(), ""),
        ReadVersion::Exact(n) => (n.to_string(), "Exact"),
    };
    vec![
        Attribute::new("audit-id", tracing_ctx::audit_id()),
        Attribute::new("key", key.to_owned()),
        Attribute::new("resourceVersion", version),
        Attribute::new("resourceVersionMatch", matching),
        Attribute::new("limit", opts.limit.unwrap_or(0)),
        Attribute::new("continue", opts.continue_token.clone().unwrap_or_default()),
    ]
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

/// The objects of one fetched batch a list keeps.
struct Batch {
    items: Vec<Object>,
    /// The last key decoded (kept or not).
    last_key: Option<String>,
    /// Whether `wanted` was reached before the batch's end.
    cut: bool,
}

/// Which objects of a fetched batch a list keeps, and which it has.
struct Selection<'a> {
    predicate: &'a Predicate,
    /// Keep at most this many.
    wanted: Option<usize>,
    /// The caller's decoded copies of versions read (see [`KnownVersions`]).
    known: Option<&'a KnownVersions>,
}

/// Decodes a fetched batch in key order, keeping the objects the predicate
/// matches, until `wanted` of them are kept; the versions `known` holds
/// are taken from it instead (filtered all the same). A batch too big to
/// decode on the request's own task is decoded on every core (rayon's
/// pool, one thread per core, shared by every list); the objects are then
/// taken in key order, so an object past the cut that fails to decode is
/// no error.
fn decode_batch(codec: &dyn Codec, mut kvs: Vec<KeyValue>, select: &Selection) -> Result<Batch> {
    let Selection {
        predicate, wanted, ..
    } = *select;
    let mut batch = Batch {
        items: Vec::new(),
        last_key: None,
        cut: false,
    };
    // Without a filter, nothing past the wanted count is decoded at all.
    if let Some(w) = wanted.filter(|w| predicate.is_everything() && kvs.len() > *w) {
        kvs.truncate(w);
        batch.cut = true;
    }
    let mut known = select.known.map(|known| known(&kvs)).unwrap_or_default();
    known.resize(kvs.len(), None);
    let decode = |(kv, known): (KeyValue, Option<Object>)| {
        let kept = match known {
            // The cache's copy, held as JSON: looked at, not decoded for good.
            Some(obj) => Ok(predicate.matches_stored(&obj).then_some(obj)),
            None => decode_object(codec, &kv.key, &kv.value, kv.mod_revision)
                .map(|obj| predicate.matches(&obj).then(|| Arc::new(obj.into()))),
        };
        (kv.key, kept)
    };
    let decoded: Vec<(String, Result<Option<Object>>)> = if kvs.len() < offload::INLINE_OBJECTS {
        kvs.into_iter().zip(known).map(decode).collect()
    } else {
        kvs.into_par_iter()
            .zip(known)
            .with_min_len(PARALLEL_DECODE_CHUNK)
            .map(decode)
            .collect()
    };
    for (key, kept) in decoded {
        if wanted.is_some_and(|w| batch.items.len() >= w) {
            batch.cut = true;
            break;
        }
        batch.items.extend(kept?);
        batch.last_key = Some(key);
    }
    Ok(batch)
}

/// Where a list starts and at which revision it reads.
struct ListStart {
    key_prefix: String,
    start_key: String,
    revision: i64,
    /// The revision of the continue token, when resuming a list.
    continued_from: Option<i64>,
}

fn list_start(key: &str, opts: &ListOptions) -> Result<ListStart> {
    // Recursive lists read the children of `key/`, so `/a` never matches `/ab`.
    let key_prefix = if opts.recursive && !key.ends_with('/') {
        format!("{key}/")
    } else {
        key.to_string()
    };
    let token = opts.continue_token.as_deref().filter(|t| !t.is_empty());
    match token {
        Some(token) if opts.recursive => {
            let cont = continue_token::decode(token, &key_prefix)?;
            if let ReadVersion::NotOlderThan(n) | ReadVersion::Exact(n) = opts.version {
                if n > 0 {
                    return Err(StorageError::InvalidContinue(
                        "specifying resource version is not allowed when using continue".into(),
                    ));
                }
            }
            Ok(ListStart {
                key_prefix,
                start_key: cont.start_key,
                // A negative token revision asks for the latest state.
                revision: cont.resource_version.max(0),
                continued_from: Some(cont.resource_version),
            })
        }
        _ => Ok(ListStart {
            start_key: key_prefix.clone(),
            key_prefix,
            revision: match opts.version {
                ReadVersion::Exact(n) => n,
                _ => 0,
            },
            continued_from: None,
        }),
    }
}

/// A continued list whose revision has been compacted away cannot go on
/// consistently: upstream's "continue token expired" (410).
fn expired_continue(e: StorageError, continued_from: Option<i64>) -> StorageError {
    match (e, continued_from) {
        (StorageError::TooOldResourceVersion { .. }, Some(requested)) => {
            StorageError::ContinueExpired { requested }
        }
        (e, _) => e,
    }
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
    use crate::codec::JsonCodec;

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

    fn batch_of(n: usize, corrupt_at: Option<usize>) -> Vec<KeyValue> {
        (0..n)
            .map(|i| KeyValue {
                key: format!("/k/{i:05}"),
                value: if corrupt_at == Some(i) {
                    Bytes::from_static(b"{")
                } else {
                    Bytes::from(format!(r#"{{"metadata":{{"name":"{i:05}"}},"n":{i}}}"#))
                },
                create_revision: 1,
                mod_revision: 2,
            })
            .collect()
    }

    fn names(batch: &Batch) -> Vec<i64> {
        batch.items.iter().filter_map(|o| o["n"].as_i64()).collect()
    }

    /// Decodes `kvs`, keeping what `predicate` matches up to `wanted`.
    fn decode(
        kvs: Vec<KeyValue>,
        predicate: &Predicate,
        wanted: Option<usize>,
        known: Option<&KnownVersions>,
    ) -> Result<Batch> {
        let select = Selection {
            predicate,
            wanted,
            known,
        };
        decode_batch(&JsonCodec, kvs, &select)
    }

    #[test]
    fn big_batches_decode_in_key_order_up_to_the_cut() {
        let even = Predicate::new(|o| o["n"].as_i64().is_some_and(|n| n % 2 == 0));
        let n = 3 * offload::INLINE_OBJECTS;
        let batch = decode(batch_of(n, Some(n - 1)), &even, Some(100), None).unwrap();
        assert_eq!(names(&batch), (0..200).step_by(2).collect::<Vec<_>>());
        assert_eq!(batch.last_key.as_deref(), Some("/k/00198"));
        assert!(batch.cut);
        // Without a filter nothing past the cut is decoded, a corrupt object there included.
        let all = Predicate::everything();
        let batch = decode(batch_of(n, Some(n - 1)), &all, Some(n - 1), None).unwrap();
        assert_eq!(names(&batch), (0..n as i64 - 1).collect::<Vec<_>>());
        assert!(batch.cut);
        let batch = decode(batch_of(n, None), &all, None, None).unwrap();
        assert_eq!(batch.items.len(), n);
        assert!(!batch.cut);
        assert_eq!(batch.items[7]["metadata"]["resourceVersion"], "2");
        // A corrupt object before the cut fails the batch.
        let failed = decode(batch_of(n, Some(5)), &all, None, None);
        assert!(matches!(failed, Err(StorageError::Corrupt { .. })));
    }

    /// Copies of every third of `kvs` (marked `"known": true`), for the
    /// first `answers` only, and the lookup answering with them by position.
    fn every_third_known(kvs: &[KeyValue], answers: usize) -> (KnownVersions, Vec<Option<Object>>) {
        let copy = |(i, kv): (usize, &KeyValue)| {
            (i % 3 == 0 && i < answers).then(|| {
                let mut obj: Value = serde_json::from_slice(&kv.value).unwrap_or_default();
                obj["n"] = i.into();
                obj["known"] = true.into();
                Arc::new(obj.into())
            })
        };
        let copies: Vec<Option<Object>> = kvs.iter().enumerate().map(copy).collect();
        let held = copies.clone();
        let known: KnownVersions = Arc::new(move |batch: &[KeyValue]| {
            held.iter()
                .take(batch.len().min(answers))
                .cloned()
                .collect()
        });
        (known, copies)
    }

    fn is_known(obj: &Value) -> bool {
        obj.get("known").is_some()
    }

    #[test]
    fn known_versions_are_taken_instead_of_decoded_and_filtered_alike() {
        let all = Predicate::everything();
        for n in [50, 3 * offload::INLINE_OBJECTS] {
            // The corrupt value at 3 is known, so it is never decoded.
            let kvs = batch_of(n, Some(3));
            let (known, copies) = every_third_known(&kvs, n);
            let batch = decode(kvs, &all, None, Some(&known)).unwrap();
            assert_eq!(names(&batch), (0..n as i64).collect::<Vec<_>>());
            for (i, (item, copy)) in batch.items.iter().zip(&copies).enumerate() {
                match copy {
                    Some(copy) => assert!(Arc::ptr_eq(item, copy), "{i}"),
                    None => assert!(!is_known(item), "{i}"),
                }
            }
            // The predicate sees the copies (which it drops here), and the
            // cut counts what it keeps.
            let unknown = Predicate::new(|o| !is_known(o));
            let (known, _) = every_third_known(&batch_of(n, None), n);
            let batch = decode(batch_of(n, None), &unknown, Some(10), Some(&known)).unwrap();
            let kept: Vec<i64> = (0..15).filter(|i| i % 3 != 0).collect();
            assert_eq!(names(&batch), kept);
            assert_eq!(batch.last_key.as_deref(), Some("/k/00014"));
            assert!(batch.cut);
            // Without a filter the batch is cut before the lookup.
            let batch = decode(batch_of(n, None), &all, Some(4), Some(&known)).unwrap();
            let marked: Vec<bool> = batch.items.iter().map(|o| is_known(o)).collect();
            assert_eq!(marked, [true, false, false, true]);
            // Kvs the lookup gives no answer for are decoded.
            let (short, _) = every_third_known(&batch_of(n, None), 2);
            let batch = decode(batch_of(n, None), &all, None, Some(&short)).unwrap();
            assert_eq!(batch.items.len(), n);
            let marked: Vec<usize> = (0..n).filter(|i| is_known(&batch.items[*i])).collect();
            assert_eq!(marked, [0]);
        }
    }
}
