//! The collector's workers (upstream's `attemptToDeleteItem`,
//! `processDeletingDependentsItem` and `orphanDependents`): each decision is
//! taken on the live objects, read again through the stores, so a graph
//! that lags behind can delay work but never cause a wrong deletion.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use apimachinery::status::ApiError;
use apiserver::registry::deletion::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use apiserver::registry::store::{DeleteOutcome, Mutate, Store, Target, WriteOptions};
use apiserver::registry::{DeleteOptions, PropagationPolicy};
use apiserver::server::DynamicGroups;
use serde_json::{json, Value};
use storage::{GetOptions, Object, Preconditions};
use tokio::sync::watch;

use super::graph::{being_deleted, has_finalizer, owner_refs, Graph, Identity, OwnerRef, Work};
use apiextensions_apiserver::controller::Snapshot;
use client_go::util::workqueue::RateLimitingQueue;

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error("no served resource has kind {kind} in {api_version}")]
    UnknownKind { api_version: String, kind: String },
    /// A cluster-scoped object naming a namespaced owner: left alone, as
    /// upstream does.
    #[error("cluster-scoped {0} names a namespaced owner")]
    NamespacedOwner(String),
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// Finds the store serving a kind (upstream's RESTMapper): built-in
/// resources by group and kind, custom resources through their CRDs.
pub struct Mapper {
    builtin: HashMap<(String, String), Arc<Store>>,
    crds: watch::Receiver<Snapshot>,
    dynamic: DynamicGroups,
}

impl Mapper {
    pub fn new(
        stores: &[Arc<Store>],
        crds: watch::Receiver<Snapshot>,
        dynamic: DynamicGroups,
    ) -> Self {
        let builtin = stores
            .iter()
            .map(|s| ((s.info.group.clone(), s.info.kind.clone()), s.clone()))
            .collect();
        Mapper {
            builtin,
            crds,
            dynamic,
        }
    }

    pub fn store(&self, api_version: &str, kind: &str) -> Result<Arc<Store>, GcError> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let unknown = || GcError::UnknownKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        };
        if let Some(store) = self.builtin.get(&(group.to_owned(), kind.to_owned())) {
            return Ok(store.clone());
        }
        let crds = self.crds.borrow().clone();
        let crd = crds
            .iter()
            .find(|c| c.spec.group == group && c.spec.names.kind == kind)
            .ok_or_else(unknown)?;
        let served: Vec<&str> = crd
            .spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.as_str())
            .collect();
        let version = served
            .iter()
            .find(|v| **v == version)
            .or(served.first())
            .ok_or_else(unknown)?;
        self.dynamic
            .resource(group, version, &crd.spec.names.plural)
            .map(|r| r.store)
            .ok_or_else(unknown)
    }
}

/// How an owner reference stands (upstream's `classifyReferences`).
enum OwnerState {
    Solid,
    Dangling,
    /// The owner is being deleted in the foreground, waiting for this.
    Waiting,
}

pub struct Workers {
    pub graph: Arc<Mutex<Graph>>,
    pub deletes: Arc<RateLimitingQueue<String>>,
    pub orphans: Arc<RateLimitingQueue<String>>,
    pub mapper: Mapper,
    /// Owners confirmed absent, as `<namespace>/<uid>`.
    absent: Mutex<HashSet<String>>,
}

/// Confirmed-absent owners remembered at most (then forgotten at once).
const ABSENT_CACHE_SIZE: usize = 4096;

impl Workers {
    pub fn new(graph: Arc<Mutex<Graph>>, mapper: Mapper) -> Self {
        Workers {
            graph,
            deletes: RateLimitingQueue::with_default_limiter(),
            orphans: RateLimitingQueue::with_default_limiter(),
            mapper,
            absent: Mutex::default(),
        }
    }

    /// Hands the work a graph change caused to the queues.
    pub fn schedule(&self, work: Vec<Work>) {
        for w in work {
            match w {
                Work::Delete(uid) => self.deletes.add(uid),
                Work::Orphan(uid) => self.orphans.add(uid),
            }
        }
    }

    fn with_graph<T>(&self, f: impl FnOnce(&mut Graph, &mut Vec<Work>) -> T) -> Option<T> {
        let mut work = Vec::new();
        let result = {
            let mut graph = self.graph.lock().ok()?;
            f(&mut graph, &mut work)
        };
        self.schedule(work);
        Some(result)
    }

