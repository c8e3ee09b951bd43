//! Upstream's `k8s.io/client-go/tools`: the informer cache.

pub mod cache;
