//! The CRD controllers of the apiextensions server (upstream's
//! `apiextensions-apiserver/pkg/controller/{status,apiapproval,establish,
//! finalizer}` and the CRD handler's serving), in one loop over the shared
//! CRD informer: naming, API approval, serving (the dynamic group table and
//! discovery) and establishing, by group; deleted CRDs are handed to the
//! finalizer's work queue (`finalizer`). Every change publishes a snapshot
//! of all CRDs for OpenAPI and the garbage collector.

mod finalizer;
pub mod openapi;
mod status;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use apiserver::registry::store::Store;
use apiserver::server::DynamicGroups;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::CancellationToken;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{json, Value};
use storage::Object;
use tokio::sync::{mpsc, watch};

use crate::apis::helpers::{self, UsedNames, ESTABLISHED};
use crate::apiserver::customresource_handler::{self as serving, StoreFactory};
use crate::registry::customresourcedefinition::CLEANUP_FINALIZER;

/// Every CRD as last seen, published after each change.
pub type Snapshot = Arc<Vec<CustomResourceDefinition>>;

pub struct CrdController {
    crds: Arc<Store>,
    factory: StoreFactory,
    dynamic: DynamicGroups,
    synced: Arc<AtomicBool>,
    snapshots: watch::Sender<Snapshot>,
    state: BTreeMap<String, CustomResourceDefinition>,
    /// Groups currently in the dynamic table.
    served_groups: BTreeSet<String>,
    /// What each group was last installed from.
    served_as: BTreeMap<String, Value>,
    /// The finalizer's queue of deleted CRDs.
    finalizer: finalizer::Finalizer,
}

/// What the informer reports: a CRD added or changed, or deleted.
enum Change {
    Upserted(Object),
    Deleted(Object),
}

fn parse(obj: &Value) -> Option<CustomResourceDefinition> {
    serde_json::from_value(obj.clone()).ok()
}

/// Everything about a group's CRDs that decides what is served.
fn serving_fingerprint(crds: &[&CustomResourceDefinition]) -> Value {
    let parts: Vec<Value> = crds
        .iter()
        .map(|c| {
            json!({
                "uid": c.metadata.uid,
                "spec": serde_json::to_value(&c.spec).unwrap_or_default(),
                "names": c.status.as_ref().map(|s| &s.accepted_names),
                "served": serving::is_served(c),
                "terminating": helpers::is_terminating(c),
            })
        })
        .collect();
    Value::Array(parts)
}

fn name_of(crd: &CustomResourceDefinition) -> String {
    crd.metadata.name.clone().unwrap_or_default()
}

impl CrdController {
    pub fn new(
        crds: Arc<Store>,
        factory: StoreFactory,
        dynamic: DynamicGroups,
        synced: Arc<AtomicBool>,
        snapshots: watch::Sender<Snapshot>,
    ) -> Self {
        CrdController {
            crds: crds.clone(),
            factory,
            dynamic,
            synced,
            snapshots,
            state: BTreeMap::new(),
            served_groups: BTreeSet::new(),
            served_as: BTreeMap::new(),
            finalizer: finalizer::Finalizer::new(crds),
        }
    }

    /// Follows `informer` until `stop`: once its first list is in, every
    /// group is reconciled and readiness reported; after that, each burst
    /// of changes reconciles the groups it touched.
    pub async fn run(mut self, informer: Arc<SharedInformer>, stop: CancellationToken) {
        let (tx, mut changes) = mpsc::unbounded_channel();
        let report = ResourceEventHandlerFuncs::send_to(tx, Change::Upserted, Change::Deleted);
        informer.add_event_handler(report);
        tokio::spawn(self.finalizer.clone().run(stop.clone()));
        informer.wait_for_sync().await;
        // The first list is in the channel: every group gets reconciled.
        let mut dirty = BTreeSet::new();
        while let Ok(change) = changes.try_recv() {
            self.apply(change, &mut dirty);
        }
        dirty.extend(self.served_groups.iter().cloned());
        self.reconcile(dirty).await;
        self.synced.store(true, Ordering::SeqCst);
        loop {
            let change = tokio::select! {
                _ = stop.cancelled() => return,
                change = changes.recv() => change,
            };
            let Some(change) = change else {
                return;
            };
            let mut dirty = BTreeSet::new();
            self.apply(change, &mut dirty);
            // Take whatever else has arrived before reconciling once.
            while let Ok(change) = changes.try_recv() {
                self.apply(change, &mut dirty);
            }
            self.reconcile(dirty).await;
        }
    }

    async fn reconcile(&mut self, groups: BTreeSet<String>) {
        for group in groups {
            self.reconcile_group(&group).await;
        }
        self.publish();
    }

    /// Records one change in the local state.
    fn apply(&mut self, change: Change, dirty: &mut BTreeSet<String>) {
        match change {
            Change::Upserted(o) => {
                if let Some(crd) = parse(&o) {
                    dirty.insert(crd.spec.group.clone());
                    self.state.insert(name_of(&crd), crd);
                }
            }
            Change::Deleted(o) => {
                if let Some(crd) = parse(&o) {
                    dirty.insert(crd.spec.group.clone());
                    self.state.remove(&name_of(&crd));
                }
            }
        }
    }

