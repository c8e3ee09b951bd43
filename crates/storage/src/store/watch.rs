//! Watches over the KV's event stream (upstream's etcd3 `watcher.go`):
//! an optional initial state, KV events translated into Added / Modified /
//! Deleted with the predicate applied the way upstream does, bookmarks, and
//! errors delivered as a final `Error` event.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::handoff::Subscription;
use super::Store;
use crate::codec::Codec;
use crate::error::{Result, StorageError};
use crate::interface::{Object, Predicate, WatchEvent, WatchOptions, WatchStream};
use crate::kv::{prefix_end, KvEvent, KvEventKind, KvWatchItem, KvWatchStream, RangeRequest};

use super::object::decode_object;

pub(super) async fn watch(store: &Store, key: &str, opts: WatchOptions) -> Result<WatchStream> {
    // Writes from here on hand their objects over (the initial state and
    // earlier writes are decoded).
    let handoff = store.handoff.subscribe();
    let key = if opts.recursive && !key.ends_with('/') {
        format!("{key}/")
    } else {
        key.to_string()
    };
    let mut initial = Vec::new();
    let mut start = opts.resource_version;
    if start == 0 {
        // No revision given: the current state first, then changes after it.
        let resp = store
            .kv
            .range(RangeRequest {
                range_end: opts.recursive.then(|| prefix_end(&key)),
                key: key.clone(),
                ..RangeRequest::default()
            })
            .await?;
        for kv in resp.kvs {
            let obj = store.decode(&kv.key, &kv.value, kv.mod_revision)?;
            if opts.predicate.matches(&obj) {
                initial.push(WatchEvent::Added(Arc::new(obj.into())));
            }
        }
        start = resp.revision;
    }
    let kv_stream = match store.kv.watch(&key, opts.recursive, start + 1).await {
        Ok(stream) => Some(stream),
        // A compacted start is reported in-stream, as upstream's watch does.
        Err(e @ StorageError::TooOldResourceVersion { .. }) => {
            initial.push(WatchEvent::Error(e));
            None
        }
        Err(e) => return Err(e),
    };
    let ticker = (opts.allow_bookmarks && !store.bookmark_interval.is_zero())
        .then(|| bookmark_ticker(store.bookmark_interval));
    let translator = Watcher {
        codec: store.codec.clone(),
        handoff,
        predicate: opts.predicate,
        allow_bookmarks: opts.allow_bookmarks,
        initial: initial.into_iter(),
        kv_stream,
        ticker,
        seen_revision: start,
        bookmarked_revision: start,
    };
    Ok(Box::pin(futures::stream::unfold(
        translator,
        |mut w| async move { w.next_event().await.map(|event| (event, w)) },
    )))
}

fn bookmark_ticker(period: Duration) -> Interval {
    let mut ticker = tokio::time::interval_at(Instant::now() + period, period);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    ticker
}

struct Watcher {
    codec: Arc<dyn Codec>,
    handoff: Subscription,
    predicate: Predicate,
    allow_bookmarks: bool,
    initial: std::vec::IntoIter<WatchEvent>,
    /// None once the stream has ended or failed.
    kv_stream: Option<KvWatchStream>,
    ticker: Option<Interval>,
    /// Every KV event up to this revision has been processed.
    seen_revision: i64,
    bookmarked_revision: i64,
}

enum Next {
    Item(Option<Result<KvWatchItem>>),
    Tick,
}

impl Watcher {
    async fn next_event(&mut self) -> Option<WatchEvent> {
        if let Some(event) = self.initial.next() {
            return Some(event);
        }
        loop {
            let stream = self.kv_stream.as_mut()?;
            let next = match self.ticker.as_mut() {
                Some(ticker) => tokio::select! {
                    item = stream.next() => Next::Item(item),
                    _ = ticker.tick() => Next::Tick,
                },
                None => Next::Item(stream.next().await),
            };
            let item = match next {
                Next::Tick => match self.bookmark(self.seen_revision) {
                    Some(event) => return Some(event),
                    None => continue,
                },
                Next::Item(item) => item,
            };
            match item {
                None => {
                    self.kv_stream = None;
                    return None;
                }
                Some(Err(e)) => return Some(self.fail(e)),
                Some(Ok(KvWatchItem::Progress(revision))) => {
                    self.seen_revision = self.seen_revision.max(revision);
                    if let Some(event) = self.bookmark(self.seen_revision) {
                        return Some(event);
                    }
                }
                Some(Ok(KvWatchItem::Event(event))) => {
                    self.seen_revision = self.seen_revision.max(event.kv.mod_revision);
                    match self.translate(event).await {
                        Ok(Some(event)) => return Some(event),
                        Ok(None) => {}
                        Err(e) => return Some(self.fail(e)),
                    }
                }
            }
        }
    }

