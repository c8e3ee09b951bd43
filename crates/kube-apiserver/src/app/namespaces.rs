//! Namespace deletion (kube-controller-manager's namespace controller,
//! run here so that a server started on its own behaves like a cluster): a
//! deleted namespace stays Terminating while every namespaced object in it
//! is deleted, then its `kubernetes` finalizer is removed and it goes. Both
//! steps are idempotent, so a real controller-manager beside it is harmless.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::{DeleteOptions, Mutate, Store, Target, WriteOptions};
use apiserver::server::GenericApiServer;
use futures::StreamExt;
use serde_json::Value;
use storage::{ListOptions, WatchEvent, WatchOptions};

/// The finalizer upstream's namespace controller owns.
const FINALIZER: &str = "kubernetes";

pub fn install(server: &mut GenericApiServer) {
    let Some(namespaces) = server.store("", "v1", "namespaces") else {
        return;
    };
    let contents: Arc<Vec<Arc<Store>>> = Arc::new(
        server
            .stores()
            .into_iter()
            .filter(|s| s.info.namespaced)
            .collect(),
    );
    server.add_post_start_hook(
        "start-namespace-controller",
        Arc::new(move || {
            let (namespaces, contents) = (namespaces.clone(), contents.clone());
            Box::pin(async move {
                tokio::spawn(run(namespaces, contents));
                Ok(())
            })
        }),
    );
}

async fn run(namespaces: Arc<Store>, contents: Arc<Vec<Arc<Store>>>) {
    // Namespaces being finalized, so repeated events start no second task.
    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    loop {
        let opts = WatchOptions {
            recursive: true,
            ..Default::default()
        };
        match namespaces.watch(None, opts).await {
            Ok(mut events) => {
                while let Some(event) = events.next().await {
                    match event {
                        WatchEvent::Added(ns) | WatchEvent::Modified(ns) if terminating(&ns) => {
                            let Some(name) = ns.pointer("/metadata/name").and_then(Value::as_str)
                            else {
                                continue;
                            };
                            if !in_flight
                                .lock()
                                .is_ok_and(|mut s| s.insert(name.to_owned()))
                            {
                                continue;
                            }
                            let name = name.to_owned();
                            let (namespaces, contents) = (namespaces.clone(), contents.clone());
                            let in_flight = in_flight.clone();
                            tokio::spawn(async move {
                                finalize(&namespaces, &contents, &name).await;
                                if let Ok(mut s) = in_flight.lock() {
                                    s.remove(&name);
                                }
                            });
                        }
                        WatchEvent::Error(e) => {
                            tracing::debug!(error = %e, "namespace watch ended");
                            break;
                        }
                        _ => {}
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "watching namespaces failed"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn terminating(ns: &Value) -> bool {
    let held = ns
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == FINALIZER));
    held && ns.pointer("/metadata/deletionTimestamp").is_some()
}

/// Deletes the namespace's content until none is left (objects with
/// finalizers of their own take their time), then releases the namespace.
async fn finalize(namespaces: &Store, contents: &[Arc<Store>], name: &str) {
    loop {
        match delete_content(contents, name).await {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(namespace = name, error = %e.message, "deleting namespace content failed")
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
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
