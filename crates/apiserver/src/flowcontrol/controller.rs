//! The configuration consumer (upstream's APF config controller): watches
//! the FlowSchema and PriorityLevelConfiguration objects, applies them to
//! the server's [`FlowControl`] and keeps each FlowSchema's `Dangling`
//! condition saying whether its priority level exists.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use serde_json::{json, Value};
use storage::{ListOptions, WatchOptions};

use super::{FlowControl, SchemaStatus};
use crate::registry::store::{Mutate, Store, Target, WriteOptions};

/// Changes that arrive together are applied once.
const SETTLE: Duration = Duration::from_millis(50);

/// Keeps `control` configured from the objects in `schemas` and `levels`
/// until the process ends.
pub async fn run(control: Arc<FlowControl>, schemas: Arc<Store>, levels: Arc<Store>) {
    loop {
        let opts = || WatchOptions {
            recursive: true,
            ..Default::default()
        };
        let watches = (
            schemas.watch(None, opts()).await,
            levels.watch(None, opts()).await,
        );
        let (Ok(a), Ok(b)) = watches else {
            tracing::warn!("watching the flow-control configuration failed");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let mut changes = futures::stream::select(a, b);
        loop {
            if let Err(e) = sync(&control, &schemas, &levels).await {
                tracing::warn!(error = %e.message, "applying the flow-control configuration failed");
            }
            // Wait for a change, then let a burst of them settle.
            if changes.next().await.is_none() {
                break;
            }
            tokio::time::sleep(SETTLE).await;
            while let Some(Some(_)) = changes.next().now_or_never() {}
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
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

fn parse<T: serde::de::DeserializeOwned>(objects: &[Arc<Value>]) -> Vec<T> {
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
