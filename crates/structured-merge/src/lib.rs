//! The structure of Kubernetes objects and the merges that depend on it
//! (upstream's sigs.k8s.io/structured-merge-diff and the strategic merge
//! patch of apimachinery): one [`schema::Schema`] model that describes
//! built-in types (generated from upstream's Go type definitions) and
//! custom resources (built from a CRD's OpenAPI schema) alike.

pub mod builtin;
pub mod fieldpath;
pub mod managed;
pub mod schema;
pub mod strategic;
pub mod typed;
