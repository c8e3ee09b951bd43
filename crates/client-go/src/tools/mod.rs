//! Upstream's `k8s.io/client-go/tools`: the informer cache and leader
//! election.

pub mod cache;
pub mod leaderelection;
