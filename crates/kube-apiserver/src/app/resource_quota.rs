//! The resource quota controller (kube-controller-manager's, run
//! in-process so that a server on its own keeps quota status current):
//! it follows ResourceQuotas and the resources they count, and rewrites a
//! quota's `status.hard` (its `spec.hard`) and `status.used` (the
//! namespace's usage of every hard resource, zero when unused) whenever
//! they differ from what the namespace holds. Bursts of changes are
//! gathered before a namespace is recounted, every quota is recounted
//! periodically, and each write carries the resourceVersion it was
//! computed from (recomputed on conflict), so a real controller-manager
//! beside it is harmless.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::store::Store;
use apiserver::server::GenericApiServer;
use futures::StreamExt;
use serde_json::Value;
use storage::{GetOptions, WatchEvent, WatchOptions};
use tokio::sync::mpsc;

use crate::admission::quota::{evaluator, write_status};
use crate::api::resource::parsed_list;
use apiserver::admission::initializer::Stores;

/// How long changes are gathered before namespaces are recounted.
const DEBOUNCE: Duration = Duration::from_millis(100);
/// How often every quota is recounted (upstream's
/// `--resource-quota-sync-period` is 5m; usage admitted for a write that
/// then failed is corrected sooner here).
const RESYNC: Duration = Duration::from_secs(30);
/// Attempts at one quota's status before waiting for the next change.
const ATTEMPTS: usize = 5;

/// The resources upstream's quota evaluators follow without being asked.
const TRACKED: [&str; 6] = [
    "pods",
    "services",
    "persistentvolumeclaims",
    "configmaps",
    "secrets",
    "replicationcontrollers",
];

/// What the controller hears.
enum Event {
    /// Something in this namespace changed.
    Changed(String),
    /// A quota was added or changed: recount its namespace and follow the
    /// resources it counts.
    Quota(Value),
    /// Time to recount every quota.
    Resync,
}

/// Starts the controller once the server runs, over `server`'s stores.
pub fn install(server: &mut GenericApiServer) {
    let Some(quotas) = server.store("", "v1", "resourcequotas") else {
        return;
    };
    let start = Mutex::new(Some((Stores::new(server.stores()), quotas)));
    server.add_post_start_hook(
        "start-resource-quota-controller",
        Arc::new(move || {
            // The hook runs once; what it needs is taken on that run.
            if let Some((stores, quotas)) = start.lock().ok().and_then(|mut s| s.take()) {
                tokio::spawn(run(stores, quotas));
            }
            Box::pin(async { Ok(()) })
        }),
    );
}

async fn run(stores: Stores, quotas: Arc<Store>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut followed: HashSet<(String, String)> = HashSet::new();
    tokio::spawn(follow(quotas.clone(), tx.clone(), true));
    for resource in TRACKED {
        if let Some(store) = stores.store("", resource) {
            followed.insert((String::new(), resource.to_owned()));
            tokio::spawn(follow(store.clone(), tx.clone(), false));
        }
    }
    let ticker = tx.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(RESYNC).await;
            if ticker.send(Event::Resync).is_err() {
                return;
            }
        }
    });
    while let Some(first) = rx.recv().await {
        let mut dirty: HashSet<String> = HashSet::new();
        let mut resync = false;
        let mut take = |event: Event, dirty: &mut HashSet<String>| match event {
            Event::Changed(ns) => {
                dirty.insert(ns);
            }
            Event::Quota(quota) => {
                follow_counted(&stores, &quota, &mut followed, &tx);
                if let Some(ns) = namespace_of(&quota) {
                    dirty.insert(ns.to_owned());
                }
            }
            Event::Resync => resync = true,
        };
        take(first, &mut dirty);
        tokio::time::sleep(DEBOUNCE).await;
        while let Ok(event) = rx.try_recv() {
            take(event, &mut dirty);
        }
        if resync {
            match stores.list("", "resourcequotas", None).await {
                Ok(all) => dirty.extend(
                    all.iter()
                        .filter_map(|q| namespace_of(q).map(str::to_owned)),
                ),
                Err(e) => tracing::warn!(error = %e.message, "quota resync: listing quotas failed"),
            }
        }
        for ns in dirty {
            sync_namespace(&stores, &quotas, &ns).await;
        }
    }
}

