//! The configuration consumer (upstream's APF config controller,
//! `util/flowcontrol/apf_controller.go`): follows the FlowSchema and
//! PriorityLevelConfiguration objects through their shared informers, applies them to
//! the server's [`FlowControl`] and keeps each FlowSchema's `Dangling`
//! condition saying whether its priority level exists.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use serde_json::{json, Value};
use storage::{ListOptions, Object};

use super::{FlowControl, SchemaStatus};
use crate::registry::store::{Mutate, Store, Target, WriteOptions};

/// Changes that arrive together are applied once.
const SETTLE: Duration = Duration::from_millis(50);

/// Keeps `control` configured from the FlowSchemas and priority levels the
/// two informers follow, writing through `schemas`, until `stop`: any
/// change queues the one key of the work queue (upstream's `apf_controller`
/// queues one item too), and a failed sync is retried with its backoff.
pub async fn run(
    control: Arc<FlowControl>,
    informers: [Arc<SharedInformer>; 2],
    schemas: Arc<Store>,
    levels: Arc<Store>,
    stop: CancellationToken,
) {
    let queue = RateLimitingQueue::<()>::with_default_limiter();
    for informer in &informers {
        let enqueue = queue.clone();
        let handler = ResourceEventHandlerFuncs::on_any(move |_| enqueue.add_after((), SETTLE));
        informer.add_event_handler(handler);
    }
    for informer in &informers {
        informer.wait_for_sync().await;
    }
    queue.add(());
    run_workers(queue, 1, stop, move |()| {
        let (control, schemas, levels) = (control.clone(), schemas.clone(), levels.clone());
        async move {
            let synced = sync(&control, &schemas, &levels).await;
            if let Err(e) = &synced {
                tracing::warn!(error = %e.message, "applying the flow-control configuration failed");
            }
            synced
        }
    })
    .await;
}

/// Reads every object, applies them and updates stale conditions.
pub async fn sync(control: &FlowControl, schemas: &Store, levels: &Store) -> Result<(), ApiError> {
    let stored_schemas = schemas.list(None, ListOptions::default()).await?.items;
    let stored_levels = levels.list(None, ListOptions::default()).await?.items;
    let typed_schemas: Vec<FlowSchema> = parse(&stored_schemas);
    let typed_levels: Vec<PriorityLevelConfiguration> = parse(&stored_levels);
    let statuses = control.configure(&typed_schemas, &typed_levels);
    for status in statuses {
        let stored = stored_schemas
            .iter()
            .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(&status.name));
        if stored.is_some_and(|o| dangling_condition_is(o, &status)) {
            continue;
        }
        let result = schemas
            .update(
                None,
                &status.name,
                Target::Status,
                set_condition(status.clone()),
                &WriteOptions::default(),
            )
            .await;
        // A schema deleted meanwhile needs no condition.
        if let Err(e) = result
            .map(|_| ())
            .or_else(|e| if e.code == 404 { Ok(()) } else { Err(e) })
        {
            tracing::warn!(flowschema = %status.name, error = %e.message, "updating the Dangling condition failed");
        }
    }
    Ok(())
}

fn parse<T: serde::de::DeserializeOwned>(objects: &[Object]) -> Vec<T> {
    objects
        .iter()
        .filter_map(|o| serde_json::from_value(Value::clone(o)).ok())
        .collect()
}

/// The condition upstream writes: status, reason and message.
fn condition(status: &SchemaStatus) -> (&'static str, &'static str, String) {
    if status.dangling {
        let message = format!(
            "This FlowSchema references the PriorityLevelConfiguration object named {:?} but there is no such object",
            status.level
        );
        ("True", "NotFound", message)
    } else {
        let message = format!(
            "This FlowSchema references the PriorityLevelConfiguration object named {:?} and it exists",
            status.level
        );
        ("False", "Found", message)
    }
}

fn dangling_condition_is(stored: &Value, status: &SchemaStatus) -> bool {
    let (want_status, reason, message) = condition(status);
    stored
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Dangling"))
        .is_some_and(|c| {
            c["status"] == want_status && c["reason"] == reason && c["message"] == message.as_str()
        })
}

fn set_condition(status: SchemaStatus) -> Mutate {
    Arc::new(move |current: Option<&Value>| {
        let mut fs = current.cloned().ok_or_else(|| {
            ApiError::not_found("flowcontrol.apiserver.k8s.io", "flowschemas", &status.name)
        })?;
        let (value, reason, message) = condition(&status);
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let conditions = fs
            .as_object_mut()
            .map(|o| o.entry("status").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
            .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
        let Some(Value::Array(conditions)) = conditions else {
            return Ok(fs);
        };
        let condition = json!({
            "type": "Dangling", "status": value, "reason": reason, "message": message,
            "lastTransitionTime": now,
        });
        match conditions.iter_mut().find(|c| c["type"] == "Dangling") {
            Some(old) => {
                // The transition time moves only when the status does.
                let same = old["status"] == value;
                let since = old["lastTransitionTime"].clone();
                *old = condition;
                if same && !since.is_null() {
                    old["lastTransitionTime"] = since;
                }
            }
            None => conditions.push(condition),
        }
        Ok(fs)
    })
}
