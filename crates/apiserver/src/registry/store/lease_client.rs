//! A registry store as a leader election's Lease client (what upstream's
//! in-process components get from a loopback clientset): reads and writes
//! go through the Lease strategy's defaults and validation, and an update
//! carrying a stale resourceVersion is refused with 409.

use std::sync::Arc;

use apimachinery::status::ApiError;
use async_trait::async_trait;
use client_go::tools::leaderelection::LeaseClient;
use serde_json::Value;
use storage::GetOptions;

use super::{Store, Target, WriteOptions};
use crate::registry::object_meta;

#[async_trait]
impl LeaseClient for Store {
    async fn get(&self, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let lease = Store::get(self, Some(namespace), name, GetOptions::default()).await?;
        Ok(lease.to_value())
    }

    async fn create(&self, lease: Value) -> Result<Value, ApiError> {
        let created = Store::create(self, lease, &WriteOptions::default()).await?;
        Ok(created.to_value())
    }

    async fn update(&self, lease: Value) -> Result<Value, ApiError> {
        let namespace = object_meta::namespace(&lease).map(str::to_owned);
        let name = object_meta::name(&lease).to_owned();
        let lease = Arc::new(lease);
        let mutate = Arc::new(move |_: Option<&Value>| Ok((*lease).clone()));
        let opts = WriteOptions::default();
        let (updated, _) = Store::update(
            self,
            namespace.as_deref(),
            &name,
            Target::Main,
            mutate,
            &opts,
        )
        .await?;
        Ok(updated.to_value())
    }
}
