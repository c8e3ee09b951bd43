//! The resource quota controller (upstream's
//! `pkg/controller/resourcequota`, run in-process so that a server on its
//! own keeps quota status current, elected as kube-controller-manager's
//! by `controller_manager`): it follows ResourceQuotas and the
//! resources they count through the shared informers, and rewrites a
//! quota's `status.hard` (its `spec.hard`) and `status.used` (the
//! namespace's usage of every hard resource, zero when unused) whenever
//! they differ from what the namespace holds. Work is queued by
//! namespace: bursts of changes are gathered before a namespace is
//! recounted, every quota is recounted periodically (upstream's
//! `enqueueAll`), and each write carries the resourceVersion it was
//! computed from (recomputed on conflict), so a real controller-manager
//! beside it is harmless.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::admission::initializer::Stores;
use apiserver::registry::object_meta;
use apiserver::registry::store::Store;
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::Value;
use storage::GetOptions;

use crate::admission::quota::{evaluator, write_status};
use crate::api::resource::parsed_list;
use crate::controller_manager::ControllerManager;

/// How long changes are gathered before a namespace is recounted.
const DEBOUNCE: Duration = Duration::from_millis(100);
/// How often every quota is recounted (upstream's
/// `--resource-quota-sync-period` is 5m; usage admitted for a write that
/// then failed is corrected sooner here).
const RESYNC: Duration = Duration::from_secs(30);
/// Attempts at one quota's status before its namespace is queued again.
const ATTEMPTS: usize = 5;
/// Namespaces recounted at once (upstream's `--concurrent-resource-quota-syncs`).
const WORKERS: usize = 5;

/// The resources upstream's quota evaluators follow without being asked.
const TRACKED: [&str; 6] = [
    "pods",
    "services",
    "persistentvolumeclaims",
    "configmaps",
    "secrets",
    "replicationcontrollers",
];

type Queue = Arc<RateLimitingQueue<String>>;

/// Installs the `start-resource-quota-controller` hook.
pub fn install(
    server: &mut GenericApiServer,
    informers: &Arc<SharedInformerFactory>,
    manager: &ControllerManager,
) {
    let Some(quotas) = server.store("", "v1", "resourcequotas") else {
        return;
    };
    let stores = Stores::new(server.stores()).with_informers(informers.clone());
    let (informers, manager) = (informers.clone(), manager.clone());
    server.add_post_start_hook(
        "start-resource-quota-controller",
        Arc::new(move |_ctx| {
            let (stores, quotas, informers) = (stores.clone(), quotas.clone(), informers.clone());
            manager.spawn(move |stop| {
                let controller = Controller {
                    stores: stores.clone(),
                    quotas: quotas.clone(),
                    informers: informers.clone(),
                };
                controller.run(stop)
            });
            Box::pin(async { Ok(()) })
        }),
    );
}

struct Controller {
    stores: Stores,
    quotas: Arc<Store>,
    informers: Arc<SharedInformerFactory>,
}

impl Controller {
    /// Recounts namespaces as their quotas and counted objects change,
    /// until `stop`.
    async fn run(self, stop: CancellationToken) {
        let Some(quota_informer) = self.informers.informer_for("", "resourcequotas") else {
            return;
        };
        let queue: Queue = RateLimitingQueue::with_default_limiter();
        let monitors = Arc::new(Monitors {
            informers: self.informers.clone(),
            queue: queue.clone(),
            followed: Mutex::default(),
            stop: stop.clone(),
        });
        for resource in TRACKED {
            monitors.follow("", resource);
        }
        let (followed, enqueue) = (monitors.clone(), queue.clone());
        let on_quota = ResourceEventHandlerFuncs {
            add: Some(Box::new(move |quota| followed.quota_changed(quota))),
            update: Some(Box::new({
                let followed = monitors.clone();
                move |_, quota| followed.quota_changed(quota)
            })),
            // A deleted quota changes the others' `resourcequotas` count.
            delete: Some(Box::new(move |quota| {
                if let Some(ns) = object_meta::namespace(quota) {
                    enqueue.add_after(ns.to_owned(), DEBOUNCE);
                }
            })),
        };
        quota_informer.add_event_handler_until(on_quota, &stop);
        quota_informer.wait_for_sync().await;
        let lister = quota_informer.lister();
        tokio::spawn(enqueue_all(lister.clone(), queue.clone(), stop.clone()));
        let this = Arc::new(self);
        run_workers(queue, WORKERS, stop, move |ns: String| {
            let (this, lister) = (this.clone(), lister.clone());
            async move { this.sync_namespace(&lister, &ns).await }
        })
        .await;
    }