    fn fail(&mut self, e: StorageError) -> WatchEvent {
        self.kv_stream = None;
        WatchEvent::Error(e)
    }

    fn bookmark(&mut self, revision: i64) -> Option<WatchEvent> {
        if !self.allow_bookmarks || revision <= self.bookmarked_revision {
            return None;
        }
        self.bookmarked_revision = revision;
        Some(WatchEvent::Bookmark(revision))
    }

    /// Upstream's `watchChan.transform`: with a predicate, a modification
    /// that enters the selection is Added and one that leaves it is Deleted
    /// (carrying the old object at the new revision).
    async fn translate(&mut self, event: KvEvent) -> Result<Option<WatchEvent>> {
        let revision = event.kv.mod_revision;
        let key = event.kv.key.as_str();
        let prev = || {
            event.prev.as_ref().ok_or_else(|| {
                StorageError::internal(format!(
                    "watch event for {key} at revision {revision} carries no previous value"
                ))
            })
        };
        match event.kind {
            KvEventKind::Delete => {
                let old = self.object(key, &prev()?.value, revision).await?;
                Ok(self
                    .predicate
                    .matches(&old)
                    .then_some(WatchEvent::Deleted(old)))
            }
            KvEventKind::Put => {
                let current = self.object(key, &event.kv.value, revision).await?;
                let created = event.prev.is_none() || event.kv.create_revision == revision;
                if created {
                    return Ok(self
                        .predicate
                        .matches(&current)
                        .then_some(WatchEvent::Added(current)));
                }
                if self.predicate.is_everything() {
                    return Ok(Some(WatchEvent::Modified(current)));
                }
                let old = decode_object(self.codec.as_ref(), key, &prev()?.value, revision)?;
                Ok(
                    match (
                        self.predicate.matches(&current),
                        self.predicate.matches(&old),
                    ) {
                        (true, true) => Some(WatchEvent::Modified(current)),
                        (true, false) => Some(WatchEvent::Added(current)),
                        (false, true) => Some(WatchEvent::Deleted(Arc::new(old.into()))),
                        (false, false) => None,
                    },
                )
            }
        }
    }

