//! What an informer reads through (upstream's `ListerWatcher` in
//! `tools/cache/listwatch.go`): one resource's list and its watch.

use apimachinery::status::ApiError;
use async_trait::async_trait;
use storage::{ListResult, WatchStream};

/// Lists every object of one resource and watches its changes.
#[async_trait]
pub trait ListerWatcher: Send + Sync + 'static {
    /// Every object, and the revision the list was taken at.
    async fn list(&self) -> Result<ListResult, ApiError>;

    /// The changes after `resource_version`, bookmarks included.
    async fn watch(&self, resource_version: i64) -> Result<WatchStream, ApiError>;
}
