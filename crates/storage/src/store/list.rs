//! Upstream's `GetList` (`etcd3/store.go`): a range read page by page at
//! one revision, each page decoded and filtered, with continue tokens.
//!
//! A list handed the versions its caller holds (the watch cache's, through
//! `get_list_reusing`) reads each page's keys and mod revisions only
//! (etcd's `keys_only`), takes the caller's object for every key it holds
//! at that mod revision, and fetches only the other values, at the same
//! revision. The result is what a full read gives, while the values the
//! cache holds never cross the wire or get copied out of etcd's response.

use std::sync::Arc;

use component_base::tracing::{self as tracing_ctx, Attribute};
use rayon::iter::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};

use super::object::decode_object;
use super::{check_key, check_minimum, Store};
use crate::codec::Codec;
use crate::continue_token;
use crate::error::{Result, StorageError};
use crate::interface::{KnownVersions, ListOptions, ListResult, Object, Predicate, ReadVersion};
use crate::kv::{prefix_end, KeyValue, RangeRequest};
use crate::offload;

/// The most keys one list fetches from the KV at once while it fills a
/// filtered page (upstream's `maxLimit`).
const MAX_FETCH_LIMIT: i64 = 10_000;

/// The fewest objects one core decodes at a time when a batch is decoded
/// on every core.
const PARALLEL_DECODE_CHUNK: usize = 64;

/// Up to this many values a keys-only page lacks are read one key each,
/// at once; more are read as one range from the first to the last.
const MAX_SINGLE_READS: usize = 32;

