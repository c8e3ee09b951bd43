//! Namespace deletion (kube-controller-manager's namespace controller,
//! run here so that a server started on its own behaves like a cluster): a
//! deleted namespace stays Terminating while every namespaced object in it
//! is deleted, then its `kubernetes` finalizer is removed and it goes. Both
//! steps are idempotent, so a real controller-manager beside it is harmless.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Mutate, Store, Target, WriteOptions};
use apiserver::registry::{object_meta, DeleteOptions};
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::Value;
use storage::ListOptions;

use crate::controller_manager::ControllerManager;

/// The finalizer upstream's namespace controller owns.
const FINALIZER: &str = "kubernetes";
/// Namespaces finalized at once (upstream's `--concurrent-namespace-syncs`).
const WORKERS: usize = 10;
/// How soon a namespace whose content is not all gone is looked at again.
const RECHECK: Duration = Duration::from_millis(500);

pub fn install(
    server: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    manager: &ControllerManager,
) {
    let (Some(informer), Some(namespaces)) = (
        informers.informer_for("", "namespaces"),
        server.store("", "v1", "namespaces"),
    ) else {
        return;
    };
    let contents: Arc<Vec<Arc<Store>>> = Arc::new(
        server
            .stores()
            .into_iter()
            .filter(|s| s.info.namespaced)
            .collect(),
    );
    let manager = manager.clone();
    server.add_post_start_hook(
        "start-namespace-controller",
        Arc::new(move |_ctx| {
            let (namespaces, contents) = (namespaces.clone(), contents.clone());
            let informer = informer.clone();
            manager.spawn(move |stop| {
                run(informer.clone(), namespaces.clone(), contents.clone(), stop)
            });
            Box::pin(async { Ok(()) })
        }),
    );
}

async fn run(
    informer: Arc<SharedInformer>,
    namespaces: Arc<Store>,
    contents: Arc<Vec<Arc<Store>>>,
    stop: CancellationToken,
) {
    let queue = RateLimitingQueue::with_default_limiter();
    let enqueue = queue.clone();
    let handler = ResourceEventHandlerFuncs::on_any(move |ns| {
        if terminating(ns) {
            enqueue.add(object_meta::name(ns).to_owned());
        }
    });
    informer.add_event_handler_until(handler, &stop);
    informer.wait_for_sync().await;
    let (lister, requeue) = (informer.lister(), queue.clone());
    run_workers(queue, WORKERS, stop, move |name: String| {
        let (lister, requeue) = (lister.clone(), requeue.clone());
        let (namespaces, contents) = (namespaces.clone(), contents.clone());
        async move {
            if lister.get(None, &name).is_some_and(|ns| terminating(&ns))
                && !finalize(&namespaces, &contents, &name).await
            {
                requeue.add_after(name, RECHECK);
            }
            Ok::<(), Infallible>(())
        }
    })
    .await;
}

fn terminating(ns: &Value) -> bool {
    let held = ns
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == FINALIZER));
    held && ns.pointer("/metadata/deletionTimestamp").is_some()
}

/// Deletes the namespace's content; once none is left (objects with
/// finalizers of their own take their time), releases the namespace.
/// False while content remains.
async fn finalize(namespaces: &Store, contents: &[Arc<Store>], name: &str) -> bool {
    match delete_content(contents, name).await {
        Ok(true) => {}
        Ok(false) => return false,
        Err(e) => {
            tracing::warn!(namespace = name, error = %e.message, "deleting namespace content failed");
            return false;
        }
    }
    let mutate: Mutate = Arc::new(|current: Option<&Value>| {
        let mut ns = current
            .cloned()
            .ok_or_else(|| ApiError::internal_error("namespace is gone"))?;
        if let Some(list) = ns
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            list.retain(|f| f != FINALIZER);
        }
        Ok(ns)
    });
    let result = namespaces
        .update(None, name, Target::Main, mutate, &WriteOptions::default())
        .await;
    if let Err(e) = result.map(|_| ()).or_else(gone) {
        tracing::warn!(namespace = name, error = %e.message, "finalizing the namespace failed");
    }
    true
}

/// Deletes what is in the namespace; true once nothing is left.
async fn delete_content(contents: &[Arc<Store>], namespace: &str) -> Result<bool, ApiError> {
    let mut empty = true;
    for store in contents {
        let deleted = store
            .delete_collection(
                Some(namespace),
                ListOptions::default(),
                &DeleteOptions::default(),
            )
            .await
            .or_else(|e| gone(e).map(|()| Vec::new()))?;
        empty &= deleted.is_empty();
    }
    Ok(empty)
}

fn gone(e: ApiError) -> Result<(), ApiError> {
    if e.code == 404 {
        Ok(())
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_deleted_namespaces_held_by_the_controller_are_finalized() {
        let held = json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"finalizers": ["kubernetes"]}});
        assert!(terminating(&held));
        let active = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}});
        assert!(!terminating(&active));
        let other = json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"finalizers": ["example.com/other"]}});
        assert!(!terminating(&other));
    }
}
