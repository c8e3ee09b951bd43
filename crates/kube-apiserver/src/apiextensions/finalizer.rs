//! The CRD finalizer (upstream's `controller/finalizer`): a deleted CRD
//! keeps serving while every custom resource of it is deleted (their own
//! finalizers honoured), then the Terminating condition turns False and the
//! cleanup finalizer is removed, which lets the CRD go.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::store::Store;
use apiserver::registry::DeleteOptions;
use serde_json::{json, Value};
use storage::ListOptions;

use super::conditions::{self, Condition, TERMINATING};
use super::crd::CLEANUP_FINALIZER;
use super::status;

/// How often the remaining resources are counted while they go.
const POLL: Duration = Duration::from_millis(200);
/// How long resources with finalizers of their own are waited for per pass.
const WAIT_ROUNDS: usize = 50;

fn set_terminating(reason: &str, message: &str, status: &'static str) -> Condition {
    Condition::new(TERMINATING, status, reason, message)
}

/// Deletes every resource of the CRD through `store` (any served version
/// of it), then releases the CRD. `store` is `None` when the CRD was never
/// served: there is nothing to delete.
pub async fn finalize(
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
        conditions::set(obj, &in_progress);
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
                    conditions::set(obj, &condition);
                })
                .await?;
                return Err(ApiError::internal_error(message));
            }
        },
    };
    status::update(&crds, &name, move |obj| {
        conditions::set(obj, &done);
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
