//! The garbage collector (kube-controller-manager's, run in-process so that
//! a server started on its own honours owner references): objects whose
//! owners are all gone are deleted (background), owners deleted with
//! `foregroundDeletion` wait for their blocking dependents, owners deleted
//! with `orphan` release theirs. It follows every served resource,
//! custom resources included, through the stores' watches; every write goes
//! through the stores with preconditions, so a real controller-manager
//! beside it is harmless.

mod graph;
mod queue;
mod worker;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiserver::registry::store::Store;
use apiserver::server::{DynamicGroups, GenericApiServer};
use futures::StreamExt;
use storage::{ListOptions, Object, WatchEvent, WatchOptions};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::apiextensions::controller::Snapshot;
use crate::apiextensions::CustomResources;
use graph::Graph;
use worker::{GcError, Mapper, Workers};

/// Workers deleting objects, as upstream's default `--concurrent-gc-syncs`.
const DELETE_WORKERS: usize = 20;
const ORPHAN_WORKERS: usize = 2;

/// A change seen by one resource's watch.
enum Change {
    /// A complete list (start, or after the watch was lost).
    Listed(Arc<Store>, Vec<Object>),
    Upserted(Arc<Store>, Object),
    Deleted(Object),
}

/// Starts the collector once the server runs, over the built-in resources
/// of `kube` and `extensions` and the custom resources as CRDs serve them.
pub fn install(
    kube: &mut GenericApiServer,
    extensions: &GenericApiServer,
    custom: &CustomResources,
) {
    let mut stores = extensions.stores();
    stores.extend(kube.stores());
    let start = Mutex::new(Some((
        stores,
        custom.snapshots(),
        extensions.dynamic_groups(),
    )));
    kube.add_post_start_hook(
        "start-garbage-collector",
        Arc::new(move || {
            // The hook runs once; what it needs is taken on that run.
            if let Some((stores, crds, dynamic)) = start.lock().ok().and_then(|mut s| s.take()) {
                tokio::spawn(run(stores, crds, dynamic));
            }
            Box::pin(async { Ok(()) })
        }),
    );
}

async fn run(stores: Vec<Arc<Store>>, crds: watch::Receiver<Snapshot>, dynamic: DynamicGroups) {
    let mapper = Mapper::new(&stores, crds.clone(), dynamic.clone());
    let workers = Arc::new(Workers::new(Arc::default(), mapper));
    let (changes, received) = mpsc::unbounded_channel();
    let (synced_tx, synced) = watch::channel(false);
    for store in &stores {
        tokio::spawn(reflect(store.clone(), changes.clone()));
    }
    tokio::spawn(follow_custom_resources(crds, dynamic, changes));
    let unlisted = stores.iter().map(|s| s.info.group_resource()).collect();
    tokio::spawn(build_graph(workers.clone(), received, unlisted, synced_tx));
    for _ in 0..DELETE_WORKERS {
        tokio::spawn(delete_worker(workers.clone(), synced.clone()));
    }
    for _ in 0..ORPHAN_WORKERS {
        tokio::spawn(orphan_worker(workers.clone(), synced.clone()));
    }
}