impl Store {
    /// `get_list`, reusing `known`'s versions (see [`Store::list_traced`]).
    pub(super) async fn list(
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
        // A list that may be big first fetches a small batch, unadmitted:
        // most lists (a start's, of empty resources) end there, and those
        // that go on wait for a per-core admission before fetching the rest.
        let big = limit.is_none_or(|l| l >= offload::INLINE_OBJECTS as i64);
        let mut fetch_limit = if big {
            offload::INLINE_OBJECTS as i64
        } else {
            limit.unwrap_or(0)
        };
        let mut admitted = None;
        let mut items: Vec<Object> = Vec::new();
        let mut last_key: Option<String> = None;
        let mut count_from_start = None;
        let (has_more, remaining) = loop {
            let resp = self
                .kv
                .range(RangeRequest {
                    key: fetch_from,
                    range_end: range_end.clone(),
                    revision,
                    limit: fetch_limit,
                    count_only: false,
                    keys_only: known.is_some(),
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
            // The first fetch's count covers the whole range from the start.
            let count = *count_from_start.get_or_insert(resp.count);
            let (more, mut kvs) = (resp.more, resp.kvs);
            let wanted = limit.map(|l| {
                usize::try_from(l)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(items.len())
            });
            let predicate = opts.predicate.clone();
            let cut = cut_to_wanted(&mut kvs, &predicate, wanted);
            let (kvs, found) = match &known {
                Some(known) => {
                    let (kvs, found) = look_up(known, kvs).await;
                    let kvs = self.fetch_values(kvs, &found, revision).await?;
                    (kvs, found)
                }
                None => (kvs, Vec::new()),
            };
            let codec = self.codec.clone();
            // Decoding thousands of objects holds a core: off the async workers.
            let batch = offload::run_for(kvs.len(), move || {
                let select = Selection {
                    predicate: &predicate,
                    wanted,
                };
                decode_batch(codec.as_ref(), kvs, found, &select, cut)
            })
            .await?;
            let has_more = more || batch.cut;
            items.extend(batch.items);
            last_key = batch.last_key.or(last_key);
            let done = match limit {
                None => !more,
                Some(limit) => !has_more || items.len() as i64 >= limit,
            };
            if done {
                // The count is exact only when nothing was filtered out.
                let remaining = limit
                    .filter(|_| opts.predicate.is_everything())
                    .map(|limit| count - limit);
                break (has_more, remaining);
            }
            if big && admitted.is_none() {
                admitted = Some(offload::admit_read().await);
                // The rest of the page (or everything, without a limit).
                fetch_limit = limit.map_or(0, |l| l - items.len() as i64);
            } else {
                // Filtering dropped items: fetch bigger batches (upstream doubles).
                fetch_limit = fetch_limit
                    .saturating_mul(2)
                    .min(MAX_FETCH_LIMIT)
                    .max(fetch_limit);
            }
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

    /// Fills in the values of `kvs`, read keys only at `revision`, that
    /// `found` has no object for: a few by reading their keys, many by
    /// reading the range from the first to the last of them.
    async fn fetch_values(
        &self,
        mut kvs: Vec<KeyValue>,
        found: &[Option<Object>],
        revision: i64,
    ) -> Result<Vec<KeyValue>> {
        let missing: Vec<usize> = (0..kvs.len())
            .filter(|i| found.get(*i).is_none_or(Option::is_none))
            .collect();
        let (Some(&first), Some(&last)) = (missing.first(), missing.last()) else {
            return Ok(kvs);
        };
        let read = |key: String, range_end: Option<String>| {
            self.kv.range(RangeRequest {
                key,
                range_end,
                revision,
                ..RangeRequest::default()
            })
        };
        let fetched: Vec<KeyValue> = if missing.len() <= MAX_SINGLE_READS {
            let reads = missing.iter().map(|i| read(kvs[*i].key.clone(), None));
            let responses = futures::future::try_join_all(reads).await?;
            responses.into_iter().flat_map(|r| r.kvs).collect()
        } else {
            let end = format!("{}\0", kvs[last].key);
            read(kvs[first].key.clone(), Some(end)).await?.kvs
        };
        // Both are in key order: one walk matches them.
        let mut values = fetched.into_iter().peekable();
        for i in missing {
            let kv = &mut kvs[i];
            while values.next_if(|v| v.key < kv.key).is_some() {}
            match values.next_if(|v| v.key == kv.key) {
                Some(v) if v.mod_revision == kv.mod_revision => kv.value = v.value,
                _ => {
                    return Err(StorageError::internal(format!(
                        "{} changed within revision {revision}",
                        kv.key
                    )))
                }
            }
        }
        Ok(kvs)
    }
}

/// Cuts `kvs` to `wanted` when nothing is filtered out, so nothing past it
/// is looked up, fetched or decoded; whether it cut.
fn cut_to_wanted(kvs: &mut Vec<KeyValue>, predicate: &Predicate, wanted: Option<usize>) -> bool {
    match wanted.filter(|w| predicate.is_everything() && kvs.len() > *w) {
        Some(w) => {
            kvs.truncate(w);
            true
        }
        None => false,
    }
}

/// `known`'s answer for `kvs`, looked up off the async workers when the
/// page is big.
async fn look_up(
    known: &KnownVersions,
    kvs: Vec<KeyValue>,
) -> (Vec<KeyValue>, Vec<Option<Object>>) {
    let known = Arc::clone(known);
    offload::run_for(kvs.len(), move || {
        let found = known(&kvs);
        (kvs, found)
    })
    .await
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

/// The objects of one fetched batch a list keeps.
struct Batch {
    items: Vec<Object>,
    /// The last key decoded (kept or not).
    last_key: Option<String>,
    /// Whether `wanted` was reached before the batch's end.
    cut: bool,
}

/// Which objects of a fetched batch a list keeps.
struct Selection<'a> {
    predicate: &'a Predicate,
    /// Keep at most this many.
    wanted: Option<usize>,
}

/// Decodes a fetched batch in key order, keeping the objects the predicate
/// matches, until `wanted` of them are kept; the objects `found` holds (by
/// position, the caller's copies of those versions) are taken instead of
/// decoded, filtered all the same. A batch too big to decode on the
/// request's own task is decoded on every core (rayon's pool, one thread
/// per core, shared by every list); the objects are then taken in key
/// order, so an object past the cut that fails to decode is no error.
/// `cut` tells that the batch was cut to `wanted` already.
fn decode_batch(
    codec: &dyn Codec,
    kvs: Vec<KeyValue>,
    mut found: Vec<Option<Object>>,
    select: &Selection,
    cut: bool,
) -> Result<Batch> {
    let Selection { predicate, wanted } = *select;
    let mut batch = Batch {
        items: Vec::new(),
        last_key: None,
        cut,
    };
    found.resize(kvs.len(), None);
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
        kvs.into_iter().zip(found).map(decode).collect()
    } else {
        kvs.into_par_iter()
            .zip(found)
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

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde_json::Value;

    use super::*;
    use crate::codec::JsonCodec;

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
        let mut kvs = kvs;
        let cut = cut_to_wanted(&mut kvs, predicate, wanted);
        let found = known.map(|known| known(&kvs)).unwrap_or_default();
        let select = Selection { predicate, wanted };
        decode_batch(&JsonCodec, kvs, found, &select, cut)
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
