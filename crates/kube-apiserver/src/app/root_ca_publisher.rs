//! The `kube-root-ca.crt` ConfigMap of every namespace. Upstream leaves
//! this to kube-controller-manager's root-ca-cert-publisher; every pod's
//! projected service-account volume (`kube-api-access-*`, added by the
//! ServiceAccount admission plugin) reads it, so without it no kubelet
//! could start a pod of a server running on its own. The ConfigMap holds
//! the cluster CA (`ca.crt`, the CA the token controller also writes into
//! token secrets); a deleted or edited one is put back. Writing the same
//! content is idempotent, so a real controller-manager next to this server
//! changes nothing.

use std::convert::Infallible;
use std::sync::Arc;

use apiserver::registry::object_meta;
use apiserver::registry::store::{Store, Target, WriteOptions};
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::{json, Value};

use crate::controller_manager::ControllerManager;

/// Namespaces handled at once. Upstream's controller-manager runs one
/// worker; here the store commits concurrent writes together, so a burst of
/// new namespaces gets its ConfigMaps several times sooner (a pod's
/// service-account volume projects this one).
const WORKERS: usize = 8;

const NAME: &str = "kube-root-ca.crt";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver \
    when using internal endpoints such as the internal service IP or kubernetes.default.svc. \
    No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Publishes `root_ca` (PEM) into every namespace; nothing without a CA.
pub fn install(
    server: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    root_ca: Option<String>,
    manager: &ControllerManager,
) {
    let (Some(namespaces), Some(configmap_informer), Some(configmaps), Some(ca)) = (
        informers.informer_for("", "namespaces"),
        informers.informer_for("", "configmaps"),
        server.store("", "v1", "configmaps"),
        root_ca,
    ) else {
        return;
    };
    let ca: Arc<str> = Arc::from(ca);
    let manager = manager.clone();
    server.add_post_start_hook(
        "start-root-ca-cert-publisher",
        Arc::new(move |_ctx| {
            let informers = [namespaces.clone(), configmap_informer.clone()];
            let (configmaps, ca) = (configmaps.clone(), ca.clone());
            manager.spawn(move |stop| run(informers.clone(), configmaps.clone(), ca.clone(), stop));
            Box::pin(async { Ok(()) })
        }),
    );
}

/// Publishes by namespace: when a namespace is added or changes, and when
/// its published ConfigMap is deleted or edited.
async fn run(
    informers: [Arc<SharedInformer>; 2],
    configmaps: Arc<Store>,
    ca: Arc<str>,
    stop: CancellationToken,
) {
    let [namespace_informer, configmap_informer] = informers;
    let queue = RateLimitingQueue::with_default_limiter();
    let enqueue = queue.clone();
    let on_namespace =
        ResourceEventHandlerFuncs::on_any(move |ns| enqueue.add(object_meta::name(ns).to_owned()));
    namespace_informer.add_event_handler_until(on_namespace, &stop);
    let enqueue = queue.clone();
    let on_configmap = ResourceEventHandlerFuncs::on_any(move |cm| {
        // Publishing checks the ConfigMap; an unchanged one is left alone.
        // Only its metadata is read, so the informer's ConfigMaps (the
        // watch cache's) stay held as JSON (see `storage::object`).
        let mut read = cm.metadata_strs(&["name", "namespace"]).into_iter();
        if let (Some(Some(name)), Some(Some(ns))) = (read.next(), read.next()) {
            if name == NAME {
                enqueue.add(ns);
            }
        }
    });
    configmap_informer.add_event_handler_until(on_configmap, &stop);
    namespace_informer.wait_for_sync().await;
    let lister = namespace_informer.lister();
    run_workers(queue, WORKERS, stop, move |ns: String| {
        let (lister, configmaps, ca) = (lister.clone(), configmaps.clone(), ca.clone());
        async move {
            // A namespace already gone needs nothing.
            if let Some(ns) = lister.get(None, &ns) {
                publish(&configmaps, &ns, &ca).await;
            }
            Ok::<(), Infallible>(())
        }
    })
    .await;
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
