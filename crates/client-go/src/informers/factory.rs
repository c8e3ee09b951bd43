//! The shared informer factory (upstream's `informers/factory.go`,
//! `SharedInformerFactory` with its `ForResource`, `Start` and
//! `WaitForCacheSync`), over the [`ListerWatcher`]s it is given for each
//! group and resource.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::tools::cache::{ListerWatcher, SharedInformer};

/// A resource by API group ("" for the core group) and plural name.
pub type GroupResource = (String, String);

#[derive(Default)]
struct Inner {
    sources: HashMap<GroupResource, Arc<dyn ListerWatcher>>,
    informers: HashMap<GroupResource, Arc<SharedInformer>>,
    /// Set by [`SharedInformerFactory::start`].
    stop: Option<CancellationToken>,
}

/// One informer per resource, made on first request and shared after.
pub struct SharedInformerFactory {
    resync: Option<Duration>,
    inner: Mutex<Inner>,
}

impl SharedInformerFactory {
    /// A factory whose informers resync every `resync` (None: never).
    pub fn new(resync: Option<Duration>) -> Arc<Self> {
        Arc::new(SharedInformerFactory {
            resync,
            inner: Mutex::default(),
        })
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `group`/`resource` available, read through `source`.
    pub fn add_source(&self, group: &str, resource: &str, source: Arc<dyn ListerWatcher>) {
        let key = (group.to_owned(), resource.to_owned());
        self.inner().sources.insert(key, source);
    }

    /// Whether `group`/`resource` can be had.
    pub fn has_source(&self, group: &str, resource: &str) -> bool {
        let key = (group.to_owned(), resource.to_owned());
        self.inner().sources.contains_key(&key)
    }

    /// The informer of `group`/`resource` (upstream's `ForResource`); None
    /// when no source serves it. One asked for after [`Self::start`] runs
    /// at once.
    pub fn informer_for(&self, group: &str, resource: &str) -> Option<Arc<SharedInformer>> {
        let key = (group.to_owned(), resource.to_owned());
        let mut inner = self.inner();
        if let Some(informer) = inner.informers.get(&key) {
            return Some(informer.clone());
        }
        let informer = SharedInformer::new(inner.sources.get(&key)?.clone(), self.resync);
        if let Some(stop) = &inner.stop {
            informer.start(stop);
        }
        inner.informers.insert(key, informer.clone());
        Some(informer)
    }

    /// Runs every informer asked for, and those asked for later, until
    /// `stop`; later calls change nothing.
    pub fn start(&self, stop: &CancellationToken) {
        let mut inner = self.inner();
        if inner.stop.is_some() {
            return;
        }
        for informer in inner.informers.values() {
            informer.start(stop);
        }
        inner.stop = Some(stop.clone());
    }

    /// Waits until every informer asked for so far has its first list.
    pub async fn wait_for_cache_sync(&self) {
        let informers: Vec<_> = self.inner().informers.values().cloned().collect();
        for informer in informers {
            informer.wait_for_sync().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::cache::testing::Fake;
    use serde_json::json;

    #[tokio::test]
    async fn one_informer_per_resource_started_with_the_factory() {
        let source = Arc::new(Fake::default());
        source.put("ns", "a", json!({}));
        let factory = SharedInformerFactory::new(None);
        factory.add_source("", "configmaps", source.clone());
        assert!(factory.informer_for("", "secrets").is_none());
        let first = factory.informer_for("", "configmaps").unwrap();
        let again = factory.informer_for("", "configmaps").unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert!(!first.has_synced());
        let stop = CancellationToken::new();
        factory.start(&stop);
        factory.wait_for_cache_sync().await;
        assert_eq!(first.lister().list().len(), 1);
        stop.cancel();
    }
}
