//! The admission framework (upstream's `k8s.io/apiserver/pkg/admission`):
//! the attributes of a write, the mutating and validating plugin traits, and
//! the chain the registry store runs on every create, update and delete —
//! all mutating plugins before the object is validated, all validating
//! plugins after.

mod attributes;
mod chain;
mod context;
mod equivalents;
pub mod initializer;
pub mod metrics;
pub mod plugin;
mod reinvocation;

pub use attributes::{Attributes, GroupVersionKind, GroupVersionResource, Operation};
pub use chain::{Chain, Plugin};
pub use context::RequestContext;
pub use equivalents::{EquivalentVersions, Equivalents};
pub use reinvocation::{HookReinvocation, ReinvocationContext};

use apimachinery::status::ApiError;
use async_trait::async_trait;

/// What every plugin says about itself (upstream's `admission.Interface`).
pub trait Handler: Send + Sync {
    /// Whether the plugin looks at requests of this operation.
    fn handles(&self, operation: Operation) -> bool;
}

/// A plugin that may change the object (upstream's `MutationInterface`).
#[async_trait]
pub trait MutationInterface: Handler {
    /// Changes `attrs.object` or refuses the request.
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError>;
}

/// A plugin that only accepts or refuses (upstream's `ValidationInterface`).
#[async_trait]
pub trait ValidationInterface: Handler {
    /// Refuses the request with an error, or lets it through.
    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError>;
}
