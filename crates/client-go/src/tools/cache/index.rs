//! The informer's local cache (upstream's `Indexer` over the thread-safe
//! store, `tools/cache/{store,index,thread_safe_store}.go`): objects by
//! `namespace/name` key, with named indexes from index values to keys.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use storage::{Object, StoredObject};

/// The values an object is filed under in one index.
pub type IndexFunc = Arc<dyn Fn(&StoredObject) -> Vec<String> + Send + Sync>;

/// The index every informer keeps: objects by namespace.
pub const NAMESPACE_INDEX: &str = "namespace";

/// An object's cache key (upstream's `MetaNamespaceKeyFunc`):
/// `namespace/name`, or `name` for cluster-scoped objects.
/// Reads only the object's metadata: the watch cache's objects are shared
/// as JSON and stay so (see `storage::object`).
pub fn meta_namespace_key(obj: &StoredObject) -> String {
    let mut read = obj.metadata_strs(&["namespace", "name"]).into_iter();
    let (namespace, name) = (read.next().flatten(), read.next().flatten());
    let name = name.unwrap_or_default();
    match namespace.filter(|ns| !ns.is_empty()) {
        None => name,
        Some(ns) => format!("{ns}/{name}"),
    }
}

fn namespace_of(obj: &StoredObject) -> Vec<String> {
    obj.metadata_str("namespace").into_iter().collect()
}

#[derive(Default)]
struct Inner {
    items: BTreeMap<String, Object>,
    indexers: HashMap<String, IndexFunc>,
    /// Index name → index value → keys.
    indices: HashMap<String, HashMap<String, BTreeSet<String>>>,
}

impl Inner {
    fn file(&mut self, key: &str, obj: &StoredObject) {
        for (name, f) in &self.indexers {
            let index = self.indices.entry(name.clone()).or_default();
            for value in f(obj) {
                index.entry(value).or_default().insert(key.to_owned());
            }
        }
    }

    fn unfile(&mut self, key: &str, obj: &StoredObject) {
        for (name, f) in &self.indexers {
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            for value in f(obj) {
                if let Some(keys) = index.get_mut(&value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        index.remove(&value);
                    }
                }
            }
        }
    }

    fn put(&mut self, obj: Object) -> Option<Object> {
        let key = meta_namespace_key(&obj);
        let old = self.items.insert(key.clone(), obj.clone());
        if let Some(old) = &old {
            self.unfile(&key, old);
        }
        self.file(&key, &obj);
        old
    }

    fn remove(&mut self, key: &str) -> Option<Object> {
        let old = self.items.remove(key)?;
        self.unfile(key, &old);
        Some(old)
    }
}

/// What a [`Indexer::replace`] changed.
#[derive(Default)]
pub(crate) struct Replaced {
    pub added: Vec<Object>,
    /// Old and new state of objects present before and after.
    pub updated: Vec<(Object, Object)>,
    pub deleted: Vec<Object>,
}

/// A shared, indexed cache of objects; clones share the cache.
#[derive(Clone)]
pub struct Indexer {
    inner: Arc<RwLock<Inner>>,
}

impl Default for Indexer {
    fn default() -> Self {
        let indexer = Indexer {
            inner: Arc::default(),
        };
        indexer.add_index(NAMESPACE_INDEX, Arc::new(namespace_of));
        indexer
    }
}

impl Indexer {
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds (or replaces) an index and files every cached object in it.
    pub fn add_index(&self, name: &str, f: IndexFunc) {
        let mut inner = self.write();
        inner.indexers.insert(name.to_owned(), f.clone());
        let mut index: HashMap<String, BTreeSet<String>> = HashMap::new();
        for (key, obj) in &inner.items {
            for value in f(obj) {
                index.entry(value).or_default().insert(key.clone());
            }
        }
        inner.indices.insert(name.to_owned(), index);
    }

    /// Stores `obj`, returning the state it replaced.
    pub fn put(&self, obj: Object) -> Option<Object> {
        self.write().put(obj)
    }

