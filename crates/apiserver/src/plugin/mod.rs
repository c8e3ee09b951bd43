//! Plugins of the generic API server (upstream's `k8s.io/apiserver/plugin`):
//! authenticators and authorizers that call out to other services.

pub mod pkg;
