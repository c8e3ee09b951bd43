//! Writes of a CRD by its controllers: read-modify-write through the CRD
//! store (the status subresource for conditions and names, the main
//! resource for finalizers); an unchanged object is not written.

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Store, Target, WriteOptions};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

async fn write(
    crds: &Store,
    name: &str,
    target: Target,
    change: impl Fn(&mut Value) + Send + Sync + 'static,
) -> Result<Option<CustomResourceDefinition>, ApiError> {
    let mutate = Arc::new(move |current: Option<&Value>| {
        let mut obj = current.cloned().ok_or_else(|| {
            ApiError::not_found("apiextensions.k8s.io", "customresourcedefinitions", "")
        })?;
        change(&mut obj);
        Ok(obj)
    });
    let (stored, _) = crds
        .update(None, name, target, mutate, &WriteOptions::default())
        .await?;
    Ok(serde_json::from_value(stored.to_value()).ok())
}

/// Applies `change` to the CRD's status. Returns the CRD as stored.
pub async fn update(
    crds: &Store,
    name: &str,
    change: impl Fn(&mut Value) + Send + Sync + 'static,
) -> Result<Option<CustomResourceDefinition>, ApiError> {
    write(crds, name, Target::Status, change).await
}

/// Applies `change` to the CRD's metadata and spec (finalizers).
pub async fn update_main(
    crds: &Store,
    name: &str,
    change: impl Fn(&mut Value) + Send + Sync + 'static,
) -> Result<Option<CustomResourceDefinition>, ApiError> {
    write(crds, name, Target::Main, change).await
}
