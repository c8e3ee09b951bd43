//! Watches on etcd, turned into the storage layer's [`KvWatchStream`].
//!
//! Each watch is its own gRPC stream created with `prev_kv` and
//! `progress_notify`, as upstream's etcd3 watcher creates them. Responses
//! with events become events; empty responses are progress notifications;
//! a cancellation (etcd cancels a watch whose start revision has been
//! compacted, also later when a slow watcher falls behind a compaction)
//! ends the stream with an error.

use std::sync::Arc;

use etcd_client::proto::{PbEvent, PbWatchResponse};
use etcd_client::{WatchOptions, WatchRequestSender, WatchResponseStream};
use futures::StreamExt;
use storage::{KvEvent, KvEventKind, KvWatchItem, KvWatchStream, StorageError};

use storage::error::Result;

use crate::compact::Compaction;
use crate::error::{Failure, Retry};
use crate::kv::key_value;
use crate::members::{bounded, Members};
use crate::rpc;

/// What to watch.
pub(crate) struct Target<'a> {
    pub key: &'a str,
    pub prefix: bool,
    /// First revision to deliver; 0: from the next write on.
    pub start_revision: i64,
}

/// Creates the watch and returns once etcd has confirmed it, so that every
/// write after this returns is seen even with `start_revision` 0.
pub(crate) async fn open(
    members: &Members,
    target: Target<'_>,
    compaction: Arc<Compaction>,
) -> Result<KvWatchStream> {
    let mut options = WatchOptions::new()
        .with_start_revision(target.start_revision)
        .with_prev_key()
        .with_progress_notify();
    if target.prefix {
        options = options.with_prefix();
    }
    let request = (target.key.to_string(), options);
    let created = members.call(
        rpc::WATCH,
        Retry::Idempotent,
        request,
        |m, (key, options)| {
            let mut client = m.watch.clone();
            async move { client.watch(key, Some(options)).await }
        },
    );
    let (requests, mut responses) = created.await.map_err(Failure::into_storage_error)?.split();
    let first = bounded(members.request_timeout(), "watch", responses.message())
        .await
        .map_err(Failure::into_storage_error)?;
    let mut state = State {
        _requests: requests,
        responses,
        next_revision: target.start_revision,
        compaction,
        ended: false,
    };
    let first_items = match first {
        Some(resp) => state.convert(resp.0),
        None => {
            return Err(StorageError::Unreachable(
                "etcd closed the watch before confirming it".to_string(),
            ))
        }
    };
    let rest = futures::stream::unfold(state, |mut state| async move {
        if state.ended {
            return None;
        }
        let items = match state.responses.message().await {
            Ok(Some(resp)) => state.convert(resp.0),
            Ok(None) => return None,
            Err(e) => {
                state.ended = true;
                vec![Err(Failure::classify(e).into_storage_error())]
            }
        };
        Some((futures::stream::iter(items), state))
    })
    .flatten();
    Ok(Box::pin(futures::stream::iter(first_items).chain(rest)))
}

struct State {
    /// Keeps the request half open: closing it would end the watch.
    _requests: WatchRequestSender,
    responses: WatchResponseStream,
    /// The revision the next event is expected at (for error reports).
    next_revision: i64,
    compaction: Arc<Compaction>,
    ended: bool,
}

impl State {
    /// Turns one watch response into stream items.
    fn convert(&mut self, resp: PbWatchResponse) -> Vec<Result<KvWatchItem>> {
        if resp.canceled || resp.compact_revision != 0 {
            self.ended = true;
            return vec![Err(self.cancellation(&resp))];
        }
        if resp.created {
            return Vec::new();
        }
        if resp.events.is_empty() {
            let revision = resp.header.map_or(0, |h| h.revision);
            return vec![Ok(KvWatchItem::Progress(revision))];
        }
        let mut items = Vec::with_capacity(resp.events.len());
        for ev in resp.events {
            match event(ev) {
                Ok(e) => {
                    self.next_revision = e.kv.mod_revision + 1;
                    items.push(Ok(KvWatchItem::Event(e)));
                }
                Err(e) => {
                    // An error ends the stream: drop what follows it.
                    self.ended = true;
                    items.push(Err(e));
                    break;
                }
            }
        }
        items
    }

    fn cancellation(&self, resp: &PbWatchResponse) -> StorageError {
        if resp.compact_revision > 0 {
            self.compaction.observe(resp.compact_revision);
            return StorageError::TooOldResourceVersion {
                requested: self.next_revision,
                compacted: resp.compact_revision,
            };
        }
        StorageError::Internal(format!("etcd cancelled the watch: {}", resp.cancel_reason))
    }
}

fn event(ev: PbEvent) -> Result<KvEvent> {
    // mvccpb.Event.EventType: PUT = 0, DELETE = 1.
    let kind = match ev.r#type {
        0 => KvEventKind::Put,
        1 => KvEventKind::Delete,
        other => {
            return Err(StorageError::Internal(format!(
                "unknown etcd event type {other}"
            )))
        }
    };
    let kv = ev
        .kv
        .ok_or_else(|| StorageError::Internal("etcd event without a key-value".to_string()))?;
    Ok(KvEvent {
        kind,
        kv: key_value(kv)?,
        prev: ev.prev_kv.map(key_value).transpose()?,
    })
}
