//! A registry store as an informer's source (the `ListWatch` upstream's
//! in-process controllers get from a loopback client): every object of
//! the resource (or of one namespace), then its watch with bookmarks. The
//! list waits for the store's watch cache to be ready, as upstream's
//! reflector retries the 429 of a cache still loading, and is taken as the
//! reflector takes its first one, at resourceVersion 0 (any version): from
//! the cache, sharing its objects. A consistent list is handed to storage
//! while the cache lags the store's revision (as at start, with leases
//! being written), and the informer would keep a second decoded copy of
//! every object.

use std::sync::Arc;

use apimachinery::status::ApiError;
use async_trait::async_trait;
use client_go::tools::cache::ListerWatcher;
use storage::{ListOptions, ListResult, ReadVersion, WatchOptions, WatchStream};

use super::Store;

#[async_trait]
impl ListerWatcher for Store {
    async fn list(&self) -> Result<ListResult, ApiError> {
        list_in(self, None).await
    }

    async fn watch(&self, resource_version: i64) -> Result<WatchStream, ApiError> {
        watch_in(self, None, resource_version).await
    }
}

/// A reflector's first list of `namespace` (all when `None`):
/// resourceVersion 0, any version, once the watch cache is ready.
async fn list_in(store: &Store, namespace: Option<&str>) -> Result<ListResult, ApiError> {
    store.storage().wait_ready().await;
    let opts = ListOptions {
        version: ReadVersion::Any,
        ..ListOptions::default()
    };
    store.list(namespace, opts).await
}

/// A reflector's watch of `namespace` from `resource_version`, with bookmarks.
async fn watch_in(
    store: &Store,
    namespace: Option<&str>,
    resource_version: i64,
) -> Result<WatchStream, ApiError> {
    let opts = WatchOptions {
        resource_version,
        allow_bookmarks: true,
        ..Default::default()
    };
    store.watch(namespace, opts).await
}

/// A registry store's objects in one namespace as an informer's source
/// (upstream's informers made for one namespace, such as the cluster
/// authentication trust controller's of `kube-system`).
pub struct InNamespace {
    store: Arc<Store>,
    namespace: String,
}

impl InNamespace {
    pub fn new(store: Arc<Store>, namespace: &str) -> Self {
        InNamespace {
            store,
            namespace: namespace.to_owned(),
        }
    }
}

#[async_trait]
impl ListerWatcher for InNamespace {
    async fn list(&self) -> Result<ListResult, ApiError> {
        list_in(&self.store, Some(&self.namespace)).await
    }

    async fn watch(&self, resource_version: i64) -> Result<WatchStream, ApiError> {
        watch_in(&self.store, Some(&self.namespace), resource_version).await
    }
}
