//! How plugins read other resources (upstream's informers and listers, which
//! `k8s.io/apiserver/pkg/admission/initializer` hands to the plugins that
//! want them, `WantsExternalKubeInformerFactory`): with the server's
//! [`SharedInformerFactory`], reads come from the shared informers' caches
//! once they have synced; a name the cache does not hold is looked up in
//! its store (the live lookup upstream's plugins make on a cache miss, for
//! objects created an instant ago). Without informers, or before they
//! sync, the stores are read.

use std::collections::HashMap;
use std::sync::Arc;

use crate::registry::store::Store;
use crate::registry::ResourceInfo;
use apimachinery::status::ApiError;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::Lister;
use serde_json::Value;
use storage::{GetOptions, ListOptions, Object, ReadVersion};

#[derive(Clone, Default)]
pub struct Stores {
    by_resource: HashMap<(String, String), Arc<Store>>,
    informers: Option<Arc<SharedInformerFactory>>,
}

impl Stores {
    pub fn new(stores: impl IntoIterator<Item = Arc<Store>>) -> Self {
        let by_resource = stores
            .into_iter()
            .map(|s| ((s.info.group.clone(), s.info.resource.clone()), s))
            .collect();
        Stores {
            by_resource,
            informers: None,
        }
    }

    /// Reads through `informers`' caches (upstream's
    /// `SetExternalKubeInformerFactory`).
    pub fn with_informers(mut self, informers: Arc<SharedInformerFactory>) -> Self {
        self.informers = Some(informers);
        self
    }

    /// The synced cache of a resource, when reads go through informers.
    fn lister(&self, group: &str, resource: &str) -> Option<Lister> {
        let informer = self.informers.as_ref()?.informer_for(group, resource)?;
        informer.has_synced().then(|| informer.lister())
    }

    pub fn store(&self, group: &str, resource: &str) -> Option<&Arc<Store>> {
        self.by_resource
            .get(&(group.to_owned(), resource.to_owned()))
    }

    /// The resources of a kind in a group (upstream's REST mappings).
    pub fn resources_of_kind<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a ResourceInfo> + 'a {
        self.by_resource
            .values()
            .map(|s| &s.info)
            .filter(move |i| i.group == group && i.kind == kind)
    }

    /// One object, or None when it (or its resource) does not exist.
    pub async fn get(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>, ApiError> {
        let Some(store) = self.store(group, resource) else {
            return Ok(None);
        };
        let cached = self.lister(group, resource);
        if let Some(obj) = cached.and_then(|l| l.get(namespace, name)) {
            return Ok(Some(obj));
        }
        match store.get(namespace, name, GetOptions::default()).await {
            Ok(obj) => Ok(Some(obj)),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every object of a resource (in one namespace when given), from its
    /// informer's cache, or else the watch cache, as upstream's plugins
    /// read their listers: a consistent list would wait for the cache to
    /// catch up with writes of other resources on every admitted request.
    pub async fn list(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Object>, ApiError> {
        let Some(store) = self.store(group, resource) else {
            return Ok(Vec::new());
        };
        if let Some(lister) = self.lister(group, resource) {
            return Ok(match namespace {
                Some(ns) => lister.list_namespace(ns),
                None => lister.list(),
            });
        }
        let opts = ListOptions {
            version: ReadVersion::Any,
            ..ListOptions::default()
        };
        Ok(store.list(namespace, opts).await?.items)
    }
}

/// A string at a JSON pointer.
pub fn text<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::store::{Strategies, WriteOptions};
    use async_trait::async_trait;
    use client_go::tools::cache::ListerWatcher;
    use client_go::CancellationToken;
    use serde_json::json;
    use storage::{ListResult, WatchStream};

    /// An informer source that lists one ConfigMap the store never holds,
    /// so reads from the cache and reads from the store can be told apart.
    struct CachedOnly;

    #[async_trait]
    impl ListerWatcher for CachedOnly {
        async fn list(&self) -> Result<ListResult, ApiError> {
            let cm = json!({"metadata": {"namespace": "ns", "name": "cached",
                "resourceVersion": "1"}});
            Ok(ListResult {
                items: vec![Arc::new(cm.into())],
                resource_version: 1,
                ..Default::default()
            })
        }

        async fn watch(&self, _: i64) -> Result<WatchStream, ApiError> {
            Ok(Box::pin(futures::stream::pending()))
        }
    }

    fn configmaps() -> Arc<Store> {
        Arc::new(Store::in_memory(
            ResourceInfo::configmaps(),
            Strategies::default(),
        ))
    }

    #[tokio::test]
    async fn synced_caches_are_read_and_misses_looked_up_live() {
        let store = configmaps();
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": "ns", "name": "live"}});
        store.create(live, &WriteOptions::default()).await.unwrap();
        let informers = SharedInformerFactory::new(None);
        informers.add_source("", "configmaps", Arc::new(CachedOnly));
        let stores = Stores::new([store]).with_informers(informers.clone());
        let names = |objs: Vec<Object>| -> Vec<String> {
            objs.iter()
                .map(|o| o["metadata"]["name"].to_string())
                .collect()
        };
        // Before the cache syncs, the store answers.
        let listed = stores.list("", "configmaps", Some("ns")).await.unwrap();
        assert_eq!(names(listed), ["\"live\""]);
        let stop = CancellationToken::new();
        informers.start(&stop);
        informers.wait_for_cache_sync().await;
        let listed = stores.list("", "configmaps", Some("ns")).await.unwrap();
        assert_eq!(names(listed), ["\"cached\""]);
        let get = |name: &'static str| stores.get("", "configmaps", Some("ns"), name);
        assert!(get("cached").await.unwrap().is_some());
        assert!(get("live").await.unwrap().is_some(), "a miss is looked up");
        assert!(get("absent").await.unwrap().is_none());
        stop.cancel();
    }
}
