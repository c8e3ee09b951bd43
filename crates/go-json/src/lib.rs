//! What upstream's kube-apiserver writes for an object: Go's
//! `encoding/json` over the `k8s.io/api` structs, then
//! `runtime/serializer/json` (a trailing newline) or `sigs.k8s.io/yaml`.
//!
//! - [`table`]: every built-in struct type's fields in Go's declaration
//!   order with their Go shapes and `omitempty`/`omitzero` options,
//!   generated from upstream's Go types by `structured-merge-codegen`.
//! - [`normalize`]: reshapes a JSON tree as decoding it into the Go struct
//!   and encoding it again would (field order, zero values of fields
//!   without `omitempty`, empty values dropped, unknown fields dropped,
//!   map keys sorted, quantities canonical). Done once when an object is
//!   written, so stored bytes and every read already have Go's shape.
//! - [`encode`]: the output-only parts: Go's string escaping (`<`, `>`,
//!   `&`, U+2028, U+2029), Go's float format, the trailing newline, and
//!   YAML with go-yaml's key order.

pub mod encode;
pub mod normalize;
mod shaped;
pub mod table;

pub use normalize::{normalize, normalize_as, normalize_kind};
pub use shaped::is_normalized;
