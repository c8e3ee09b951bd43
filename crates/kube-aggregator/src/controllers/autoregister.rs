//! The autoregistration controller (upstream's
//! `pkg/controllers/autoregister`): keeps a set of local APIServices (no
//! `spec.service`) present, labelled `kube-aggregator.kubernetes.io/automanaged`
//! `onstart` (synced once: the built-in group versions) or `true` (synced
//! continuously: CRD group versions, from the CRD registration
//! controller). It follows the shared APIService informer; each name is a
//! key on a rate-limited work queue.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use apimachinery::status::ApiError;
use apiserver::registry::object_meta;
use apiserver::registry::store::{Store, Target, WriteOptions};
use apiserver::registry::DeleteOptions;
use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::{json, Value};
use tokio::sync::watch;

pub const AUTO_REGISTER_MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";
const MANAGE_ON_START: &str = "onstart";
const MANAGE_CONTINUOUSLY: &str = "true";
/// Upstream runs five workers.
const WORKERS: usize = 5;

/// `groupPriorityMinimum` and `versionPriority` of a group version.
pub type Priorities = fn(group: &str, version: &str) -> (i64, i64);

/// The local APIService of a group version, named `<version>.<group>`.
pub fn api_service(group: &str, version: &str, (min, priority): (i64, i64)) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}")},
        "spec": {"group": group, "version": version,
            "groupPriorityMinimum": min, "versionPriority": priority},
    })
}

#[derive(Default)]
struct State {
    to_sync: BTreeMap<String, Value>,
    synced_successfully: BTreeSet<String>,
    at_start: BTreeSet<String>,
}

/// The controller; cheap to share.
pub struct AutoRegisterController {
    api_services: Arc<Store>,
    lister: Lister,
    state: Mutex<State>,
    queue: Arc<RateLimitingQueue<String>>,
    /// Marked changed after each successful check.
    checked: watch::Sender<()>,
}

fn managed_type(obj: Option<&Value>) -> &str {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(|l| l.get(AUTO_REGISTER_MANAGED_LABEL))
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl AutoRegisterController {
    pub fn new(api_services: Arc<Store>, informer: &SharedInformer) -> Arc<Self> {
        Arc::new(AutoRegisterController {
            api_services,
            lister: informer.lister(),
            state: Mutex::default(),
            queue: RateLimitingQueue::with_default_limiter(),
            checked: watch::Sender::new(()),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, mut obj: Value, sync_type: &str) {
        obj["metadata"]["labels"][AUTO_REGISTER_MANAGED_LABEL] = json!(sync_type);
        let name = object_meta::name(&obj).to_owned();
        self.state().to_sync.insert(name.clone(), obj);
        self.queue.add(name);
    }

    /// Upstream's `AddAPIServiceToSyncOnStart`.
    pub fn add_api_service_to_sync_on_start(&self, obj: Value) {
        self.add(obj, MANAGE_ON_START);
    }

    /// Upstream's `AddAPIServiceToSync`.
    pub fn add_api_service_to_sync(&self, obj: Value) {
        self.add(obj, MANAGE_CONTINUOUSLY);
    }

    /// Upstream's `RemoveAPIServiceToSync`.
    pub fn remove_api_service_to_sync(&self, name: &str) {
        self.state().to_sync.remove(name);
        self.queue.add(name.to_owned());
    }

    /// Waits until every APIService to sync on start has been synced.
    pub async fn wait_for_on_start(&self) {
        let mut checked = self.checked.subscribe();
        loop {
            let done = {
                let state = self.state();
                state.to_sync.iter().all(|(name, obj)| {
                    managed_type(Some(obj)) != MANAGE_ON_START
                        || state.synced_successfully.contains(name)
                })
            };
            // The sender lives in `self`: the wait ends only when done.
            if done || checked.changed().await.is_err() {
                return;
            }
        }
    }

    /// Upstream's `Run(5, stop)`.
    pub async fn run(self: Arc<Self>, informer: Arc<SharedInformer>, stop: CancellationToken) {
        let enqueue = self.queue.clone();
        let handler = ResourceEventHandlerFuncs::on_any(move |obj| {
            enqueue.add(object_meta::name(obj).to_owned());
        });
        informer.add_event_handler_until(handler, &stop);
        informer.wait_for_sync().await;
        let names = self.lister.list();
        self.state().at_start = names
            .iter()
            .map(|o| object_meta::name(o).to_owned())
            .collect();
        let controller = self.clone();
        run_workers(self.queue.clone(), WORKERS, stop, move |name: String| {
            let controller = controller.clone();
            async move {
                let checked = controller.check_api_service(&name).await;
                if checked.is_ok() {
                    controller.state().synced_successfully.insert(name);
                    controller.checked.send_replace(());
                }
                checked
            }
        })
        .await;
    }

    /// Upstream's `checkAPIService`: creates a wanted APIService that is
    /// missing, deletes a managed one no longer wanted, updates a managed
    /// one's spec; one managed `onstart` only once, and only when it was
    /// there when the controller started; unmanaged ones are left alone.
    async fn check_api_service(&self, name: &str) -> Result<(), ApiError> {
        let (desired, has_synced, at_start) = {
            let state = self.state();
            let desired = state.to_sync.get(name).cloned();
            (
                desired,
                state.synced_successfully.contains(name),
                state.at_start.contains(name),
            )
        };
        let current = self.lister.get(None, name);
        let current = current.as_deref().map(|o| o.value());
        let current_type = managed_type(current);
        match (current, desired) {
            (None, None) => Ok(()),
            (_, Some(d)) if managed_type(Some(&d)) == MANAGE_ON_START && has_synced => Ok(()),
            (None, Some(d)) => match self.api_services.create(d, &WriteOptions::default()).await {
                Ok(_) | Err(ApiError { code: 409, .. }) => Ok(()),
                Err(e) => Err(e),
            },
            (Some(_), _)
                if current_type != MANAGE_ON_START && current_type != MANAGE_CONTINUOUSLY =>
            {
                Ok(())
            }
            (Some(_), _) if current_type == MANAGE_ON_START && (!at_start || has_synced) => Ok(()),
            (Some(_), None) => {
                let opts = DeleteOptions::default();
                settled(self.api_services.delete(None, name, &opts).await)
            }
            (Some(c), Some(d)) if c.get("spec") == d.get("spec") => Ok(()),
            (Some(c), Some(d)) => self.update_spec(c, d).await,
        }
    }

    /// Writes the desired spec over the cached object (a conflict when it
    /// changed since: the informer calls again).
    async fn update_spec(&self, current: &Value, desired: Value) -> Result<(), ApiError> {
        let mut obj = current.clone();
        obj["spec"] = desired["spec"].clone();
        let name = object_meta::name(&obj).to_owned();
        let obj = Arc::new(obj);
        let mutate = Arc::new(move |_: Option<&Value>| Ok((*obj).clone()));
        let opts = WriteOptions::default();
        settled(
            self.api_services
                .update(None, &name, Target::Main, mutate, &opts)
                .await,
        )
    }
}

/// A write's outcome, where the object gone or changed meanwhile is no
/// error: the informer reports it and the name is checked again.
fn settled<T>(written: Result<T, ApiError>) -> Result<(), ApiError> {
    match written {
        Ok(_)
        | Err(ApiError {
            code: 404 | 409, ..
        }) => Ok(()),
        Err(e) => Err(e),
    }
}
