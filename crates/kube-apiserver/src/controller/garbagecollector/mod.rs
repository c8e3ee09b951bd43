//! The garbage collector (upstream's `pkg/controller/garbagecollector`,
//! run in-process so that a server started on its own honours owner
//! references, elected as kube-controller-manager's by
//! `controller_manager`): objects whose owners are all gone are deleted
//! (background), owners deleted with `foregroundDeletion` wait for their
//! blocking dependents, owners deleted with `orphan` release theirs. Its
//! graph builder follows every served resource through the shared
//! informers (custom resources through informers of their own, started and
//! stopped as CRDs come and go), and its workers take uids from
//! `client-go` work queues; every write goes through the stores with
//! preconditions, so a real controller-manager beside it is harmless.

mod graph;
mod worker;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::store::Store;
use apiserver::server::{DynamicGroups, GenericApiServer};
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::RateLimitingQueue;
use client_go::CancellationToken;
use storage::Object;
use tokio::sync::{mpsc, oneshot, watch};

use crate::controller_manager::ControllerManager;
use apiextensions_apiserver::controller::Snapshot;
use apiextensions_apiserver::CustomResources;
use graph::Graph;
use worker::{GcError, Mapper, Workers};

/// Workers deleting objects, as upstream's default `--concurrent-gc-syncs`.
const DELETE_WORKERS: usize = 20;
const ORPHAN_WORKERS: usize = 2;

/// A change an informer reported (upstream's graph builder's events).
enum Change {
    Upserted(Arc<Store>, Object),
    Deleted(Object),
    /// Every change sent before this is in the graph: answer it.
    Synced(oneshot::Sender<()>),
}

type Changes = mpsc::UnboundedSender<Change>;

/// Installs the `start-garbage-collector` hook, over the built-in
/// resources of `kube` and `extensions` and the custom resources as CRDs
/// serve them.
pub fn install(
    kube: &mut GenericApiServer,
    extensions: &GenericApiServer,
    informers: &Arc<SharedInformerFactory>,
    custom: &CustomResources,
    manager: &ControllerManager,
) {
    let mut stores = extensions.stores();
    stores.extend(kube.stores());
    let (crds, dynamic, informers) = (
        custom.snapshots(),
        extensions.dynamic_groups(),
        informers.clone(),
    );
    let manager = manager.clone();
    kube.add_post_start_hook(
        "start-garbage-collector",
        Arc::new(move |_ctx| {
            let (stores, crds, dynamic) = (stores.clone(), crds.clone(), dynamic.clone());
            let informers = informers.clone();
            manager.spawn(move |stop| {
                let (crds, dynamic) = (crds.clone(), dynamic.clone());
                run(stores.clone(), &informers, crds, dynamic, stop)
            });
            Box::pin(async { Ok(()) })
        }),
    );
}

/// Builds the graph from the informers and works its queues until `stop`.
fn run(
    stores: Vec<Arc<Store>>,
    informers: &SharedInformerFactory,
    crds: watch::Receiver<Snapshot>,
    dynamic: DynamicGroups,
    stop: CancellationToken,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let mapper = Mapper::new(&stores, crds.clone(), dynamic.clone());
    let workers = Arc::new(Workers::new(Arc::default(), mapper));
    let (changes, received) = mpsc::unbounded_channel();
    let builtin: Vec<Arc<SharedInformer>> = stores
        .iter()
        .filter_map(|store| {
            let informer = informers.informer_for(&store.info.group, &store.info.resource)?;
            report(&informer, store.clone(), changes.clone(), &stop);
            Some(informer)
        })
        .collect();
    async move {
        let custom = changes.clone();
        tokio::spawn(follow_custom_resources(crds, dynamic, custom, stop.clone()));
        tokio::spawn(build_graph(workers.clone(), received, stop.clone()));
        // The workers start once every built-in resource has been listed
        // and what the lists said is in the graph.
        for informer in &builtin {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = informer.wait_for_sync() => {}
            }
        }
        let (applied, synced) = oneshot::channel();
        if changes.send(Change::Synced(applied)).is_err() || synced.await.is_err() {
            return;
        }
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..DELETE_WORKERS {
            tasks.spawn(work(workers.clone(), Attempt::Delete));
        }
        for _ in 0..ORPHAN_WORKERS {
            tasks.spawn(work(workers.clone(), Attempt::Orphan));
        }
        stop.cancelled().await;
        workers.deletes.shut_down();
        workers.orphans.shut_down();
        while tasks.join_next().await.is_some() {}
    }
}

