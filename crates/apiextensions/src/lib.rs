//! What apiextensions-apiserver does with the schemas of
//! CustomResourceDefinitions: validating CRDs themselves (names, versions,
//! structural schemas, subresources, printer columns, conversion), and for
//! custom resources the OpenAPI v3 validation, pruning of unknown fields,
//! defaulting, the server-side-apply type model and the published OpenAPI
//! schema. A pure library: no I/O.
//!
//! CRDs are taken as `apiextensions.k8s.io/v1` JSON. The CRD strategy runs
//! [`apply_crd_defaults`] on decode, [`prepare_for_create`] /
//! [`prepare_for_update`], then [`validate_crd`] / [`validate_crd_update`]
//! (which include the metadata checks upstream's strategy makes). Custom
//! resources use a [`CompiledSchema`] per served version, in upstream's
//! order: [`CompiledSchema::prune`] on decode (its paths feed
//! `fieldValidation` through [`unknown_field_messages`]), then
//! [`CompiledSchema::apply_defaults`] (also after reading from storage),
//! then [`validate_type_meta`] and [`CompiledSchema::validate`] /
//! [`CompiledSchema::validate_update`] /
//! [`CompiledSchema::validate_status_update`] plus the scale checks; CEL
//! rules (`x-kubernetes-validations`) are the `kube-cel` crate's.

mod compiled;
mod crd;
mod crd_parts;
mod crd_schema;
mod defaulting;
mod embedded;
mod fieldpath;
mod lifecycle;
mod listtype;
mod objectmeta;
pub mod openapi;
mod prune;
mod publish;
mod resource;
mod smd;
pub mod structural;

pub use compiled::{unknown_field_messages, CompiledSchema};
pub use crd::{validate_crd, validate_crd_update};
pub use crd_parts::{
    client_config_errors as webhook_client_config_errors,
    review_versions as webhook_review_versions,
};
pub use lifecycle::{
    apply_crd_defaults, prepare_for_create, prepare_for_update, validate_crd_status_update,
    warnings_on_create, warnings_on_update,
};
use openapi::formats;
pub use openapi::props::{self, Props};
pub use publish::{published_definitions, Definition};
pub use resource::{
    finalizer_warnings, validate_scale_spec, validate_scale_status, validate_type_meta,
};
pub use smd::{model_name, OBJECT_META};
