//! The generic registry: one store implementing every verb, resources
//! described by [`ResourceInfo`] and customised by a [`Strategy`].

pub mod deletion;
pub mod errors;
pub mod object_meta;
pub mod resource;
pub mod store;
pub mod strategy;
pub mod table;

pub use deletion::{DeleteOptions, GcPolicy, PropagationPolicy};
pub use resource::ResourceInfo;
pub use store::{DeleteOutcome, Mutate, Store, Target, WriteOptions};
pub use strategy::{Decoded, DefaultStrategy, ScalePaths, Strategy, UpdateSubresource};
