//! The other versions a resource is served at, for admission rules with
//! `matchPolicy: Equivalent` (upstream's equivalent resource mapper): a
//! webhook registered for `widgets.example.com/v1` also sees writes made
//! through `v2`, with the object converted to `v1`.

use std::sync::Arc;

use apimachinery::status::ApiError;
use async_trait::async_trait;
use serde_json::Value;

use super::{GroupVersionKind, GroupVersionResource};

/// One resource's served versions and how objects move between them.
#[async_trait]
pub trait EquivalentVersions: Send + Sync {
    /// Every version the resource is served at (the request's own among
    /// them), in the order rules are tried.
    fn versions(&self) -> Vec<(GroupVersionResource, GroupVersionKind)>;

    /// `object` at `api_version` (`group/version`, or `version` for the
    /// core group).
    async fn convert(&self, object: Value, api_version: &str) -> Result<Value, ApiError>;
}

/// The equivalents carried by a write's attributes.
#[derive(Clone)]
pub struct Equivalents(pub Arc<dyn EquivalentVersions>);

impl std::fmt::Debug for Equivalents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.versions()).finish()
    }
}
