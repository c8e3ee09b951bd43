//! YAML bodies (upstream: `sigs.k8s.io/yaml`'s `YAMLToJSON` over its go-yaml
//! v2 fork, whose scanner refuses a flow level or an indentation stack
//! deeper than 10000 ("exceeded max depth of 10000") and whose decoder
//! refuses alias expansion beyond a ratio of the document ("document
//! contains excessive aliasing")).
//!
//! libyaml, under serde_yaml, scans nested flow collections in time
//! quadratic in their depth and expands aliases up to a hundred times the
//! document's events; both checks here run first, in linear time.
//!
//! serde_yaml cannot go deeper than 128 levels. A document nested deeper
//! (and within upstream's limit) that is JSON, as kubectl sends its bodies
//! and apply configurations, is decoded as JSON: JSON is YAML, and
//! upstream's YAML decoding gives the same tree for it.

mod aliases;
mod depth;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::DecodeError;

/// Decodes one YAML document into its JSON value.
pub fn decode(bytes: &[u8]) -> Result<Value, DecodeError> {
    decode_as(bytes)
}

/// Decodes YAML into `T` after the depth and alias checks.
pub fn decode_as<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    match check(bytes) {
        Ok(()) => serde_yaml::from_slice(bytes).map_err(|e| DecodeError::Syntax(e.to_string())),
        Err(too_deep @ DecodeError::RecursionLimit { .. }) => as_json(bytes).ok_or(too_deep),
        Err(err) => Err(err),
    }
}

/// A document that is a JSON object or array, decoded as JSON.
fn as_json<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
    if !matches!(first, b'{' | b'[') {
        return None;
    }
    super::json::decode_as(bytes).ok()
}

/// The checks [`decode_as`] makes before decoding: nesting depth, then
/// (when the text may hold aliases) alias expansion.
pub fn check(bytes: &[u8]) -> Result<(), DecodeError> {
    depth::check(bytes)?;
    if bytes.contains(&b'*') && bytes.contains(&b'&') {
        aliases::check(bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
