//! What a resource does on delete (upstream's `registry/rest/delete.go`):
//! `RESTDeleteStrategy` with the generic store's finalizer hooks,
//! `RESTGracefulDeleteStrategy` (`CheckGracefulDelete`) and
//! `GarbageCollectionDeleteStrategy` (`DefaultGarbageCollectionPolicy`).

use serde_json::Value;

pub trait DeleteStrategy: Send + Sync + 'static {
    /// Why the object named `name` may never be deleted, if it may not
    /// (upstream REST `Delete` overrides, e.g. the system PriorityClasses):
    /// a DELETE of it answers 403 with this reason, before anything else is
    /// checked. Collection deletes are not affected, as upstream.
    fn undeletable(&self, _name: &str) -> Option<&'static str> {
        None
    }

    /// Called when an object is deleted: a resource that must clean up
    /// before its objects go (CRDs remove their custom resources) adds its
    /// finalizer here, so the object is marked for deletion instead of
    /// removed. Returns whether it changed the object.
    fn prepare_for_delete(&self, _obj: &mut Value) -> bool {
        false
    }

    /// Whether finalizers kept outside `metadata.finalizers` (a namespace's
    /// `spec.finalizers`) still hold an object marked for deletion.
    fn holds_deletion(&self, _obj: &Value) -> bool {
        false
    }
}

pub trait GracefulDeleteStrategy: Send + Sync + 'static {
    /// Graceful deletion (upstream's `CheckGracefulDelete`): the grace
    /// period, in seconds, of an object deleted with `requested`
    /// (`DeleteOptions.gracePeriodSeconds`); `None` for resources whose
    /// objects are deleted at once (all but pods).
    fn grace_period(&self, _obj: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }
}

pub trait GarbageCollectionDeleteStrategy: Send + Sync + 'static {
    /// What happens to dependents when an object is deleted without a
    /// propagation policy (upstream's `DefaultGarbageCollectionPolicy` for
    /// the served group version).
    fn gc_policy(&self) -> GcPolicy {
        GcPolicy::DeleteDependents
    }
}

/// What happens to dependents when an object is deleted without a policy
/// (upstream's `rest.GarbageCollectionPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GcPolicy {
    /// Background deletion: no finalizer, the collector removes dependents.
    #[default]
    DeleteDependents,
    /// The `orphan` finalizer is added (older group versions).
    OrphanDependents,
    /// The resource is never collected: no GC finalizer is ever set.
    Unsupported,
}
