//! Upstream's `k8s.io/client-go/tools/cache`: a reflector lists a
//! resource through a [`ListerWatcher`] then follows its watch, keeping an
//! [`Indexer`] current; a [`SharedInformer`] runs it, resyncs and calls its
//! [`ResourceEventHandler`]s; a [`Lister`] reads the cache by namespace,
//! name or index.

mod backoff;
mod handler;
mod index;
mod lister;
mod listwatch;
mod reflector;
mod shared_informer;

pub use handler::{ResourceEventHandler, ResourceEventHandlerFuncs};
pub use index::{meta_namespace_key, IndexFunc, Indexer, NAMESPACE_INDEX};
pub use lister::Lister;
pub use listwatch::ListerWatcher;
pub use shared_informer::{ResourceEventHandlerRegistration, SharedInformer};

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
