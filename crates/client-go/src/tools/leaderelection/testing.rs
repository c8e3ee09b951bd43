//! Leases kept in the project's in-memory storage (the storage interface
//! over `MemoryKv`, as the server's registry keeps them over etcd), for
//! the election's tests: a Lease can be written behind the candidates'
//! backs, and the store can be made to fail.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use apimachinery::status::ApiError;
use async_trait::async_trait;
use futures::FutureExt;
use serde_json::Value;
use storage::store::Store;
use storage::testing::MemoryKv;
use storage::{GetOptions, JsonCodec, Preconditions, Storage, StorageError};

use super::resourcelock::LeaseClient;

pub struct Leases {
    store: Store,
    failing: AtomicBool,
}

impl Leases {
    pub fn new() -> Arc<Self> {
        Arc::new(Leases {
            store: Store::new(Arc::new(MemoryKv::new()), Arc::new(JsonCodec)),
            failing: AtomicBool::new(false),
        })
    }

    /// Every call fails with a 500 while `failing`.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    fn check(&self) -> Result<(), ApiError> {
        match self.failing.load(Ordering::SeqCst) {
            true => Err(ApiError::internal_error("etcdserver: request timed out")),
            false => Ok(()),
        }
    }

    /// The stored Lease.
    pub async fn lease(&self, namespace: &str, name: &str) -> Value {
        let key = key(namespace, name);
        let lease = self.store.get(&key, GetOptions::default()).await.unwrap();
        lease.unwrap().to_value()
    }

    /// Overwrites the stored Lease's spec, as another writer would.
    pub async fn overwrite_spec(&self, namespace: &str, name: &str, spec: Value) {
        let update = move |current: Option<storage::Object>| {
            let mut lease = current.unwrap().to_value();
            lease["spec"] = spec.clone();
            async move { Ok(lease) }.boxed()
        };
        let key = key(namespace, name);
        self.store
            .guaranteed_update(&key, false, None, &update)
            .await
            .unwrap();
    }
}

fn key(namespace: &str, name: &str) -> String {
    format!("/registry/leases/{namespace}/{name}")
}

fn api_error(e: StorageError) -> ApiError {
    match e {
        StorageError::NotFound { key } => {
            ApiError::not_found("coordination.k8s.io", "leases", &key)
        }
        StorageError::AlreadyExists { key } => {
            ApiError::already_exists("coordination.k8s.io", "leases", &key)
        }
        StorageError::Conflict { key, .. } => {
            ApiError::optimistic_lock_conflict("coordination.k8s.io", "leases", &key)
        }
        e => ApiError::internal_error(e),
    }
}

fn meta(lease: &Value, field: &str) -> String {
    lease["metadata"][field]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[async_trait]
impl LeaseClient for Leases {
    async fn get(&self, namespace: &str, name: &str) -> Result<Value, ApiError> {
        self.check()?;
        let lease = self
            .store
            .get(&key(namespace, name), GetOptions::default())
            .await;
        lease.map(|l| l.unwrap().to_value()).map_err(api_error)
    }

    async fn create(&self, lease: Value) -> Result<Value, ApiError> {
        self.check()?;
        let key = key(&meta(&lease, "namespace"), &meta(&lease, "name"));
        let created = self.store.create(&key, lease).await;
        created.map(|l| l.to_value()).map_err(api_error)
    }

    async fn update(&self, lease: Value) -> Result<Value, ApiError> {
        self.check()?;
        let key = key(&meta(&lease, "namespace"), &meta(&lease, "name"));
        let preconditions = Preconditions {
            resource_version: Some(meta(&lease, "resourceVersion")),
            uid: None,
        };
        let update = move |_: Option<storage::Object>| {
            let lease = lease.clone();
            async move { Ok(lease) }.boxed()
        };
        let updated = self
            .store
            .guaranteed_update(&key, false, Some(&preconditions), &update)
            .await;
        updated.map(|l| l.to_value()).map_err(api_error)
    }
}
