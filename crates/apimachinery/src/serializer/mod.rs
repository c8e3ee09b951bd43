//! Bounded decoding of request bodies (upstream:
//! `k8s.io/apimachinery/pkg/runtime/serializer/{json,yaml}` over
//! `sigs.k8s.io/json` and `sigs.k8s.io/yaml`'s go-yaml fork).
//!
//! Every body and patch the server reads goes through [`json`] or [`yaml`]:
//! nesting depth is measured by a linear scan before a recursive decoder
//! sees the bytes, and YAML alias expansion is bounded as upstream bounds
//! it, so no input costs more than time linear in its size.
//!
//! Upstream accepts nesting up to 10000 levels; deeper input gets
//! upstream's messages here. JSON and YAML are decoded at every depth
//! upstream decodes. Everything that walks a decoded tree recurses: the
//! server's threads get [`THREAD_STACK_BYTES`] of stack for it.

pub mod json;
pub mod yaml;

/// Upstream's nesting limit for JSON (Go's `encoding/json`) and YAML
/// (go-yaml's `max_flow_level` and `max_indents`).
pub const UPSTREAM_MAX_DEPTH: usize = 10_000;

/// Stack for a thread that decodes, encodes, copies, compares, merges and
/// drops trees [`UPSTREAM_MAX_DEPTH`] deep (an unoptimized build takes
/// about 2 KiB per level to decode; the rest of a request's walks more).
/// Only the pages a deep request touches are ever committed.
pub const THREAD_STACK_BYTES: usize = 256 << 20;

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not well-formed, or not of the expected shape: the decoder's message.
    #[error("{0}")]
    Syntax(String),
    /// JSON nested deeper than upstream's limit (Go's `SyntaxError` text).
    #[error("exceeded max depth")]
    JsonMaxDepth,
    /// YAML nested deeper than upstream's limit (go-yaml's scanner error;
    /// `line` is 1-based and left out on the first line, as go-yaml does).
    #[error("yaml: {}exceeded max depth of {UPSTREAM_MAX_DEPTH}", line_prefix(*.line))]
    YamlMaxDepth { line: usize },
    /// YAML whose aliases expand beyond go-yaml's allowed ratio.
    #[error("yaml: document contains excessive aliasing")]
    ExcessiveAliasing,
}

impl DecodeError {
    /// Whether upstream refuses this input for the same reason, so its
    /// answer (not this decoder's) is the one to give.
    pub fn is_upstream_limit(&self) -> bool {
        matches!(
            self,
            DecodeError::JsonMaxDepth
                | DecodeError::YamlMaxDepth { .. }
                | DecodeError::ExcessiveAliasing
        )
    }
}

fn line_prefix(line: usize) -> String {
    if line > 1 {
        format!("line {line}: ")
    } else {
        String::new()
    }
}
