//! The CRD finalizer (upstream's `controller/finalizer`): a deleted CRD
//! keeps serving while every custom resource of it is deleted (their own
//! finalizers honoured), then the Terminating condition turns False and the
//! cleanup finalizer is removed, which lets the CRD go. Deleted CRDs come
//! by name through a work queue: one worker at a time per CRD, failures
//! retried with the queue's backoff.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::store::Store;
use apiserver::registry::DeleteOptions;
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::{json, Value};
use storage::ListOptions;

use super::status;
use crate::apis::helpers::{self, Condition, TERMINATING};
use crate::registry::customresourcedefinition::CLEANUP_FINALIZER;

/// How often the remaining resources are counted while they go.
const POLL: Duration = Duration::from_millis(200);
/// How long resources with finalizers of their own are waited for per pass.
const WAIT_ROUNDS: usize = 50;

/// CRDs finalized at once (upstream's `finalizer.Run(5, ...)`).
const WORKERS: usize = 5;

/// The finalizer controller (upstream's `CRDFinalizer`): its queue of
/// deleted CRDs and the store of each one's resource.
#[derive(Clone)]
pub struct Finalizer {
    crds: Arc<Store>,
    queue: Arc<RateLimitingQueue<String>>,
    /// The store a queued CRD's resources are deleted through (None: it
    /// was never served), as it was when the CRD was first handed over.
    stores: Arc<Mutex<HashMap<String, Option<Arc<Store>>>>>,
}

impl Finalizer {
    pub fn new(crds: Arc<Store>) -> Self {
        Finalizer {
            crds,
            queue: RateLimitingQueue::with_default_limiter(),
            stores: Arc::default(),
        }
    }

    fn stores(&self) -> MutexGuard<'_, HashMap<String, Option<Arc<Store>>>> {
        self.stores.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues the deleted CRD `name`, its resources served by `store`.
    pub fn add(&self, name: &str, store: Option<Arc<Store>>) {
        self.stores().entry(name.to_owned()).or_insert(store);
        self.queue.add(name.to_owned());
    }

    /// Finalizes queued CRDs until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        let queue = self.queue.clone();
        run_workers(queue, WORKERS, stop, move |name: String| {
            let this = self.clone();
            async move { this.sync(name).await }
        })
        .await;
    }

    async fn sync(&self, name: String) -> Result<(), ApiError> {
        // Not there: finalized already.
        let Some(store) = self.stores().get(&name).cloned() else {
            return Ok(());
        };
        match finalize(self.crds.clone(), name.clone(), store).await {
            Err(e) if e.code != 404 => {
                tracing::warn!(crd = %name, error = %e.message, "CRD finalizer failed");
                Err(e)
            }
            // Released, or gone.
            _ => {
                self.stores().remove(&name);
                Ok(())
            }
        }
    }
}

fn set_terminating(reason: &str, message: &str, status: &'static str) -> Condition {
    Condition::new(TERMINATING, status, reason, message)
}

/// Deletes every resource of the CRD through `store` (any served version
/// of it), then releases the CRD. `store` is `None` when the CRD was never
/// served: there is nothing to delete.
async fn finalize(
    crds: Arc<Store>,
    name: String,
    store: Option<Arc<Store>>,
) -> Result<(), ApiError> {
    let in_progress = set_terminating(
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
        "True",
    );
    status::update(&crds, &name, move |obj| {
        helpers::set(obj, &in_progress);
    })
    .await?;
    let done = match &store {
        None => set_terminating(
            "NeverEstablished",
            "resource was never established",
            "False",
        ),
        Some(store) => match delete_all(store).await {
            Ok(()) => set_terminating(
                "InstanceDeletionCompleted",
                "removed all instances",
                "False",
            ),
            Err(condition) => {
                let message = condition.message.clone();
                status::update(&crds, &name, move |obj| {
                    helpers::set(obj, &condition);
                })
                .await?;
                return Err(ApiError::internal_error(message));
            }
        },
    };
    status::update(&crds, &name, move |obj| {
        helpers::set(obj, &done);
    })
    .await?;
    // Removing the last finalizer of a deleted CRD deletes it.
    status::update_main(&crds, &name, remove_finalizer).await?;
    Ok(())
}

fn remove_finalizer(obj: &mut Value) {
    if let Some(list) = obj
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        list.retain(|f| f != &json!(CLEANUP_FINALIZER));
    }
}

async fn delete_all(store: &Store) -> Result<(), Condition> {
    let failed = |reason: &str, message: String| set_terminating(reason, &message, "True");
    let items = store
        .list(None, ListOptions::default())
        .await
        .map_err(|e| {
            failed(
                "InstanceDeletionFailed",
                format!("could not list instances: {}", e.message),
            )
        })?
        .items;
    let mut errors = Vec::new();
    for item in &items {
        let meta = |k: &str| {
            item.pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
        };
        let name = meta("name").unwrap_or("");
        match store
            .delete(meta("namespace"), name, &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => errors.push(e.message),
        }
    }
    if !errors.is_empty() {
        return Err(failed(
            "InstanceDeletionFailed",
            format!("could not issue all deletes: {}", errors.join(", ")),
        ));
    }
    for _ in 0..WAIT_ROUNDS {
        let remaining = store
            .list(
                None,
                ListOptions {
                    limit: Some(1),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| {
                failed(
                    "InstanceDeletionCheck",
                    format!(
                        "could not confirm zero CustomResources remaining: {}",
                        e.message
                    ),
                )
            })?;
        if remaining.items.is_empty() {
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
    Err(failed(
        "InstanceDeletionCheck",
        "could not confirm zero CustomResources remaining: timed out waiting for the condition"
            .into(),
    ))
}
