//! Event handlers of an informer (upstream's `ResourceEventHandler` and
//! `ResourceEventHandlerFuncs` in `tools/cache/controller.go`). They run
//! on the informer's task in the order of events, so they should only
//! queue work (a key into a work queue) and return.

use storage::Object;
use tokio::sync::mpsc::UnboundedSender;

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

impl ResourceEventHandlerFuncs {
    /// Sends every change on `tx`, in order, as `upserted(new state)` or
    /// `deleted(last state)`: for a controller that follows several
    /// informers in one loop (upstream's graph builder and its event queue).
    pub fn send_to<C, U, D>(tx: UnboundedSender<C>, upserted: U, deleted: D) -> Self
    where
        C: Send + 'static,
        U: Fn(Object) -> C + Send + Sync + Clone + 'static,
        D: Fn(Object) -> C + Send + Sync + 'static,
    {
        let (added, updated) = (tx.clone(), tx.clone());
        let on_update = upserted.clone();
        // A send fails only once the loop is gone: nothing is listening.
        ResourceEventHandlerFuncs {
            add: Some(Box::new(move |o| drop(added.send(upserted(o.clone()))))),
            update: Some(Box::new(move |_, o| {
                drop(updated.send(on_update(o.clone())))
            })),
            delete: Some(Box::new(move |o| drop(tx.send(deleted(o.clone()))))),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;

    #[test]
    fn send_to_forwards_every_change_in_order() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let name = |o: &Object| o["name"].as_str().unwrap_or_default().to_owned();
        let handler = ResourceEventHandlerFuncs::send_to(
            tx,
            move |o| format!("upserted {}", name(&o)),
            move |o| format!("deleted {}", name(&o)),
        );
        let (a, b): (Object, Object) = (
            Arc::new(json!({"name": "a"}).into()),
            Arc::new(json!({"name": "b"}).into()),
        );
        handler.on_add(&a, true);
        handler.on_update(&a, &b);
        handler.on_delete(&b);
        let got: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(got, ["upserted a", "upserted b", "deleted b"]);
    }
}