/// Sends what `informer` reports about `store`'s objects to `changes`
/// until `stop`.
fn report(
    informer: &Arc<SharedInformer>,
    store: Arc<Store>,
    changes: Changes,
    stop: &CancellationToken,
) {
    let upserted = move |o| Change::Upserted(store.clone(), o);
    let handler = ResourceEventHandlerFuncs::send_to(changes, upserted, Change::Deleted);
    informer.add_event_handler_until(handler, stop);
}

/// Runs an informer of its own over the resource of every CRD while it is
/// served, stopping it when the CRD goes.
async fn follow_custom_resources(
    mut crds: watch::Receiver<Snapshot>,
    dynamic: DynamicGroups,
    changes: Changes,
    stop: CancellationToken,
) {
    let mut following: HashMap<(String, String), CancellationToken> = HashMap::new();
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
        following.retain(|key, informer_stop| {
            let keep = current.contains_key(key);
            if !keep {
                informer_stop.cancel();
            }
            keep
        });
        for (key, store) in current {
            following.entry(key).or_insert_with(|| {
                let informer = SharedInformer::new(store.clone(), None);
                let informer_stop = stop.child_token();
                report(&informer, store, changes.clone(), &informer_stop);
                informer.start(&informer_stop);
                informer_stop
            });
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            changed = crds.changed() => if changed.is_err() { return },
        }
    }
}

/// Applies the informers' changes to the graph, in the order they came,
/// and queues what they cause.
async fn build_graph(
    workers: Arc<Workers>,
    mut received: mpsc::UnboundedReceiver<Change>,
    stop: CancellationToken,
) {
    loop {
        let change = tokio::select! {
            _ = stop.cancelled() => return,
            change = received.recv() => change,
        };
        let Some(change) = change else {
            return;
        };
        let mut work = Vec::new();
        if let Ok(mut graph) = workers.graph.lock() {
            apply(&mut graph, change, &mut work);
        }
        workers.schedule(work);
    }
}

/// The fields of `metadata` the graph reads.
const GRAPH_FIELDS: [&str; 6] = [
    "namespace",
    "name",
    "uid",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
];

fn apply(graph: &mut Graph, change: Change, work: &mut Vec<graph::Work>) {
    match change {
        // The graph reads these fields of metadata only, which are decoded
        // alone: the watch cache's objects stay held as JSON (see
        // `storage::object`).
        Change::Upserted(store, obj) => {
            let values = obj.metadata_values(&GRAPH_FIELDS);
            let metadata: serde_json::Map<String, serde_json::Value> = GRAPH_FIELDS
                .iter()
                .zip(values)
                .filter_map(|(field, value)| Some(((*field).to_owned(), value?)))
                .collect();
            let head = serde_json::json!({ "metadata": metadata });
            graph.upsert(&store, &head, work)
        }
        Change::Deleted(obj) => {
            if let Some(uid) = obj.metadata_str("uid") {
                graph.remove(&uid, work);
            }
        }
        Change::Synced(applied) => drop(applied.send(())),
    }
}

/// Which queue a worker works.
#[derive(Clone, Copy)]
enum Attempt {
    Delete,
    Orphan,
}

/// A worker: attempts each uid its queue hands out until it shuts down.
async fn work(workers: Arc<Workers>, attempt: Attempt) {
    let queue = match attempt {
        Attempt::Delete => workers.deletes.clone(),
        Attempt::Orphan => workers.orphans.clone(),
    };
    while let Some(uid) = queue.get().await {
        let result = match attempt {
            Attempt::Delete => workers.attempt_to_delete(&uid).await,
            Attempt::Orphan => workers.attempt_to_orphan(&uid).await,
        };
        retry_on_error(&queue, &uid, result);
        queue.done(&uid);
    }
}

/// Failed items are tried again later; an unknown owner kind may become
/// served (a CRD), so it is retried slowly; invalid references are not.
fn retry_on_error(queue: &RateLimitingQueue<String>, uid: &String, result: Result<(), GcError>) {
    let delay = match result {
        Ok(()) => return queue.forget(uid),
        Err(GcError::NamespacedOwner(name)) => {
            tracing::debug!(object = %name, "garbage collector ignores an invalid owner reference");
            return queue.forget(uid);
        }
        Err(GcError::UnknownKind { .. }) => Duration::from_secs(30),
        Err(GcError::Api(ref e)) if e.code == 409 => Duration::from_millis(100),
        Err(_) => Duration::from_secs(1),
    };
    if let Err(e) = &result {
        tracing::debug!(uid, error = %e, "garbage collector will retry");
    }
    queue.add_after(uid.clone(), delay);
}
