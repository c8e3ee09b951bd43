//! The `Available` condition of APIServices (upstream's
//! `pkg/controllers/status`): always True for local ones ([`local`]),
//! checked against the Service and its discovery for remote ones
//! ([`remote`]).

pub mod local;
pub mod metrics;
pub mod remote;

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::object_meta;
use apiserver::registry::store::{Store, Target, WriteOptions};
use serde_json::{json, Value};

/// The `Available` condition an APIService should have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Available {
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

/// The APIService's current `Available` condition.
pub fn available(api_service: &Value) -> Option<&Value> {
    api_service
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == "Available")
}

/// Whether the APIService's condition already says `want`.
pub fn has(api_service: &Value, want: &Available) -> bool {
    available(api_service).is_some_and(|c| {
        c["status"] == want.status && c["reason"] == want.reason && c["message"] == want.message
    })
}

/// Writes the `Available` condition of the APIService `name` (upstream's
/// `SetAPIServiceCondition`: the transition time stays while the status
/// does not change); whether it was written. A deleted or concurrently
/// changed APIService is left to the next event.
pub async fn set_available(api_services: &Store, name: &str, want: Available) -> bool {
    let mutate = Arc::new(move |current: Option<&Value>| {
        let mut service = current.cloned().unwrap_or_else(|| json!({}));
        let since = available(&service)
            .filter(|c| c["status"] == want.status)
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(object_meta::now()));
        let mut conditions: Vec<Value> = service
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter(|c| c["type"] != "Available")
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        conditions.push(json!({"type": "Available", "status": want.status,
            "lastTransitionTime": since, "reason": want.reason, "message": want.message}));
        if !service["status"].is_object() {
            service["status"] = json!({});
        }
        service["status"]["conditions"] = json!(conditions);
        Ok(service)
    });
    let result = api_services
        .update(None, name, Target::Status, mutate, &WriteOptions::default())
        .await;
    let Err(e) = result.map(|_| ()) else {
        return true;
    };
    {
        if !matches!(
            e,
            ApiError {
                code: 404 | 409,
                ..
            }
        ) {
            tracing::warn!(name, error = %e.message, "updating an APIService's Available condition failed");
        }
    }
    false
}