    /// Removes the object at `key`, returning its last state.
    pub fn remove(&self, key: &str) -> Option<Object> {
        self.write().remove(key)
    }

    /// Makes the cache hold exactly `objs`, saying what changed.
    pub(crate) fn replace(&self, objs: Vec<Object>) -> Replaced {
        let mut inner = self.write();
        let mut replaced = Replaced::default();
        let mut gone: BTreeSet<String> = inner.items.keys().cloned().collect();
        for obj in objs {
            gone.remove(&meta_namespace_key(&obj));
            match inner.put(obj.clone()) {
                Some(old) => replaced.updated.push((old, obj)),
                None => replaced.added.push(obj),
            }
        }
        replaced.deleted = gone.iter().filter_map(|k| inner.remove(k)).collect();
        replaced
    }

    pub fn get_by_key(&self, key: &str) -> Option<Object> {
        self.read().items.get(key).cloned()
    }

    /// Every cached object, by key order.
    pub fn list(&self) -> Vec<Object> {
        self.read().items.values().cloned().collect()
    }

    pub fn list_keys(&self) -> Vec<String> {
        self.read().items.keys().cloned().collect()
    }

    /// The objects filed under `value` in index `name` (none for an
    /// unknown index), by key order.
    pub fn by_index(&self, name: &str, value: &str) -> Vec<Object> {
        let inner = self.read();
        let keys = inner.indices.get(name).and_then(|i| i.get(value));
        keys.into_iter()
            .flatten()
            .filter_map(|k| inner.items.get(k).cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Held as JSON, as the watch cache shares its objects.
    fn obj(ns: &str, name: &str, label: &str) -> Object {
        let tree = json!({"metadata": {"namespace": ns, "name": name, "labels": {"app": label}}});
        Arc::new(StoredObject::from(tree).compact())
    }

    #[test]
    fn keys_name_the_namespace_when_there_is_one() {
        assert_eq!(meta_namespace_key(&obj("a", "x", "")), "a/x");
        let cluster_scoped = json!({"metadata": {"name": "n"}}).into();
        assert_eq!(meta_namespace_key(&cluster_scoped), "n");
    }

    #[test]
    fn filing_objects_reads_their_metadata_without_keeping_a_tree() {
        let cache = Indexer::default();
        let held = obj("a", "x", "web");
        cache.put(held.clone());
        assert_eq!(cache.by_index(NAMESPACE_INDEX, "a").len(), 1);
        assert!(cache.remove("a/x").is_some());
        assert!(!held.has_tree());
    }

    #[test]
    fn indexes_follow_puts_removes_and_replaces() {
        let cache = Indexer::default();
        let app = |o: &StoredObject| {
            let labels = o.metadata_values(&["labels"]).pop().flatten();
            let label = labels.as_ref().and_then(|l| l["app"].as_str());
            label.map(str::to_owned).into_iter().collect()
        };
        cache.put(obj("a", "x", "web"));
        cache.add_index("app", Arc::new(app));
        cache.put(obj("b", "y", "web"));
        assert_eq!(cache.by_index("app", "web").len(), 2);
        assert_eq!(cache.by_index(NAMESPACE_INDEX, "a").len(), 1);
        // Relabelled: filed under the new value only.
        cache.put(obj("a", "x", "db"));
        assert_eq!(cache.by_index("app", "web").len(), 1);
        assert_eq!(cache.by_index("app", "db").len(), 1);
        assert!(cache.remove("b/y").is_some());
        assert!(cache.by_index("app", "web").is_empty());
        let replaced = cache.replace(vec![obj("a", "x", "db"), obj("c", "z", "web")]);
        assert_eq!(replaced.added.len(), 1);
        assert_eq!(replaced.updated.len(), 1);
        assert!(replaced.deleted.is_empty());
        let replaced = cache.replace(vec![]);
        assert_eq!(replaced.deleted.len(), 2);
        assert!(cache.list().is_empty() && cache.by_index(NAMESPACE_INDEX, "a").is_empty());
    }
}
