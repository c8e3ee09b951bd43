//! The `default` ServiceAccount of every namespace. Upstream leaves this to
//! kube-controller-manager's serviceaccount controller; without it no pod
//! can be created (the ServiceAccount admission plugin refuses pods whose
//! account is missing), so a server started on its own would be unusable
//! for workloads. A deleted `default` account comes back, as upstream's
//! controller recreates it. Creating the account is idempotent, so running
//! next to a real controller-manager changes nothing.

use std::convert::Infallible;
use std::sync::Arc;

use apiserver::registry::object_meta;
use apiserver::registry::store::{Store, WriteOptions};
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::{json, Value};

use crate::controller_manager::ControllerManager;

/// Namespaces handled at once. Upstream's controller-manager runs one
/// worker; here the store commits concurrent writes together, so a burst of
/// new namespaces gets its accounts many times sooner (pods wait in
/// admission for their namespace's `default` account): with 10,000 new
/// namespaces and 64 other writers, 8 workers had made 4,300 accounts when
/// the first pods came 6 s later (`server-bench --scale`).
const WORKERS: usize = 32;

pub fn install(
    server: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    manager: &ControllerManager,
) {
    let (Some(namespaces), Some(account_informer), Some(accounts)) = (
        informers.informer_for("", "namespaces"),
        informers.informer_for("", "serviceaccounts"),
        server.store("", "v1", "serviceaccounts"),
    ) else {
        return;
    };
    let manager = manager.clone();
    server.add_post_start_hook(
        "start-service-account-controller",
        Arc::new(move |_ctx| {
            let informers = [namespaces.clone(), account_informer.clone()];
            let accounts = accounts.clone();
            manager.spawn(move |stop| run(informers.clone(), accounts.clone(), stop));
            Box::pin(async { Ok(()) })
        }),
    );
}

/// Makes sure each active namespace has its `default` account, by
/// namespace: when the namespace is added or changes, and when its
/// `default` account is deleted.
async fn run(informers: [Arc<SharedInformer>; 2], accounts: Arc<Store>, stop: CancellationToken) {
    let [namespace_informer, account_informer] = informers;
    let queue = RateLimitingQueue::with_default_limiter();
    let enqueue = queue.clone();
    let on_namespace =
        ResourceEventHandlerFuncs::on_any(move |ns| enqueue.add(object_meta::name(ns).to_owned()));
    namespace_informer.add_event_handler_until(on_namespace, &stop);
    let enqueue = queue.clone();
    let on_account = ResourceEventHandlerFuncs {
        delete: Some(Box::new(move |sa| {
            if let (true, Some(ns)) = (is_default(sa), object_meta::namespace(sa)) {
                enqueue.add(ns.to_owned());
            }
        })),
        ..Default::default()
    };
    account_informer.add_event_handler_until(on_account, &stop);
    namespace_informer.wait_for_sync().await;
    let lister = namespace_informer.lister();
    run_workers(queue, WORKERS, stop, move |ns: String| {
        let (lister, accounts) = (lister.clone(), accounts.clone());
        async move {
            // A namespace already gone needs no account.
            if let Some(ns) = lister.get(None, &ns) {
                ensure_default(&accounts, &ns).await;
            }
            Ok::<(), Infallible>(())
        }
    })
    .await;
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
