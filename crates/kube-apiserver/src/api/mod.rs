//! Helpers over the built-in API types that admission plugins, controllers
//! and validation share (upstream's `pkg/api`), and the conversions between
//! versions of a built-in type (upstream's `pkg/apis/<group>/<version>`).

pub mod autoscaling_v1;
pub mod resource;
