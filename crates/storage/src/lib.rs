//! The storage layer of the API server, shaped like upstream's
//! `k8s.io/apiserver/pkg/storage`:
//!
//! * [`Storage`] is the contract the generic registry store calls
//!   (upstream's `storage.Interface`): objects in, objects out, with
//!   resourceVersion, predicate, pagination and watch semantics.
//! * [`Kv`] is the revisioned key-value backend underneath (an etcd-v3-like
//!   MVCC store). Two implementations live in their own crates: the embedded
//!   store (`storage-embedded`) and etcd (`storage-etcd`).
//! * [`store::Store`] implements [`Storage`] once, over any [`Kv`] — the
//!   equivalent of upstream's etcd3 store — so both backends share one
//!   implementation of the semantics.
//! * [`cacher`] is the watch cache in front of a [`Storage`].
//! * [`object`]: a stored object version as a tree, its JSON, or both.
//! * [`compactor`] compacts a [`Kv`]'s history on an interval.
//! * [`offload`] runs the CPU-heavy part of big lists off the async workers.
//! * [`value`] transforms stored values (encryption at rest) over any [`Kv`].

pub mod cacher;
pub mod codec;
pub mod compactor;
pub mod continue_token;
pub mod error;
pub mod interface;
pub mod kv;
pub mod object;
pub mod offload;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod value;
pub mod versioner;

pub use codec::{Codec, JsonCodec};
pub use error::StorageError;
pub use interface::*;
pub use kv::*;
pub use object::StoredObject;
