//! A lister-watcher over an in-memory collection, for the cache's tests:
//! its watches can be closed or failed at will.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use apimachinery::status::ApiError;
use async_trait::async_trait;
use futures::channel::mpsc;
use serde_json::{json, Value};
use storage::{ListResult, Object, StorageError, WatchEvent, WatchStream};

use super::listwatch::ListerWatcher;

#[derive(Default)]
struct State {
    items: BTreeMap<String, Object>,
    revision: i64,
    watchers: Vec<mpsc::UnboundedSender<WatchEvent>>,
    lists: usize,
    /// The revision each watch started from.
    watches: Vec<i64>,
}

#[derive(Default)]
pub struct Fake {
    state: Mutex<State>,
}

impl Fake {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock().unwrap())
    }

    /// Stores a ConfigMap-like object `ns/name` with `data`.
    pub fn put(&self, ns: &str, name: &str, data: Value) {
        self.with(|s| {
            s.revision += 1;
            let obj: Object = Arc::new(
                json!({"metadata": {"namespace": ns, "name": name,
                "resourceVersion": s.revision.to_string()}, "data": data})
                .into(),
            );
            let old = s.items.insert(format!("{ns}/{name}"), obj.clone());
            let event = match old {
                Some(_) => WatchEvent::Modified(obj),
                None => WatchEvent::Added(obj),
            };
            s.watchers
                .retain(|w| w.unbounded_send(event.clone()).is_ok());
        });
    }

    pub fn delete(&self, ns: &str, name: &str) {
        self.with(|s| {
            s.revision += 1;
            if let Some(obj) = s.items.remove(&format!("{ns}/{name}")) {
                let event = WatchEvent::Deleted(obj);
                s.watchers
                    .retain(|w| w.unbounded_send(event.clone()).is_ok());
            }
        });
    }

    /// Deletes without telling the watches (changes the watch missed).
    pub fn delete_quietly(&self, ns: &str, name: &str) {
        self.with(|s| s.items.remove(&format!("{ns}/{name}")));
    }

    /// Ends every watch: with 410 Expired when `expire`, else closed.
    pub fn end_watches(&self, expire: bool) {
        self.with(|s| {
            for w in s.watchers.drain(..) {
                if expire {
                    let e = StorageError::TooOldResourceVersion {
                        requested: 1,
                        compacted: s.revision,
                    };
                    let _ = w.unbounded_send(WatchEvent::Error(e));
                }
            }
        });
    }

    pub fn lists(&self) -> usize {
        self.with(|s| s.lists)
    }

    pub fn watches(&self) -> Vec<i64> {
        self.with(|s| s.watches.clone())
    }
}

#[async_trait]
impl ListerWatcher for Fake {
    async fn list(&self) -> Result<ListResult, ApiError> {
        Ok(self.with(|s| {
            s.lists += 1;
            ListResult {
                items: s.items.values().cloned().collect(),
                resource_version: s.revision,
                ..Default::default()
            }
        }))
    }

    async fn watch(&self, resource_version: i64) -> Result<WatchStream, ApiError> {
        let (tx, rx) = mpsc::unbounded();
        self.with(|s| {
            s.watches.push(resource_version);
            s.watchers.push(tx);
        });
        Ok(Box::pin(rx))
    }
}
