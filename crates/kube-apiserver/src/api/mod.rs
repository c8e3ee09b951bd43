//! Helpers over the built-in API types that admission plugins, controllers
//! and validation share (upstream's `pkg/api`).

pub mod resource;