    /// The object stored as `data` at `key` by the write of `revision` (for
    /// a delete: the object deleted), as its writer handed it over, else
    /// decoded.
    async fn object(&mut self, key: &str, data: &[u8], revision: i64) -> Result<Object> {
        if let Some(obj) = self.handoff.take(key, data, revision).await {
            return Ok(obj);
        }
        decode_object(self.codec.as_ref(), key, data, revision).map(|obj| Arc::new(obj.into()))
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use serde_json::json;

    use super::*;
    use crate::codec::JsonCodec;
    use crate::kv::KeyValue;

    fn kv(name: &str, value: &str, create_revision: i64, mod_revision: i64) -> KeyValue {
        let obj = json!({"metadata": {"name": name}, "value": value});
        KeyValue {
            key: format!("/p/{name}"),
            value: Bytes::from(obj.to_string()),
            create_revision,
            mod_revision,
        }
    }

    fn put(current: KeyValue, prev: Option<KeyValue>) -> Result<KvWatchItem> {
        Ok(KvWatchItem::Event(KvEvent {
            kind: KvEventKind::Put,
            kv: current,
            prev,
        }))
    }

    fn watcher(items: Vec<Result<KvWatchItem>>, predicate: Predicate, bookmarks: bool) -> Watcher {
        Watcher {
            codec: Arc::new(JsonCodec),
            handoff: Arc::new(super::super::handoff::Handoff::default()).subscribe(),
            predicate,
            allow_bookmarks: bookmarks,
            initial: Vec::new().into_iter(),
            kv_stream: Some(Box::pin(futures::stream::iter(items))),
            ticker: None,
            seen_revision: 1,
            bookmarked_revision: 1,
        }
    }

    fn describe(event: Option<WatchEvent>) -> String {
        match event {
            Some(WatchEvent::Added(o)) => {
                format!("Added {} {}", o["value"], o["metadata"]["resourceVersion"])
            }
            Some(WatchEvent::Modified(o)) => format!(
                "Modified {} {}",
                o["value"], o["metadata"]["resourceVersion"]
            ),
            Some(WatchEvent::Deleted(o)) => format!(
                "Deleted {} {}",
                o["value"], o["metadata"]["resourceVersion"]
            ),
            Some(WatchEvent::Bookmark(rev)) => format!("Bookmark {rev}"),
            Some(WatchEvent::Error(e)) => format!("Error {e}"),
            None => "end".to_string(),
        }
    }

    #[tokio::test]
    async fn progress_becomes_bookmarks_only_when_allowed() {
        let items = || {
            vec![
                Ok(KvWatchItem::Progress(5)),
                Ok(KvWatchItem::Progress(5)),
                Ok(KvWatchItem::Progress(7)),
            ]
        };
        let mut w = watcher(items(), Predicate::everything(), true);
        assert_eq!(describe(w.next_event().await), "Bookmark 5");
        assert_eq!(
            describe(w.next_event().await),
            "Bookmark 7",
            "no repeated bookmark"
        );
        assert_eq!(describe(w.next_event().await), "end");
        let mut w = watcher(items(), Predicate::everything(), false);
        assert_eq!(describe(w.next_event().await), "end");
    }

    #[tokio::test]
    async fn filtered_events_advance_the_bookmark() {
        let items = vec![put(kv("a", "x", 3, 3), None), Ok(KvWatchItem::Progress(2))];
        let mut w = watcher(items, Predicate::new(|_| false), true);
        assert_eq!(describe(w.next_event().await), "Bookmark 3");
        assert_eq!(describe(w.next_event().await), "end");
    }

    #[tokio::test]
    async fn events_translate_like_upstream() {
        let items = vec![
            put(kv("a", "1", 2, 2), None),
            put(kv("a", "2", 2, 3), Some(kv("a", "1", 2, 2))),
            Ok(KvWatchItem::Event(KvEvent {
                kind: KvEventKind::Delete,
                kv: KeyValue {
                    value: Bytes::new(),
                    ..kv("a", "", 0, 4)
                },
                prev: Some(kv("a", "2", 2, 3)),
            })),
            Ok(KvWatchItem::Event(KvEvent {
                kind: KvEventKind::Delete,
                kv: KeyValue {
                    value: Bytes::new(),
                    ..kv("a", "", 0, 5)
                },
                prev: None,
            })),
            put(kv("a", "never", 6, 6), None),
        ];
        let mut w = watcher(items, Predicate::everything(), false);
        assert_eq!(describe(w.next_event().await), r#"Added "1" "2""#);
        assert_eq!(describe(w.next_event().await), r#"Modified "2" "3""#);
        assert_eq!(describe(w.next_event().await), r#"Deleted "2" "4""#);
        // A deletion without the previous value cannot be reported: the watch fails.
        assert!(describe(w.next_event().await).starts_with("Error"));
        assert_eq!(describe(w.next_event().await), "end");
    }

    #[tokio::test]
    async fn stream_errors_end_the_watch() {
        let items = vec![
            Err(StorageError::TooOldResourceVersion {
                requested: 1,
                compacted: 5,
            }),
            put(kv("a", "1", 6, 6), None),
        ];
        let mut w = watcher(items, Predicate::everything(), false);
        assert!(matches!(
            w.next_event().await,
            Some(WatchEvent::Error(
                StorageError::TooOldResourceVersion { .. }
            ))
        ));
        assert!(w.next_event().await.is_none());
    }
}
