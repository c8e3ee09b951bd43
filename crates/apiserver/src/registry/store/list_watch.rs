//! A registry store as an informer's source (the `ListWatch` upstream's
//! in-process controllers get from a loopback client): every object of
//! the resource, then its watch with bookmarks.

use apimachinery::status::ApiError;
use async_trait::async_trait;
use client_go::tools::cache::ListerWatcher;
use storage::{ListOptions, ListResult, WatchOptions, WatchStream};

use super::Store;

#[async_trait]
impl ListerWatcher for Store {
    async fn list(&self) -> Result<ListResult, ApiError> {
        Store::list(self, None, ListOptions::default()).await
    }

    async fn watch(&self, resource_version: i64) -> Result<WatchStream, ApiError> {
        let opts = WatchOptions {
            resource_version,
            allow_bookmarks: true,
            ..Default::default()
        };
        Store::watch(self, None, opts).await
    }
}
