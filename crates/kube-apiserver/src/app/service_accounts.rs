//! The `default` ServiceAccount of every namespace. Upstream leaves this to
//! kube-controller-manager's serviceaccount controller; without it no pod
//! can be created (the ServiceAccount admission plugin refuses pods whose
//! account is missing), so a server started on its own would be unusable
//! for workloads. A deleted `default` account comes back, as upstream's
//! controller recreates it. Creating the account is idempotent, so running
//! next to a real controller-manager changes nothing.

use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::{Store, WriteOptions};
use apiserver::server::GenericApiServer;
use futures::StreamExt;
use serde_json::{json, Value};
use storage::{WatchEvent, WatchOptions};

pub fn install(server: &mut GenericApiServer) {
    let (Some(namespaces), Some(accounts)) = (
        server.store("", "v1", "namespaces"),
        server.store("", "v1", "serviceaccounts"),
    ) else {
        return;
    };
    server.add_post_start_hook(
        "start-service-account-controller",
        Arc::new(move || {
            let (namespaces, accounts) = (namespaces.clone(), accounts.clone());
            Box::pin(async move {
                tokio::spawn(recreate_deleted(namespaces.clone(), accounts.clone()));
                tokio::spawn(run(namespaces, accounts));
                Ok(())
            })
        }),
    );
}

/// Follows namespaces (an initial ADDED for each, then changes) and makes
/// sure each active one has its `default` account; restarts after errors.
async fn run(namespaces: Arc<Store>, accounts: Arc<Store>) {
    loop {
        let opts = WatchOptions {
            recursive: true,
            ..Default::default()
        };
        match namespaces.watch(None, opts).await {
            Ok(mut events) => {
                while let Some(event) = events.next().await {
                    match event {
                        WatchEvent::Added(ns) | WatchEvent::Modified(ns) => {
                            ensure_default(&accounts, &ns).await;
                        }
                        WatchEvent::Error(e) => {
                            tracing::debug!(error = %e, "namespace watch ended");
                            break;
                        }
                        WatchEvent::Deleted(_) | WatchEvent::Bookmark(_) => {}
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "watching namespaces failed"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Follows service accounts and recreates a deleted `default` one while its
/// namespace is active; restarts after errors.
async fn recreate_deleted(namespaces: Arc<Store>, accounts: Arc<Store>) {
    loop {
        let opts = WatchOptions {
            recursive: true,
            ..Default::default()
        };
        match accounts.watch(None, opts).await {
            Ok(mut events) => {
                while let Some(event) = events.next().await {
                    match event {
                        WatchEvent::Deleted(sa) if is_default(&sa) => {
                            let Some(ns) =
                                sa.pointer("/metadata/namespace").and_then(Value::as_str)
                            else {
                                continue;
                            };
                            // A namespace already gone needs no account.
                            if let Ok(ns) = namespaces.get(None, ns, Default::default()).await {
                                ensure_default(&accounts, &ns).await;
                            }
                        }
                        WatchEvent::Error(e) => {
                            tracing::debug!(error = %e, "service account watch ended");
                            break;
                        }
                        _ => {}
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "watching service accounts failed"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn is_default(sa: &Value) -> bool {
    sa.pointer("/metadata/name").and_then(Value::as_str) == Some("default")
}

async fn ensure_default(accounts: &Store, ns: &Value) {
    let active = ns.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating")
        && ns.pointer("/metadata/deletionTimestamp").is_none();
    let Some(name) = ns.pointer("/metadata/name").and_then(Value::as_str) else {
        return;
    };
    if !active
        || accounts
            .get(Some(name), "default", Default::default())
            .await
            .is_ok()
    {
        return;
    }
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": name}});
    match accounts.create(account, &WriteOptions::default()).await {
        Ok(_) => {}
        // Created meanwhile, or the namespace started terminating.
        Err(e) if matches!(e.code, 409 | 403 | 404) => {}
        Err(e) => {
            tracing::warn!(namespace = name, error = %e.message, "creating the default service account failed")
        }
    }
}
