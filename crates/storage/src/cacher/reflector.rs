//! The cacher's feed (upstream's reflector over the cacher's lister-watcher):
//! list the resource, then watch from the list's revision, applying every
//! event to the watch cache and fanning it out. A watch that ends is resumed
//! from the last revision seen; one whose start was compacted (or that keeps
//! failing) triggers a re-list, which ends every cache watch so clients
//! re-list too.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rayon::iter::{IntoParallelIterator, ParallelIterator};
use tokio::time::{Instant, MissedTickBehavior};

use super::Shared;
use crate::error::{Result, StorageError};
use crate::interface::{ListOptions, Object, ReadVersion, Storage, WatchEvent, WatchOptions};
use crate::offload;

/// Pause before retrying a failed list or watch.
const RETRY_DELAY: Duration = Duration::from_secs(1);

/// How long watch errors may persist before the cache re-lists (upstream's
/// reflector `MaxInternalErrorRetryDuration`).
const MAX_ERROR_DURATION: Duration = Duration::from_secs(30);

/// How often due bookmarks are sent to watchers (upstream: 1 s, jittered).
const BOOKMARK_TICK: Duration = Duration::from_secs(1);

/// Runs until the cacher is dropped (the task is aborted).
pub(super) async fn run(shared: Arc<Shared>, storage: Arc<dyn Storage>) {
    loop {
        let Some(rv) = list(&shared, storage.as_ref()).await else {
            tokio::time::sleep(RETRY_DELAY).await;
            continue;
        };
        follow(&shared, storage.as_ref(), rv).await;
        tracing::info!(prefix = %shared.config.resource_prefix, "watch cache re-listing");
        shared.become_unready();
    }
}

/// Lists the resource into the cache; returns the list's revision.
async fn list(shared: &Shared, storage: &dyn Storage) -> Option<i64> {
    match list_pages(shared, storage).await {
        Ok((items, rv)) => {
            shared.replace(items, rv);
            Some(rv)
        }
        Err(e) => {
            let prefix = &shared.config.resource_prefix;
            tracing::warn!(%prefix, error = %e, "watch cache list failed");
            None
        }
    }
}

/// Every object under the cache's prefix at one revision, keyed and
/// compacted. Fetched in pages as upstream's reflector does, so one huge
/// response never has to be built, and compacted page by page, so the
/// trees of one page at most are alive at once (a restart lists every
/// object stored).
async fn list_pages(
    shared: &Shared,
    storage: &dyn Storage,
) -> Result<(Vec<(String, Object)>, i64)> {
    let prefix = &shared.config.resource_prefix;
    let mut opts = ListOptions {
        version: ReadVersion::MostRecent,
        recursive: true,
        limit: Some(shared.config.list_page_size),
        ..ListOptions::default()
    };
    let mut items = Vec::new();
    loop {
        let page = storage.get_list(prefix, opts.clone()).await?;
        let key_func = shared.config.key_func.clone();
        let keyed = move |obj: Object| match key_func(&obj) {
            Some(key) => Some((key, compact(obj))),
            None => {
                tracing::warn!("listed object has no key");
                None
            }
        };
        let listed = page.items;
        // Encoding every object holds a core: off the async workers, on all.
        let keyed = offload::run_for(listed.len(), move || {
            listed.into_par_iter().filter_map(keyed).collect::<Vec<_>>()
        });
        items.extend(keyed.await);
        match page.continue_token {
            Some(token) => opts.continue_token = Some(token),
            None => return Ok((items, page.resource_version)),
        }
    }
}

/// How one underlying watch ended.
enum End {
    /// The stream ended: resume from the last revision.
    Closed,
    /// The revision to resume from is compacted: re-list.
    Expired,
    Failed(StorageError),
}

/// Watches from `rv` until the cache must re-list.
async fn follow(shared: &Shared, storage: &dyn Storage, mut rv: i64) {
    let mut bookmarks = tokio::time::interval(BOOKMARK_TICK);
    bookmarks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut failing_since: Option<Instant> = None;
    loop {
        let opts = WatchOptions {
            resource_version: rv,
            recursive: true,
            allow_bookmarks: true,
            ..WatchOptions::default()
        };
        let end = match storage.watch(&shared.config.resource_prefix, opts).await {
            Ok(stream) => consume(shared, stream, &mut rv, &mut bookmarks).await,
            Err(StorageError::TooOldResourceVersion { .. }) => End::Expired,
            Err(e) => End::Failed(e),
        };
        match end {
            End::Expired => return,
            End::Closed => {
                failing_since = None;
                tokio::time::sleep(RETRY_DELAY / 10).await;
            }
            End::Failed(e) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                tracing::warn!(prefix = %shared.config.resource_prefix, error = %e, "watch cache watch failed");
                if since.elapsed() >= MAX_ERROR_DURATION {
                    return;
                }
                tokio::time::sleep(RETRY_DELAY).await;
            }
        }
    }
}

async fn consume(
    shared: &Shared,
    mut stream: crate::interface::WatchStream,
    rv: &mut i64,
    bookmarks: &mut tokio::time::Interval,
) -> End {
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = bookmarks.tick() => {
                shared.registry.dispatch_bookmarks(shared.current_rv());
                continue;
            }
        };
        match event {
            None => return End::Closed,
            Some(WatchEvent::Error(StorageError::TooOldResourceVersion { .. })) => {
                return End::Expired
            }
            Some(WatchEvent::Error(e)) => return End::Failed(e),
            Some(WatchEvent::Bookmark(progress)) => {
                *rv = (*rv).max(progress);
                shared.advance(progress);
            }
            Some(WatchEvent::Added(obj) | WatchEvent::Modified(obj)) => {
                process(shared, obj, false, rv).await
            }
            Some(WatchEvent::Deleted(obj)) => process(shared, obj, true, rv).await,
        }
    }
}

async fn process(shared: &Shared, obj: Object, deleted: bool, rv: &mut i64) {
    let Some(event_rv) = resource_version(&obj) else {
        tracing::warn!(prefix = %shared.config.resource_prefix, "watch event without a resourceVersion");
        return;
    };
    let Some(key) = (shared.config.key_func)(&obj) else {
        tracing::warn!(prefix = %shared.config.resource_prefix, "watch event for an object without a key");
        return;
    };
    *rv = (*rv).max(event_rv);
    let event = shared.apply(&key, compact(obj), deleted, event_rv);
    shared.registry.dispatch(&event, &shared.budget).await;
}

/// The version as the cache keeps it: its JSON encoding alone (see
/// [`crate::object`]).
fn compact(obj: Object) -> Object {
    if obj.has_tree() {
        Arc::new(obj.compact())
    } else {
        obj
    }
}

/// The object's `metadata.resourceVersion` as a revision.
fn resource_version(obj: &serde_json::Value) -> Option<i64> {
    obj.get("metadata")?
        .get("resourceVersion")?
        .as_str()?
        .parse()
        .ok()
}
