//! The generic registry: one store implementing every verb, resources
//! described by [`ResourceInfo`] and customised by the [`rest`]
//! strategies the store holds ([`store::Strategies`]).

pub mod admission;
pub mod converting;
pub mod deletion;
pub mod errors;
pub mod object_meta;
pub mod resource;
pub mod rest;
pub mod store;

pub use deletion::{DeleteOptions, PropagationPolicy};
pub use resource::ResourceInfo;
