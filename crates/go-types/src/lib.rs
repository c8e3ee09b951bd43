//! Upstream's Go API type declarations, read for the code generators
//! (`structured-merge-codegen`, `protobuf-codegen`): a parser for the
//! subset of Go that API type files use ([`golang`]) and a loader of
//! packages by import path from git repositories ([`source`]).
//!
//! Written by hand: no maintained crate parses Go source, and the API
//! files need only declarations, not a full Go front end.

pub mod golang;
pub mod source;

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum GoError {
    #[error("{0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
    #[error("{0}: {1}")]
    Git(String, String),
    #[error("cannot parse {0}")]
    Parse(String),
    #[error("{0}")]
    Resolve(String),
}
