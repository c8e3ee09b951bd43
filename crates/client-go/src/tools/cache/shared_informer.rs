//! The shared informer (upstream's `tools/cache/shared_informer.go`): runs
//! a [`Reflector`] into an [`Indexer`], tells every
//! [`ResourceEventHandler`] of each change, resyncs on a period and says
//! when the first list is in. Handlers are removed by the registration
//! adding them returned (upstream's `RemoveEventHandler`), or when a token
//! is cancelled, for controllers that run only while their server leads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use storage::Object;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::handler::ResourceEventHandler;
use super::index::{meta_namespace_key, IndexFunc, Indexer};
use super::lister::Lister;
use super::listwatch::ListerWatcher;
use super::reflector::{Reflector, Sink};

type Handlers = Vec<(
    ResourceEventHandlerRegistration,
    Arc<dyn ResourceEventHandler>,
)>;

/// One added handler (upstream's `ResourceEventHandlerRegistration`): the
/// handle [`SharedInformer::remove_event_handler`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceEventHandlerRegistration(u64);

pub struct SharedInformer {
    lw: Arc<dyn ListerWatcher>,
    indexer: Indexer,
    /// Held for reading while a change is applied and told, so a handler
    /// added meanwhile sees each object exactly once.
    handlers: RwLock<Handlers>,
    /// The last registration handed out.
    registered: AtomicU64,
    /// Every object is told again as an update this often.
    resync: Option<Duration>,
    synced: watch::Sender<bool>,
}

impl SharedInformer {
    pub fn new(lw: Arc<dyn ListerWatcher>, resync: Option<Duration>) -> Arc<Self> {
        Arc::new(SharedInformer {
            lw,
            indexer: Indexer::default(),
            handlers: RwLock::default(),
            registered: AtomicU64::new(0),
            resync,
            synced: watch::Sender::new(false),
        })
    }

    fn handlers(&self) -> RwLockReadGuard<'_, Handlers> {
        self.handlers.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Files the cache under one more index.
    pub fn add_index(&self, name: &str, f: IndexFunc) {
        self.indexer.add_index(name, f);
    }

    /// Adds a handler; one added after the first list is told of every
    /// cached object as an add.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler + 'static,
    ) -> ResourceEventHandlerRegistration {
        let mut handlers = self.handlers.write().unwrap_or_else(|e| e.into_inner());
        if self.has_synced() {
            for obj in self.indexer.list() {
                handler.on_add(&obj, false);
            }
        }
        let id = self.registered.fetch_add(1, Ordering::Relaxed) + 1;
        let registration = ResourceEventHandlerRegistration(id);
        handlers.push((registration, Arc::new(handler)));
        registration
    }

    /// Removes a handler: it is told nothing after this returns. Removing
    /// one already gone changes nothing.
    pub fn remove_event_handler(&self, registration: ResourceEventHandlerRegistration) {
        let mut handlers = self.handlers.write().unwrap_or_else(|e| e.into_inner());
        handlers.retain(|(r, _)| *r != registration);
    }

    /// How many handlers are registered.
    #[cfg(test)]
    pub(crate) fn handler_count(&self) -> usize {
        self.handlers().len()
    }

    /// Adds a handler that lives until `stop`: from its cancellation on it
    /// is told nothing, and it is removed. A controller that runs in
    /// terms (while its server leads) so leaves no handler of an ended term
    /// behind on an informer that outlives it.
    pub fn add_event_handler_until(
        self: &Arc<Self>,
        handler: impl ResourceEventHandler + 'static,
        stop: &CancellationToken,
    ) {
        let registration = self.add_event_handler(Until {
            stop: stop.clone(),
            handler,
        });
        let (informer, stop) = (Arc::downgrade(self), stop.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            if let Some(informer) = informer.upgrade() {
                informer.remove_event_handler(registration);
            }
        });
    }

    pub fn lister(&self) -> Lister {
        Lister::new(self.indexer.clone())
    }

    /// Whether the first list has been delivered.
    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits for the first list.
    pub async fn wait_for_sync(&self) {
        let mut synced = self.synced.subscribe();
        // The sender lives in `self`, so the wait ends only when synced.
        let _ = synced.wait_for(|s| *s).await;
    }

    /// Runs the informer on its own task until `stop`.
    pub fn start(self: &Arc<Self>, stop: &CancellationToken) {
        tokio::spawn(self.clone().run(stop.clone()));
    }

    /// Lists, watches and resyncs until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let reflector = Reflector::new(self.lw.clone());
        let resync = async {
            let Some(period) = self.resync else {
                return std::future::pending().await;
            };
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            loop {
                ticks.tick().await;
                self.resync_all();
            }
        };
        tokio::select! {
            _ = reflector.run(&*self, &stop) => {}
            _ = resync => {}
        }
    }

    fn resync_all(&self) {
        let handlers = self.handlers();
        for obj in self.indexer.list() {
            for (_, h) in handlers.iter() {
                h.on_update(&obj, &obj);
            }
        }
    }
}

impl Sink for SharedInformer {
    fn replace(&self, objs: Vec<Object>) {
        let handlers = self.handlers();
        let replaced = self.indexer.replace(objs);
        let initial = !self.has_synced();
        for (_, h) in handlers.iter() {
            for obj in &replaced.added {
                h.on_add(obj, initial);
            }
            for (old, new) in &replaced.updated {
                h.on_update(old, new);
            }
            for obj in &replaced.deleted {
                h.on_delete(obj);
            }
        }
        self.synced.send_replace(true);
    }

    fn upsert(&self, obj: Object) {
        let handlers = self.handlers();
        let old = self.indexer.put(obj.clone());
        for (_, h) in handlers.iter() {
            match &old {
                Some(old) => h.on_update(old, &obj),
                None => h.on_add(&obj, false),
            }
        }
    }

    fn delete(&self, obj: Object) {
        let handlers = self.handlers();
        self.indexer.remove(&meta_namespace_key(&obj));
        for (_, h) in handlers.iter() {
            h.on_delete(&obj);
        }
    }
}

/// A handler told nothing once `stop` is cancelled.
struct Until<H> {
    stop: CancellationToken,
    handler: H,
}

impl<H: ResourceEventHandler> ResourceEventHandler for Until<H> {
    fn on_add(&self, obj: &Object, initial: bool) {
        if !self.stop.is_cancelled() {
            self.handler.on_add(obj, initial);
        }
    }

    fn on_update(&self, old: &Object, new: &Object) {
        if !self.stop.is_cancelled() {
            self.handler.on_update(old, new);
        }
    }

    fn on_delete(&self, obj: &Object) {
        if !self.stop.is_cancelled() {
            self.handler.on_delete(obj);
        }
    }
}