/// Lists one resource then follows its watch from the list's revision,
/// listing again whenever the watch is lost.
async fn reflect(store: Arc<Store>, changes: mpsc::UnboundedSender<Change>) {
    loop {
        match store.list(None, ListOptions::default()).await {
            Ok(list) => {
                if changes
                    .send(Change::Listed(store.clone(), list.items))
                    .is_err()
                {
                    return;
                }
                let opts = WatchOptions {
                    resource_version: list.resource_version,
                    ..Default::default()
                };
                match store.watch(None, opts).await {
                    Ok(mut events) => {
                        while let Some(event) = events.next().await {
                            let change = match event {
                                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                                    Change::Upserted(store.clone(), o)
                                }
                                WatchEvent::Deleted(o) => Change::Deleted(o),
                                WatchEvent::Bookmark(_) => continue,
                                WatchEvent::Error(e) => {
                                    tracing::debug!(resource = %store.info.group_resource(), error = %e, "garbage collector watch ended");
                                    break;
                                }
                            };
                            if changes.send(change).is_err() {
                                return;
                            }
                        }
                    }
                    Err(e) => tracing::debug!(error = %e.message, "garbage collector watch failed"),
                }
            }
            Err(e) => {
                tracing::warn!(resource = %store.info.group_resource(), error = %e.message, "garbage collector list failed")
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Watches the resources of every CRD while it is served.
async fn follow_custom_resources(
    mut crds: watch::Receiver<Snapshot>,
    dynamic: DynamicGroups,
    changes: mpsc::UnboundedSender<Change>,
) {
    let mut watching: HashMap<(String, String), JoinHandle<()>> = HashMap::new();
    loop {
        let snapshot = crds.borrow_and_update().clone();
        let mut current = HashMap::new();
        for crd in snapshot.iter() {
            let (group, plural) = (&crd.spec.group, &crd.spec.names.plural);
            let store = crd
                .spec
                .versions
                .iter()
                .filter(|v| v.served)
                .find_map(|v| dynamic.resource(group, &v.name, plural));
            if let Some(resource) = store {
                current.insert((group.clone(), plural.clone()), resource.store);
            }
        }
        watching.retain(|key, task| {
            let keep = current.contains_key(key);
            if !keep {
                task.abort();
            }
            keep
        });
        for (key, store) in current {
            watching
                .entry(key)
                .or_insert_with(|| tokio::spawn(reflect(store, changes.clone())));
        }
        if crds.changed().await.is_err() {
            return;
        }
    }
}

/// Applies the watches' changes to the graph and queues what they cause.
/// The workers start once every built-in resource has been listed.
async fn build_graph(
    workers: Arc<Workers>,
    mut received: mpsc::UnboundedReceiver<Change>,
    mut unlisted: HashSet<String>,
    synced: watch::Sender<bool>,
) {
    while let Some(change) = received.recv().await {
        if let Change::Listed(store, _) = &change {
            unlisted.remove(&store.info.group_resource());
        }
        let mut work = Vec::new();
        if let Ok(mut graph) = workers.graph.lock() {
            apply(&mut graph, change, &mut work);
        }
        workers.schedule(work);
        if unlisted.is_empty() && !*synced.borrow() {
            synced.send_replace(true);
        }
    }
}

fn apply(graph: &mut Graph, change: Change, work: &mut Vec<graph::Work>) {
    match change {
        Change::Listed(store, items) => graph.sync(&store, &items, work),
        Change::Upserted(store, obj) => graph.upsert(&store, &obj, work),
        Change::Deleted(obj) => {
            if let Some(uid) = obj.pointer("/metadata/uid").and_then(|u| u.as_str()) {
                graph.remove(uid, work);
            }
        }
    }
}

async fn wait_synced(mut synced: watch::Receiver<bool>) {
    // An error means the graph builder is gone: nothing will ever come.
    let _ = synced.wait_for(|s| *s).await;
}

async fn delete_worker(workers: Arc<Workers>, synced: watch::Receiver<bool>) {
    wait_synced(synced).await;
    loop {
        let uid = workers.deletes.next().await;
        let result = workers.attempt_to_delete(&uid).await;
        retry_on_error(&workers.deletes, &uid, result);
        workers.deletes.done(&uid);
    }
}

async fn orphan_worker(workers: Arc<Workers>, synced: watch::Receiver<bool>) {
    wait_synced(synced).await;
    loop {
        let uid = workers.orphans.next().await;
        let result = workers.attempt_to_orphan(&uid).await;
        retry_on_error(&workers.orphans, &uid, result);
        workers.orphans.done(&uid);
    }
}

/// Failed items are tried again later; an unknown owner kind may become
/// served (a CRD), so it is retried slowly; invalid references are not.
fn retry_on_error(queue: &Arc<queue::Queue>, uid: &str, result: Result<(), GcError>) {
    let delay = match result {
        Ok(()) => return,
        Err(GcError::NamespacedOwner(name)) => {
            tracing::debug!(object = %name, "garbage collector ignores an invalid owner reference");
            return;
        }
        Err(GcError::UnknownKind { .. }) => Duration::from_secs(30),
        Err(GcError::Api(ref e)) if e.code == 409 => Duration::from_millis(100),
        Err(_) => Duration::from_secs(1),
    };
    if let Err(e) = &result {
        tracing::debug!(uid, error = %e, "garbage collector will retry");
    }
    queue.add_after(uid.to_owned(), delay);
}
