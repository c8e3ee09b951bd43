//! The strategies a store holds, one per concern, as upstream's
//! `registry/generic/registry.Store` holds its `CreateStrategy`,
//! `BeginCreate`, `UpdateStrategy`, `DeleteStrategy`,
//! `ReturnDeletedObject` and `TableConvertor`: a resource plugs in the
//! parts it implements and leaves the others to [`DefaultStrategy`].

use std::sync::Arc;

use crate::registry::rest::{
    BeginCreate, CreateStrategy, DeleteStrategy, GarbageCollectionDeleteStrategy,
    GracefulDeleteStrategy, Scheme, SelectableFields, TableConvertor, UpdateStrategy,
};

/// A resource's behaviour in the generic store and handlers.
#[derive(Clone)]
pub struct Strategies {
    /// Decoding, defaulting and typing of request bodies.
    pub scheme: Arc<dyn Scheme>,
    pub create: Arc<dyn CreateStrategy>,
    pub begin_create: Arc<dyn BeginCreate>,
    pub update: Arc<dyn UpdateStrategy>,
    pub delete: Arc<dyn DeleteStrategy>,
    pub graceful_delete: Arc<dyn GracefulDeleteStrategy>,
    pub garbage_collection: Arc<dyn GarbageCollectionDeleteStrategy>,
    /// Whether a delete that removed the object answers with the object
    /// rather than a success Status (upstream's `ReturnDeletedObject`,
    /// set for pods, services, service accounts and a few others).
    pub return_deleted_object: bool,
    pub table: Arc<dyn TableConvertor>,
    pub fields: Arc<dyn SelectableFields>,
    /// Where the `scale` subresource reads and writes replicas.
    pub scale: ScalePaths,
    /// The `Warning` sent with every answer about the resource when its
    /// version is deprecated (upstream's `APILifecycleDeprecated` types,
    /// e.g. "v1 Endpoints is deprecated in v1.33+; use …").
    pub deprecation: Option<&'static str>,
}

impl Default for Strategies {
    fn default() -> Self {
        let none = Arc::new(DefaultStrategy);
        Strategies {
            scheme: none.clone(),
            create: none.clone(),
            begin_create: none.clone(),
            update: none.clone(),
            delete: none.clone(),
            graceful_delete: none.clone(),
            garbage_collection: none.clone(),
            return_deleted_object: false,
            table: none.clone(),
            fields: none,
            scale: ScalePaths::default(),
            deprecation: None,
        }
    }
}

/// Where a resource keeps what its `scale` subresource shows, as JSON
/// pointers (custom resources name them in their definition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    /// `None`: the label selector at `spec.selector` (workloads); `Some`:
    /// the pointer of a string selector, empty when the resource has none.
    pub label_selector: Option<String>,
}

impl Default for ScalePaths {
    fn default() -> Self {
        ScalePaths {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            label_selector: None,
        }
    }
}

/// The strategy of a resource with no behaviour of its own.
pub struct DefaultStrategy;

impl Scheme for DefaultStrategy {}
impl CreateStrategy for DefaultStrategy {}
impl BeginCreate for DefaultStrategy {}
impl UpdateStrategy for DefaultStrategy {}
impl DeleteStrategy for DefaultStrategy {}
impl GracefulDeleteStrategy for DefaultStrategy {}
impl GarbageCollectionDeleteStrategy for DefaultStrategy {}
impl TableConvertor for DefaultStrategy {}
impl SelectableFields for DefaultStrategy {}
