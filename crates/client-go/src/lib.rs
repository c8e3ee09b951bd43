//! The controller runtime of the in-process controllers (upstream's
//! `k8s.io/client-go`): [`tools::cache`] lists and watches a resource into
//! an indexed local cache and calls event handlers (the shared informer,
//! its reflector, store and listers); [`util::workqueue`] hands the keys
//! those handlers queue to workers, one at a time per key, with per-item
//! rate limiting; [`informers`] shares one informer per resource among
//! every controller and admission plugin; [`tools::leaderelection`] lets
//! one of several processes lead by holding a Lease. A controller is then
//! a `reconcile(key)` function and a few lines of wiring, run with a
//! [`CancellationToken`] that stops it.
//! [`transport`] builds the TLS client configurations of outgoing
//! connections (kubelets, aggregated API servers).
//!
//! The crate reads through [`tools::cache::ListerWatcher`] and writes
//! Leases through [`tools::leaderelection::LeaseClient`], which the API
//! server implements over its registry stores; it knows nothing of them.

pub mod informers;
pub mod tools;
pub mod transport;
pub mod util;

pub use tokio_util::sync::CancellationToken;