fn namespace_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/namespace").and_then(Value::as_str)
}

/// Starts following the resources a quota's `count/` keys name.
fn follow_counted(
    stores: &Stores,
    quota: &Value,
    followed: &mut HashSet<(String, String)>,
    tx: &mpsc::UnboundedSender<Event>,
) {
    let keys = quota.pointer("/spec/hard").and_then(Value::as_object);
    for key in keys.into_iter().flat_map(|h| h.keys()) {
        let Some(counted) = evaluator::counted_resource(key) else {
            continue;
        };
        if followed.contains(&counted) {
            continue;
        }
        if let Some(store) = stores.store(&counted.0, &counted.1) {
            tokio::spawn(follow(store.clone(), tx.clone(), false));
            followed.insert(counted);
        }
    }
}

/// Follows one resource's watch (every object first, then changes) and
/// reports the namespaces that changed; restarts after errors.
async fn follow(store: Arc<Store>, tx: mpsc::UnboundedSender<Event>, quotas: bool) {
    loop {
        let opts = WatchOptions {
            recursive: true,
            ..Default::default()
        };
        match store.watch(None, opts).await {
            Ok(mut events) => {
                while let Some(event) = events.next().await {
                    let (obj, deleted) = match event {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
                        WatchEvent::Deleted(o) => (o, true),
                        WatchEvent::Error(e) => {
                            tracing::debug!(error = %e, "quota controller watch ended");
                            break;
                        }
                        WatchEvent::Bookmark(_) => continue,
                    };
                    // A deleted quota changes others' `resourcequotas` count.
                    let event = match (quotas && !deleted, namespace_of(&obj)) {
                        (true, _) => Event::Quota((*obj).clone()),
                        (false, Some(ns)) => Event::Changed(ns.to_owned()),
                        (false, None) => continue,
                    };
                    if tx.send(event).is_err() {
                        return;
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "quota controller: watch failed"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Recounts every quota of a namespace.
async fn sync_namespace(stores: &Stores, store: &Store, namespace: &str) {
    let quotas = match stores.list("", "resourcequotas", Some(namespace)).await {
        Ok(q) => q,
        Err(e) => {
            tracing::warn!(namespace, error = %e.message, "quota sync: listing quotas failed");
            return;
        }
    };
    for quota in quotas {
        if let Err(e) = sync_quota(stores, store, (*quota).clone()).await {
            let name = quota.pointer("/metadata/name").and_then(Value::as_str);
            tracing::warn!(namespace, quota = ?name, error = %e.message, "quota status not updated");
        }
    }
}

/// Writes one quota's status when it differs from the recount, retrying
/// on conflicts with the latest quota.
async fn sync_quota(stores: &Stores, store: &Store, mut quota: Value) -> Result<(), ApiError> {
    for _ in 0..ATTEMPTS {
        let status = evaluator::status(stores, &quota).await?;
        let current = quota.get("status");
        let same = |field: &str| {
            current.is_some_and(|c| amounts(c.get(field)) == amounts(status.get(field)))
        };
        if same("hard") && same("used") {
            return Ok(());
        }
        let version = quota
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match write_status(store, &quota, status, version).await {
            Err(e) if e.code == 409 => {
                let namespace = namespace_of(&quota);
                let name = quota.pointer("/metadata/name").and_then(Value::as_str);
                let name = name.unwrap_or_default();
                match store.get(namespace, name, GetOptions::default()).await {
                    Ok(latest) => quota = (*latest).clone(),
                    Err(e) if e.code == 404 => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.code == 404 => return Ok(()),
            other => return other,
        }
    }
    Ok(())
}

/// A resource list by value (so `1Gi` and `1073741824` compare equal).
fn amounts(list: Option<&Value>) -> BTreeMap<String, i128> {
    parsed_list(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_compare_by_value() {
        let a = json!({"memory": "1Gi", "pods": "2"});
        let b = json!({"memory": "1073741824", "pods": "2"});
        assert_eq!(amounts(Some(&a)), amounts(Some(&b)));
        let c = json!({"memory": "1Gi", "pods": "3"});
        assert_ne!(amounts(Some(&a)), amounts(Some(&c)));
        assert_ne!(amounts(Some(&a)), amounts(None));
    }
}
