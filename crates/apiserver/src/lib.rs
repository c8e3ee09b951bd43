//! The generic API server (upstream's `k8s.io/apiserver`): configuration,
//! the handler chain, health checks, the generic REST handler over storage,
//! discovery, and serving.

pub mod admission;
pub mod apis;
pub mod audit;
pub mod authentication;
pub mod authorization;
pub mod endpoints;
pub mod filters;
pub mod flowcontrol;
pub mod metrics;
pub mod plugin;
pub mod registry;
pub mod server;
pub mod serving;
pub mod util;