    /// Recounts every quota of a namespace.
    async fn sync_namespace(&self, lister: &Lister, namespace: &str) -> Result<(), ApiError> {
        let mut failed = None;
        for quota in lister.list_namespace(namespace) {
            if let Err(e) = self.sync_quota(quota.to_value()).await {
                let name = object_meta::name(&quota);
                tracing::warn!(namespace, quota = name, error = %e.message, "quota status not updated");
                failed = Some(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Writes one quota's status when it differs from the recount,
    /// retrying on conflicts with the latest quota.
    async fn sync_quota(&self, mut quota: Value) -> Result<(), ApiError> {
        for _ in 0..ATTEMPTS {
            let status = evaluator::status(&self.stores, &quota).await?;
            let current = quota.get("status");
            let same = |field: &str| {
                current.is_some_and(|c| amounts(c.get(field)) == amounts(status.get(field)))
            };
            if same("hard") && same("used") {
                return Ok(());
            }
            let version = quota
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_owned);
            match write_status(&self.quotas, &quota, status, version).await {
                Err(e) if e.code == 409 => {
                    let namespace = object_meta::namespace(&quota);
                    let name = object_meta::name(&quota);
                    match self
                        .quotas
                        .get(namespace, name, GetOptions::default())
                        .await
                    {
                        Ok(latest) => quota = latest.to_value(),
                        Err(e) if e.code == 404 => return Ok(()),
                        Err(e) => return Err(e),
                    }
                }
                Err(e) if e.code == 404 => return Ok(()),
                other => return other,
            }
        }
        let name = object_meta::name(&quota);
        let why = "the quota kept changing while its usage was written";
        Err(ApiError::conflict("", "resourcequotas", name, why))
    }
}

/// The counted resources followed (upstream's `QuotaMonitor`): a change
/// to one of their objects queues its namespace.
struct Monitors {
    informers: Arc<SharedInformerFactory>,
    queue: Queue,
    followed: Mutex<HashSet<(String, String)>>,
    /// The end of the term the handlers are registered for.
    stop: CancellationToken,
}

impl Monitors {
    /// Follows `group`/`resource` unless it already is or is not served.
    fn follow(&self, group: &str, resource: &str) {
        let key = (group.to_owned(), resource.to_owned());
        let mut followed = self.followed.lock().unwrap_or_else(|e| e.into_inner());
        if followed.contains(&key) {
            return;
        }
        let Some(informer) = self.informers.informer_for(group, resource) else {
            return;
        };
        followed.insert(key);
        let queue = self.queue.clone();
        // Reads the namespace alone: the informer's objects stay held as
        // JSON (see `storage::object`).
        let handler = ResourceEventHandlerFuncs::on_any(move |obj| {
            if let Some(ns) = obj.metadata_str("namespace") {
                queue.add_after(ns, DEBOUNCE);
            }
        });
        informer.add_event_handler_until(handler, &self.stop);
    }

    /// A quota added or changed: follow the resources its `count/` keys
    /// name and recount its namespace.
    fn quota_changed(&self, quota: &Value) {
        let keys = quota.pointer("/spec/hard").and_then(Value::as_object);
        for key in keys.into_iter().flat_map(|h| h.keys()) {
            if let Some((group, resource)) = evaluator::counted_resource(key) {
                self.follow(&group, &resource);
            }
        }
        if let Some(ns) = object_meta::namespace(quota) {
            self.queue.add_after(ns.to_owned(), DEBOUNCE);
        }
    }
}

/// Queues the namespace of every quota each [`RESYNC`] until `stop`.
async fn enqueue_all(lister: Lister, queue: Queue, stop: CancellationToken) {
    let start = tokio::time::Instant::now() + RESYNC;
    let mut ticks = tokio::time::interval_at(start, RESYNC);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        for quota in lister.list() {
            if let Some(ns) = object_meta::namespace(&quota) {
                queue.add(ns.to_owned());
            }
        }
    }
}

/// A resource list by value (so `1Gi` and `1073741824` compare equal).
fn amounts(list: Option<&Value>) -> BTreeMap<String, i128> {
    parsed_list(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_compare_by_value() {
        let a = json!({"memory": "1Gi", "pods": "2"});
        let b = json!({"memory": "1073741824", "pods": "2"});
        assert_eq!(amounts(Some(&a)), amounts(Some(&b)));
        let c = json!({"memory": "1Gi", "pods": "3"});
        assert_ne!(amounts(Some(&a)), amounts(Some(&c)));
        assert_ne!(amounts(Some(&a)), amounts(None));
    }
}
