//! The `kube-root-ca.crt` ConfigMap of every namespace. Upstream leaves
//! this to kube-controller-manager's root-ca-cert-publisher; every pod's
//! projected service-account volume (`kube-api-access-*`, added by the
//! ServiceAccount admission plugin) reads it, so without it no kubelet
//! could start a pod of a server running on its own. The ConfigMap holds
//! the cluster CA (`ca.crt`, the CA the token controller also writes into
//! token secrets); a deleted or edited one is put back. Writing the same
//! content is idempotent, so a real controller-manager next to this server
//! changes nothing.

use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::{Store, Target, WriteOptions};
use apiserver::server::GenericApiServer;
use futures::StreamExt;
use serde_json::{json, Value};
use storage::{WatchEvent, WatchOptions};

const NAME: &str = "kube-root-ca.crt";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver \
    when using internal endpoints such as the internal service IP or kubernetes.default.svc. \
    No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Publishes `root_ca` (PEM) into every namespace; nothing without a CA.
pub fn install(server: &mut GenericApiServer, root_ca: Option<String>) {
    let (Some(namespaces), Some(configmaps), Some(ca)) = (
        server.store("", "v1", "namespaces"),
        server.store("", "v1", "configmaps"),
        root_ca,
    ) else {
        return;
    };
    let ca: Arc<str> = Arc::from(ca);
    server.add_post_start_hook(
        "start-root-ca-cert-publisher",
        Arc::new(move || {
            let (namespaces, configmaps, ca) = (namespaces.clone(), configmaps.clone(), ca.clone());
            Box::pin(async move {
                tokio::spawn(follow(
                    namespaces.clone(),
                    configmaps.clone(),
                    ca.clone(),
                    false,
                ));
                tokio::spawn(follow(namespaces, configmaps, ca, true));
                Ok(())
            })
        }),
    );
}

/// Follows namespaces (an initial ADDED for each, then changes) or, with
/// `own`, the published ConfigMaps themselves (deleted or edited ones),
/// and publishes where needed; restarts after errors.
async fn follow(namespaces: Arc<Store>, configmaps: Arc<Store>, ca: Arc<str>, own: bool) {
    let watched = if own { &configmaps } else { &namespaces };
    loop {
        let opts = WatchOptions {
            recursive: true,
            ..Default::default()
        };
        match watched.watch(None, opts).await {
            Ok(mut events) => {
                while let Some(event) = events.next().await {
                    let (obj, deleted) = match event {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
                        WatchEvent::Deleted(o) => (o, true),
                        WatchEvent::Error(e) => {
                            tracing::debug!(error = %e, "root CA publisher watch ended");
                            break;
                        }
                        WatchEvent::Bookmark(_) => continue,
                    };
                    if !own {
                        if !deleted {
                            publish(&configmaps, &obj, &ca).await;
                        }
                        continue;
                    }
                    let name = obj.pointer("/metadata/name").and_then(Value::as_str);
                    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str);
                    let (Some(NAME), Some(ns)) = (name, ns) else {
                        continue;
                    };
                    if deleted || data(&obj) != Some(&*ca) {
                        // A namespace already gone needs nothing.
                        if let Ok(ns) = namespaces.get(None, ns, Default::default()).await {
                            publish(&configmaps, &ns, &ca).await;
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "root CA publisher: watch failed"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn data(cm: &Value) -> Option<&str> {
    cm.pointer("/data/ca.crt").and_then(Value::as_str)
}

/// Creates the ConfigMap in an active namespace, or puts its `ca.crt`
/// back when it differs.
async fn publish(configmaps: &Store, ns: &Value, ca: &Arc<str>) {
    let active = ns.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating")
        && ns.pointer("/metadata/deletionTimestamp").is_none();
    let Some(namespace) = ns.pointer("/metadata/name").and_then(Value::as_str) else {
        return;
    };
    if !active {
        return;
    }
    let result = match configmaps
        .get(Some(namespace), NAME, Default::default())
        .await
    {
        Ok(cm) if data(&cm) == Some(&**ca) => return,
        Ok(_) => {
            let ca = ca.clone();
            let mutate = Arc::new(move |current: Option<&Value>| {
                let mut cm = current.cloned().unwrap_or_else(|| json!({}));
                cm["data"] = json!({"ca.crt": &*ca});
                Ok(cm)
            });
            let opts = WriteOptions::default();
            configmaps
                .update(Some(namespace), NAME, Target::Main, mutate, &opts)
                .await
                .map(|_| ())
        }
        Err(_) => {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": namespace,
                    "annotations": {"kubernetes.io/description": DESCRIPTION}},
                "data": {"ca.crt": &**ca}});
            configmaps
                .create(cm, &WriteOptions::default())
                .await
                .map(|_| ())
        }
    };
    match result {
        Ok(()) => {}
        // Written meanwhile, or the namespace started terminating.
        Err(e) if matches!(e.code, 409 | 403 | 404) => {}
        Err(e) => {
            tracing::warn!(namespace, error = %e.message, "publishing the root CA failed")
        }
    }
}
