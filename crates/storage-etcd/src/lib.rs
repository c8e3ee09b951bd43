//! The etcd v3 storage backend: [`EtcdKv`] implements the storage layer's
//! [`storage::Kv`] over etcd with the requests upstream's etcd3 store
//! issues, so the shared store and watch cache run unchanged on it.
//!
//! * [`EtcdConfig`] carries the `--etcd-servers`, `--etcd-cafile`,
//!   `--etcd-certfile` and `--etcd-keyfile` settings;
//! * [`EtcdKv::connect`] builds the client, [`wait_for_etcd`] is the startup
//!   preflight that waits for etcd to answer;
//! * compaction is coordinated between API servers through
//!   [`COMPACT_REV_KEY`], as upstream's compactor does;
//! * with the `testing` feature, `testing::EtcdServer` runs a real etcd
//!   for tests.

mod compact;
mod config;
mod error;
mod kv;
mod members;
mod preflight;
mod rpc;
#[cfg(feature = "testing")]
pub mod testing;
mod watch;

pub use compact::COMPACT_REV_KEY;
pub use config::{EtcdConfig, DEFAULT_MAX_REQUEST_BYTES};
pub use error::ConnectError;
pub use kv::EtcdKv;
pub use preflight::wait_for_etcd;
