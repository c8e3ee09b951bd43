//! What a resource does on create (upstream's `rest.RESTCreateStrategy`
//! in `registry/rest/create.go`: `PrepareForCreate`, `Validate`,
//! `Canonicalize`, the name rule `BeforeCreate` applies), and the
//! generic store's `BeginCreate` hook for what a new object reserves
//! outside storage.

use apimachinery::field_errors::FieldError;
use apimachinery::validation::{name_is_dns_subdomain, NameValidator};
use serde_json::Value;

pub trait CreateStrategy: Send + Sync + 'static {
    /// Clears or sets fields the user may not set on create (status reset,
    /// generation = 1, …).
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// How names of this resource are validated (most resources: a DNS
    /// subdomain; namespaces: a DNS label), on create and on update.
    fn name_validator(&self) -> NameValidator {
        name_is_dns_subdomain
    }

    /// Type-specific validation of an object (metadata is validated by the
    /// store for every resource); writes through update subresources are
    /// checked with it too.
    fn validate(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validation of an object being created: `validate` plus rules that
    /// hold only at creation (a pod's ephemeral containers).
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        self.validate(obj)
    }

    /// Normalizes an object before it is stored (on create and update).
    fn canonicalize(&self, _obj: &mut Value) {}
}

/// What a new object reserves outside storage (e.g. a Service's ClusterIP
/// and NodePorts): upstream's `Store.BeginCreate`, with the release its
/// `FinishFunc` makes on failure and `AfterDelete` makes on delete.
pub trait BeginCreate: Send + Sync + 'static {
    /// Takes what the object reserves, after validation passed. Returns
    /// whether anything was reserved; errors are field errors answered
    /// with 422.
    fn before_create(&self, _obj: &mut Value) -> Result<bool, Vec<FieldError>> {
        Ok(false)
    }

    /// Gives back what `before_create` reserved: the object was not stored
    /// (dry run or failure) or has been deleted.
    fn release(&self, _obj: &Value) {}
}
