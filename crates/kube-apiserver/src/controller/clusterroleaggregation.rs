//! The ClusterRole aggregation controller (upstream's
//! `pkg/controller/clusterroleaggregation`, which kube-controller-manager
//! runs; here in the terms this server leads, `controller_manager`): every ClusterRole with an
//! `aggregationRule` (admin, edit, view, and any a user makes) keeps its
//! rules the union of the roles its selectors pick. Any ClusterRole change
//! queues every aggregated role, as upstream's `enqueue` does; a worker
//! recomputes one role from the informer's cache and writes it when it
//! differs.

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Mutate, Store, Target, WriteOptions};
use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::Value;

use crate::authorization::rbac::bootstrappolicy::{aggregated_rules, name_of, GROUP};

/// Workers, as upstream's `Run(ctx, 5)`.
const WORKERS: usize = 5;

/// Runs the controller over `informer` (ClusterRoles), writing through
/// `store`, until `stop`.
pub async fn run(informer: Arc<SharedInformer>, store: Arc<Store>, stop: CancellationToken) {
    let queue = RateLimitingQueue::<String>::with_default_limiter();
    let lister = informer.lister();
    let (enqueue, all) = (queue.clone(), lister.clone());
    let handler = ResourceEventHandlerFuncs::on_any(move |_| {
        for role in all.list() {
            if role.get("aggregationRule").is_some() {
                enqueue.add(name_of(&role).to_owned());
            }
        }
    });
    informer.add_event_handler_until(handler, &stop);
    informer.wait_for_sync().await;
    run_workers(queue, WORKERS, stop, move |name: String| {
        let (lister, store) = (lister.clone(), store.clone());
        async move { sync_cluster_role(&lister, &store, name).await }
    })
    .await;
}

/// Writes the aggregated rules of one ClusterRole when its stored rules
/// differ.
async fn sync_cluster_role(lister: &Lister, store: &Store, name: String) -> Result<(), ApiError> {
    let Some(role) = lister.get(None, &name) else {
        return Ok(());
    };
    let all = lister.list();
    let all: Vec<&Value> = all.iter().map(|o| o.value()).collect();
    let Some(rules) = aggregated_rules(&role, &all) else {
        return Ok(());
    };
    let current = role.get("rules").and_then(Value::as_array);
    if current.map_or(rules.is_empty(), |c| *c == rules) {
        return Ok(());
    }
    let rules = Value::Array(rules);
    let missing = name.clone();
    let mutate: Mutate = Arc::new(move |current: Option<&Value>| {
        let mut obj = current
            .cloned()
            .ok_or_else(|| ApiError::not_found(GROUP, "clusterroles", &missing))?;
        obj["rules"] = rules.clone();
        Ok(obj)
    });
    let written = store
        .update(None, &name, Target::Main, mutate, &WriteOptions::default())
        .await;
    match written {
        Ok(_) => tracing::debug!(role = name, "aggregated ClusterRole rules updated"),
        Err(ApiError { code: 404, .. }) => {}
        Err(e) => return Err(e),
    }
    Ok(())
}
