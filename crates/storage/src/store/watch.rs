//! Watches over the KV's event stream (upstream's etcd3 `watcher.go`):
//! an optional initial state, KV events translated into Added / Modified /
//! Deleted with the predicate applied the way upstream does, bookmarks, and
//! errors delivered as a final `Error` event.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::Store;
use crate::codec::Codec;
use crate::error::{Result, StorageError};
use crate::interface::{Predicate, WatchEvent, WatchOptions, WatchStream};
use crate::kv::{prefix_end, KvEvent, KvEventKind, KvWatchItem, KvWatchStream, RangeRequest};

use super::object::decode_object;

pub(super) async fn watch(store: &Store, key: &str, opts: WatchOptions) -> Result<WatchStream> {
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
                initial.push(WatchEvent::Added(Arc::new(obj)));
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
                    if let Some(event) = self.bookmark(revision) {
                        return Some(event);
                    }
                }
                Some(Ok(KvWatchItem::Event(event))) => {
                    self.seen_revision = self.seen_revision.max(event.kv.mod_revision);
                    match self.translate(event) {
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
    fn translate(&self, event: KvEvent) -> Result<Option<WatchEvent>> {
        let revision = event.kv.mod_revision;
        let key = event.kv.key.as_str();
        let decode_prev = |prev: Option<&crate::kv::KeyValue>| -> Result<serde_json::Value> {
            let prev = prev.ok_or_else(|| {
                StorageError::internal(format!(
                    "watch event for {key} at revision {revision} carries no previous value"
                ))
            })?;
            decode_object(self.codec.as_ref(), key, &prev.value, revision)
        };
        match event.kind {
            KvEventKind::Delete => {
                let old = decode_prev(event.prev.as_ref())?;
                Ok(self
                    .predicate
                    .matches(&old)
                    .then(|| WatchEvent::Deleted(Arc::new(old))))
            }
            KvEventKind::Put => {
                let current = decode_object(self.codec.as_ref(), key, &event.kv.value, revision)?;
                let created = event.prev.is_none() || event.kv.create_revision == revision;
                if created {
                    return Ok(self
                        .predicate
                        .matches(&current)
                        .then(|| WatchEvent::Added(Arc::new(current))));
                }
                if self.predicate.is_everything() {
                    return Ok(Some(WatchEvent::Modified(Arc::new(current))));
                }
                let old = decode_prev(event.prev.as_ref())?;
                Ok(
                    match (
                        self.predicate.matches(&current),
                        self.predicate.matches(&old),
                    ) {
                        (true, true) => Some(WatchEvent::Modified(Arc::new(current))),
                        (true, false) => Some(WatchEvent::Added(Arc::new(current))),
                        (false, true) => Some(WatchEvent::Deleted(Arc::new(old))),
                        (false, false) => None,
                    },
                )
            }
        }
    }
}