    /// Checks one object: deletes it when none of its owners remains,
    /// drops references to absent owners, or finishes a foreground
    /// deletion whose blocking dependents are gone.
    pub async fn attempt_to_delete(&self, uid: &str) -> Result<(), GcError> {
        let Some(Some((identity, is_virtual))) =
            self.with_graph(|g, _| g.node(uid).map(|n| (n.identity.clone(), n.is_virtual())))
        else {
            return Ok(());
        };
        let store = match &identity.store {
            Some(store) => store.clone(),
            None => self.mapper.store(&identity.api_version, &identity.kind)?,
        };
        let latest = live(&store, identity.namespace.as_deref(), &identity.name).await?;
        let Some(latest) = latest.filter(|o| uid_of(o) == uid) else {
            self.with_graph(|g, work| g.absent(uid, work));
            return Ok(());
        };
        // A virtual owner that exists: its watch brings it into the graph.
        if is_virtual {
            return Ok(());
        }
        if being_deleted(&latest) {
            if has_finalizer(&latest, FOREGROUND_FINALIZER) {
                return self.finish_foreground(&store, &identity, uid).await;
            }
            return Ok(());
        }
        let refs = owner_refs(&latest);
        if refs.is_empty() {
            return Ok(());
        }
        self.collect(&store, &identity, &latest, refs).await
    }

