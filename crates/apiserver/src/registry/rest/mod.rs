//! The interfaces a resource implements to customise the generic store
//! (upstream's `k8s.io/apiserver/pkg/registry/rest`): one per concern, so
//! a resource implements only what it needs and the store
//! ([`super::store::Strategies`]) holds each part.

pub mod create;
pub mod delete;
pub mod fields;
pub mod scheme;
pub mod table;
pub mod update;

pub use create::{BeginCreate, CreateStrategy};
pub use delete::{
    DeleteStrategy, GarbageCollectionDeleteStrategy, GcPolicy, GracefulDeleteStrategy,
};
pub use fields::SelectableFields;
pub use scheme::{Decoded, Scheme};
pub use table::TableConvertor;
pub use update::{UpdateStrategy, UpdateSubresource};
