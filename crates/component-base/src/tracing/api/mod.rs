//! The versioned tracing configuration types (upstream's
//! `k8s.io/component-base/tracing/api`).

pub mod v1;
