//! YAML bodies (upstream: `sigs.k8s.io/yaml`'s `YAMLToJSON`, which
//! unmarshals the first document with its go-yaml v2 fork into
//! `interface{}`, converts keys to strings and marshals the result as
//! JSON).
//!
//! Here: a linear scan first refuses nesting past go-yaml's limit with its
//! message (its scanner's `max_flow_level` and `max_indents`, "exceeded
//! max depth of 10000"); libyaml (the C parser go-yaml was ported from,
//! patched as go-yaml is to scan deep documents in linear time, see
//! `vendor/unsafe-libyaml/PATCHED.md`) turns the text into events; the
//! events become go-yaml's node tree ([`nodes`]) and the tree becomes JSON
//! as go-yaml and sigs.k8s.io/yaml decode it ([`decode`], scalars as
//! [`resolve`]), both with explicit stacks, so every depth upstream
//! decodes is decoded without recursion and alias expansion stays within
//! go-yaml's ratio.

mod decode;
mod depth;
mod events;
mod nodes;
pub mod resolve;

use serde_json::Value;

use super::DecodeError;

/// Decodes the first YAML document into its JSON value.
pub fn decode(bytes: &[u8]) -> Result<Value, DecodeError> {
    depth::check(bytes)?;
    let doc = nodes::parse(bytes).map_err(DecodeError::Syntax)?;
    decode::decode(&doc)
}

#[cfg(test)]
mod tests;
