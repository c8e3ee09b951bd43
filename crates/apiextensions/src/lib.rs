//! What apiextensions-apiserver does with the schemas of
//! CustomResourceDefinitions: validating CRDs themselves (names, versions,
//! structural schemas, subresources, printer columns, conversion), and for
//! custom resources the OpenAPI v3 validation, pruning of unknown fields,
//! defaulting, the server-side-apply type model and the published OpenAPI
//! schema. A pure library: no I/O.

mod compiled;
mod crd;
mod crd_parts;
mod crd_schema;
mod defaulting;
mod embedded;
mod formats;
mod gofmt;
mod listtype;
pub mod openapi;
pub mod props;
mod prune;
pub mod structural;

pub use compiled::{unknown_field_messages, CompiledSchema};
pub use crd::{validate_crd, validate_crd_update};
pub use props::Props;
