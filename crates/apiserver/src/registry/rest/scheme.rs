//! How a resource's request bodies become objects of its type, what
//! upstream's handlers take from the resource's `RequestScope`: the
//! decoder (`Serializer`, into the Go type), the `Defaulter` and the
//! `TypeConverter` (`k8s.io/apiserver/pkg/endpoints/handlers/rest.go`),
//! and whether the type is unstructured (custom resources).

use std::sync::Arc;

use serde_json::Value;
use structured_merge::schema::Schema;

/// A request body turned into an object of the resource's type.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub object: Value,
    /// Paths of fields the type does not have (dropped from `object`), for
    /// `fieldValidation` warnings or errors.
    pub unknown_fields: Vec<String>,
}

pub trait Scheme: Send + Sync + 'static {
    /// Checks a request body against the resource's type, dropping unknown
    /// fields (upstream decodes into the Go type). `Err` is a decoding error
    /// message (answered with 400).
    fn decode(&self, obj: Value) -> Result<Decoded, String> {
        Ok(Decoded {
            object: obj,
            unknown_fields: Vec::new(),
        })
    }

    /// Fills upstream's defaults (done when decoding a request body).
    fn apply_defaults(&self, _obj: &mut Value) {}

    /// Whether the items of a list response keep `apiVersion` and `kind`:
    /// upstream's typed lists leave them to the list, custom resources'
    /// (unstructured) lists keep them.
    fn list_items_keep_type_meta(&self) -> bool {
        false
    }

    /// Whether strategic merge patch applies: it needs the type's patch
    /// metadata, which custom resources do not have (they answer 415).
    fn supports_strategic_merge(&self) -> bool {
        true
    }

    /// The structured-merge schema of the resource and the name of its
    /// root type, for server-side apply and managed fields. `None` (the
    /// default) uses the built-in schema of the kind, or reads objects as
    /// deduced when there is none; custom resources answer with their
    /// version's schema.
    fn type_schema(&self) -> Option<Arc<(Schema, String)>> {
        None
    }
}
