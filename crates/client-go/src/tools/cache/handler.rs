//! Event handlers of an informer (upstream's `ResourceEventHandler` and
//! `ResourceEventHandlerFuncs` in `tools/cache/controller.go`). They run
//! on the informer's task in the order of events, so they should only
//! queue work (a key into a work queue) and return.

use storage::Object;

/// Told of every change to the informer's cache. A relist reports objects
/// still present as updates and vanished ones as deletions; a resync
/// reports every object as an update from itself to itself.
pub trait ResourceEventHandler: Send + Sync {
    /// A new object; `initial` while the first list is delivered.
    fn on_add(&self, _obj: &Object, _initial: bool) {}
    fn on_update(&self, _old: &Object, _new: &Object) {}
    /// The object's last known state.
    fn on_delete(&self, _obj: &Object) {}
}

type AddFn = Box<dyn Fn(&Object) + Send + Sync>;
type UpdateFn = Box<dyn Fn(&Object, &Object) + Send + Sync>;

/// A handler made of closures, each optional.
#[derive(Default)]
pub struct ResourceEventHandlerFuncs {
    pub add: Option<AddFn>,
    pub update: Option<UpdateFn>,
    pub delete: Option<AddFn>,
}

impl ResourceEventHandlerFuncs {
    /// The same closure for every kind of change, given the new (or last)
    /// state: the common "queue its key" handler.
    pub fn on_any(f: impl Fn(&Object) + Send + Sync + Clone + 'static) -> Self {
        let (update, delete) = (f.clone(), f.clone());
        ResourceEventHandlerFuncs {
            add: Some(Box::new(f)),
            update: Some(Box::new(move |_, new| update(new))),
            delete: Some(Box::new(delete)),
        }
    }
}

impl ResourceEventHandler for ResourceEventHandlerFuncs {
    fn on_add(&self, obj: &Object, _initial: bool) {
        if let Some(f) = &self.add {
            f(obj);
        }
    }

    fn on_update(&self, old: &Object, new: &Object) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }

    fn on_delete(&self, obj: &Object) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}
