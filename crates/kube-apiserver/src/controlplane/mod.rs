//! The built-in API: the resource catalogue and how each resource's store
//! is assembled over storage (upstream's `pkg/controlplane` and its REST
//! storage providers).

pub mod autoscaling_v1;
pub mod builtin;
pub mod controller;
pub mod converted;
pub mod events_v1;
pub mod openapi;
mod quantities;
pub mod reconcilers;
pub mod reviews;
pub mod storage_codec;
pub mod typed;

use std::sync::Arc;

use apiserver::registry::store::{Store, Strategies};
use apiserver::registry::ResourceInfo;
use storage::cacher::{Cacher, CacherConfig};
use storage::{Kv, Storage};

use builtin::Builtin;
use storage_codec::StorageCodec;

/// Builds stores over one KV backend, the way upstream's storage factory
/// does: the etcd3-style store, with the watch cache in front when enabled.
#[derive(Clone)]
pub struct StorageFactory {
    pub kv: Arc<dyn Kv>,
    /// `--etcd-prefix`.
    pub prefix: String,
    /// `--watch-cache`.
    pub watch_cache: bool,
    /// `--storage-media-type`.
    pub codec: StorageCodec,
}

impl StorageFactory {
    pub fn store(&self, builtin: Builtin) -> Arc<Store> {
        self.store_for(builtin.info, builtin.strategies)
    }

    /// The store of a resource described by `info` with `strategies`
    /// (upstream's `RESTOptionsGetter`, handed to the apiextensions server).
    pub fn store_for(&self, info: ResourceInfo, strategies: Strategies) -> Arc<Store> {
        let prefix = self.prefix.trim_end_matches('/');
        let raw: Arc<dyn Storage> = Arc::new(
            storage::store::Store::new(self.kv.clone(), Arc::new(self.codec))
                .with_resource(&info.group, &info.resource),
        );
        let storage: Arc<dyn Storage> = if self.watch_cache {
            let root = format!("{prefix}/{}/", info.storage_root);
            let config = CacherConfig::new(root).with_group_resource(&info.group, &info.resource);
            Arc::new(Cacher::new(raw, config))
        } else {
            raw
        };
        Arc::new(Store::new(info, strategies, storage, prefix))
    }
}