    async fn collect(
        &self,
        store: &Arc<Store>,
        identity: &Identity,
        latest: &Object,
        refs: Vec<OwnerRef>,
    ) -> Result<(), GcError> {
        let (mut solid, mut gone, mut waiting) = (0, HashSet::new(), HashSet::new());
        for r in &refs {
            match self.owner_state(r, identity).await? {
                OwnerState::Solid => solid += 1,
                OwnerState::Dangling => {
                    gone.insert(r.uid.clone());
                }
                OwnerState::Waiting => {
                    waiting.insert(r.uid.clone());
                }
            }
        }
        let ns = identity.namespace.as_deref();
        if solid > 0 {
            if gone.is_empty() && waiting.is_empty() {
                return Ok(());
            }
            // Other owners remain: only the references to absent or
            // foreground-deleting owners go.
            gone.extend(waiting);
            update(store, ns, &identity.name, &identity.uid, move |obj| {
                retain_owner_refs(obj, |r| {
                    r.get("uid")
                        .and_then(Value::as_str)
                        .is_none_or(|u| !gone.contains(u))
                })
            })
            .await?;
            return Ok(());
        }
        let mut rv = resource_version(latest);
        let policy = if !waiting.is_empty() && self.has_dependents(&identity.uid) {
            if self.dependent_deletes_in_foreground(&identity.uid) {
                // Both wait for each other: this one stops blocking (a
                // cycle of foreground deletions would never end).
                let unblocked = update(store, ns, &identity.name, &identity.uid, unblock).await?;
                rv = unblocked
                    .as_deref()
                    .map(|o| resource_version(o))
                    .unwrap_or(rv);
            }
            PropagationPolicy::Foreground
        } else if has_finalizer(latest, ORPHAN_FINALIZER) {
            PropagationPolicy::Orphan
        } else if has_finalizer(latest, FOREGROUND_FINALIZER) {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        let opts = DeleteOptions {
            preconditions: Some(Preconditions {
                uid: Some(identity.uid.to_string()),
                resource_version: rv,
            }),
            propagation_policy: Some(policy),
            ..Default::default()
        };
        match store.delete(ns, &identity.name, &opts).await {
            Ok(DeleteOutcome::Deleted(_) | DeleteOutcome::Pending(_)) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn owner_state(&self, r: &OwnerRef, dependent: &Identity) -> Result<OwnerState, GcError> {
        let store = self.mapper.store(&r.api_version, &r.kind)?;
        let ns = dependent
            .namespace
            .as_deref()
            .filter(|_| store.info.namespaced);
        if store.info.namespaced && ns.is_none() {
            return Err(GcError::NamespacedOwner(dependent.name.to_string()));
        }
        let key = format!("{}/{}", ns.unwrap_or_default(), r.uid);
        if self.absent.lock().is_ok_and(|a| a.contains(&key)) {
            return Ok(OwnerState::Dangling);
        }
        match live(&store, ns, &r.name).await? {
            Some(owner) if uid_of(&owner) == r.uid => {
                if being_deleted(&owner) && has_finalizer(&owner, FOREGROUND_FINALIZER) {
                    Ok(OwnerState::Waiting)
                } else {
                    Ok(OwnerState::Solid)
                }
            }
            _ => {
                if let Ok(mut absent) = self.absent.lock() {
                    if absent.len() >= ABSENT_CACHE_SIZE {
                        absent.clear();
                    }
                    absent.insert(key);
                }
                Ok(OwnerState::Dangling)
            }
        }
    }

    fn has_dependents(&self, uid: &str) -> bool {
        self.with_graph(|g, _| g.node(uid).is_some_and(|n| !n.dependents.is_empty()))
            .unwrap_or(false)
    }

    fn dependent_deletes_in_foreground(&self, uid: &str) -> bool {
        self.with_graph(|g, _| {
            g.node(uid).is_some_and(|n| {
                n.dependents
                    .iter()
                    .any(|d| g.node(d).is_some_and(|d| d.deleting_dependents))
            })
        })
        .unwrap_or(false)
    }

    /// An owner deleted in the foreground: its blocking dependents are
    /// deleted first; once none is left its `foregroundDeletion` finalizer
    /// is removed (and it goes, unless other finalizers remain).
    async fn finish_foreground(
        &self,
        store: &Arc<Store>,
        identity: &Identity,
        uid: &str,
    ) -> Result<(), GcError> {
        let blocking = self
            .with_graph(|g, _| {
                g.blocking_dependents(uid)
                    .into_iter()
                    .map(|d| (d.identity.uid.clone(), d.being_deleted))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        if blocking.is_empty() {
            let ns = identity.namespace.as_deref();
            update(store, ns, &identity.name, uid, |obj| {
                remove_finalizer(obj, FOREGROUND_FINALIZER)
            })
            .await?;
            return Ok(());
        }
        // The owner is checked again as each blocking dependent goes.
        for (dependent, deleting) in blocking {
            if !deleting {
                self.deletes.add(dependent.to_string());
            }
        }
        Ok(())
    }

    /// An owner deleted with `orphan`: every dependent loses its reference
    /// to it, then the finalizer is removed.
    pub async fn attempt_to_orphan(&self, uid: &str) -> Result<(), GcError> {
        let Some(Some((identity, dependents))) = self.with_graph(|g, _| {
            let node = g.node(uid)?;
            let dependents: Vec<Identity> = node
                .dependents
                .iter()
                .filter_map(|d| g.node(d))
                .filter(|d| !d.is_virtual())
                .map(|d| d.identity.clone())
                .collect();
            Some((node.identity.clone(), dependents))
        }) else {
            return Ok(());
        };
        let Some(store) = identity.store.clone() else {
            return Ok(());
        };
        let latest = live(&store, identity.namespace.as_deref(), &identity.name).await?;
        let orphaning = latest.is_some_and(|o| {
            uid_of(&o) == uid && being_deleted(&o) && has_finalizer(&o, ORPHAN_FINALIZER)
        });
        if !orphaning {
            return Ok(());
        }
        for dependent in dependents {
            let Some(dep_store) = dependent.store.clone() else {
                continue;
            };
            let owner = uid.to_owned();
            update(
                &dep_store,
                dependent.namespace.as_deref(),
                &dependent.name,
                &dependent.uid,
                move |obj| {
                    retain_owner_refs(obj, |r| {
                        r.get("uid").and_then(Value::as_str) != Some(&owner)
                    })
                },
            )
            .await?;
        }
        update(
            &store,
            identity.namespace.as_deref(),
            &identity.name,
            uid,
            |obj| remove_finalizer(obj, ORPHAN_FINALIZER),
        )
        .await?;
        Ok(())
    }
}

fn uid_of(obj: &Value) -> &str {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn resource_version(obj: &Value) -> Option<String> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The object now, or `None` when absent.
async fn live(
    store: &Store,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Object>, ApiError> {
    match store.get(namespace, name, GetOptions::default()).await {
        Ok(obj) => Ok(Some(obj)),
        Err(e) if e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// Changes the object with uid `uid` (gone or replaced: `None`).
async fn update(
    store: &Store,
    namespace: Option<&str>,
    name: &str,
    uid: &str,
    change: impl Fn(&mut Value) + Send + Sync + 'static,
) -> Result<Option<Object>, ApiError> {
    let (info, uid, name_owned) = (store.info.clone(), uid.to_owned(), name.to_owned());
    let mutate: Mutate = Arc::new(move |current: Option<&Value>| {
        let gone = || ApiError::not_found(&info.group, &info.resource, &name_owned);
        let mut obj = current
            .filter(|o| uid_of(o) == uid)
            .cloned()
            .ok_or_else(gone)?;
        change(&mut obj);
        Ok(obj)
    });
    match store
        .update(
            namespace,
            name,
            Target::Main,
            mutate,
            &WriteOptions::default(),
        )
        .await
    {
        Ok((obj, _)) => Ok(Some(obj)),
        Err(e) if e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

fn retain_owner_refs(obj: &mut Value, keep: impl Fn(&Value) -> bool) {
    if let Some(refs) = obj
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        refs.retain(keep);
    }
}

/// Upstream's unblockOwnerReferences: no reference blocks its owner.
fn unblock(obj: &mut Value) {
    if let Some(refs) = obj
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        for r in refs
            .iter_mut()
            .filter(|r| r["blockOwnerDeletion"] == json!(true))
        {
            r["blockOwnerDeletion"] = json!(false);
        }
    }
}

fn remove_finalizer(obj: &mut Value, finalizer: &str) {
    if let Some(list) = obj
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        list.retain(|f| f != finalizer);
    }
}

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;
