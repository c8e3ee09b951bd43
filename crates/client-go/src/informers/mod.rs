//! Upstream's `k8s.io/client-go/informers`: the [`SharedInformerFactory`]
//! that gives every controller and admission plugin asking for one
//! resource the same informer, so each resource is listed and watched
//! once and read from one cache.

mod factory;

pub use factory::{GroupResource, SharedInformerFactory};
