//! The generic registry: one store implementing every verb, resources
//! described by [`ResourceInfo`] and customised by a [`Strategy`].

pub mod errors;
pub mod object_meta;
pub mod resource;
pub mod store;
pub mod strategy;
pub mod table;

pub use resource::ResourceInfo;
pub use store::{DeleteOptions, DeleteOutcome, Mutate, Store, Target, WriteOptions};
pub use strategy::{Decoded, DefaultStrategy, ScalePaths, Strategy};