    fn publish(&self) {
        let all: Vec<CustomResourceDefinition> = self.state.values().cloned().collect();
        self.snapshots.send_replace(Arc::new(all));
    }

    fn group_names(&self, group: &str) -> Vec<String> {
        self.state
            .values()
            .filter(|c| c.spec.group == group)
            .map(name_of)
            .collect()
    }

    /// Writes a status change unless it changes nothing locally.
    async fn set_status(
        &mut self,
        name: &str,
        change: impl Fn(&mut Value) -> bool + Send + Sync + 'static,
    ) {
        let Some(local) = self.state.get(name) else {
            return;
        };
        let mut probe = serde_json::to_value(local).unwrap_or_default();
        if !change(&mut probe) {
            return;
        }
        match status::update(&self.crds, name, move |obj| {
            change(obj);
        })
        .await
        {
            Ok(Some(stored)) => {
                self.state.insert(name.to_owned(), stored);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(crd = name, error = %e.message, "updating CRD status failed"),
        }
    }

    async fn name_crd(&mut self, group: &str, name: &str) {
        let Some(crd) = self.state.get(name) else {
            return;
        };
        let accepted = crd.status.as_ref().and_then(|s| s.accepted_names.as_ref());
        if accepted == Some(&crd.spec.names) && helpers::is_true(crd, helpers::NAMES_ACCEPTED) {
            return;
        }
        let used = UsedNames::of(
            self.state
                .values()
                .filter(|c| c.spec.group == group && c.metadata.name.as_deref() != Some(name)),
        );
        let (names, accepted, established) = helpers::names(crd, &used);
        let names = serde_json::to_value(names).unwrap_or_default();
        self.set_status(name, move |obj| {
            let mut changed = obj.pointer("/status/acceptedNames") != Some(&names);
            if changed {
                if let Some(map) = obj.as_object_mut() {
                    let status = map.entry("status").or_insert(json!({}));
                    status["acceptedNames"] = names.clone();
                }
            }
            changed |= helpers::set(obj, &accepted);
            changed |= helpers::set(obj, &established);
            changed
        })
        .await;
    }

    async fn reconcile_group(&mut self, group: &str) {
        for name in self.group_names(group) {
            self.name_crd(group, &name).await;
            if let Some(approval) = self.state.get(&name).and_then(helpers::api_approval) {
                self.set_status(&name, move |obj| helpers::set(obj, &approval))
                    .await;
            }
            let structural = self.state.get(&name).map(helpers::non_structural);
            match structural {
                Some(Some(violations)) => {
                    self.set_status(&name, move |obj| helpers::set(obj, &violations))
                        .await;
                }
                Some(None) => {
                    self.set_status(&name, |obj| {
                        helpers::remove(obj, helpers::NON_STRUCTURAL_SCHEMA)
                    })
                    .await;
                }
                None => {}
            }
        }
        self.serve_group(group);
        for name in self.group_names(group) {
            let Some(crd) = self.state.get(&name) else {
                continue;
            };
            let terminating = crd.metadata.deletion_timestamp.is_some();
            if serving::is_served(crd) && !terminating && !helpers::is_true(crd, ESTABLISHED) {
                let established = helpers::established();
                self.set_status(&name, move |obj| helpers::set(obj, &established))
                    .await;
            }
            if terminating {
                self.start_finalizer(&name);
            }
        }
    }

    /// Installs what the group's CRDs serve, unless nothing that decides it
    /// changed since the last time (status writes come back as events).
    fn serve_group(&mut self, group: &str) {
        let crds: Vec<&CustomResourceDefinition> = self
            .state
            .values()
            .filter(|c| c.spec.group == group)
            .collect();
        let fingerprint = serving_fingerprint(&crds);
        if self.served_as.get(group) == Some(&fingerprint) {
            return;
        }
        let versions = self.factory.group_versions(&crds);
        if versions.is_empty() {
            self.served_groups.remove(group);
        } else {
            self.served_groups.insert(group.to_owned());
        }
        self.dynamic.set_group(group, versions);
        self.served_as.insert(group.to_owned(), fingerprint);
    }

    /// Hands a deleted CRD with the cleanup finalizer to the finalizer,
    /// with the store of its resource while it is served.
    fn start_finalizer(&self, name: &str) {
        let Some(crd) = self.state.get(name) else {
            return;
        };
        let has_finalizer = crd
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == CLEANUP_FINALIZER);
        if !has_finalizer {
            return;
        }
        let spec = &crd.spec;
        let served = spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.as_str());
        let store = served
            .filter_map(|v| self.dynamic.resource(&spec.group, v, &spec.names.plural))
            .map(|r| r.store)
            .next();
        self.finalizer.add(name, store);
    }
}
