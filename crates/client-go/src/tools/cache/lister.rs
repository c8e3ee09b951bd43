//! Reads of an informer's cache (upstream's generic lister,
//! `tools/cache/listers.go`): by name, by namespace, by index.

use storage::Object;

use super::index::{Indexer, NAMESPACE_INDEX};

/// A read-only view of one informer's cache; cheap to clone.
#[derive(Clone)]
pub struct Lister {
    indexer: Indexer,
}

impl Lister {
    pub fn new(indexer: Indexer) -> Self {
        Lister { indexer }
    }

    /// One object (`namespace` `None` for cluster-scoped ones).
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Object> {
        let key = match namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
        };
        self.indexer.get_by_key(&key)
    }

    /// Every object.
    pub fn list(&self) -> Vec<Object> {
        self.indexer.list()
    }

    /// The objects of one namespace.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Object> {
        self.indexer.by_index(NAMESPACE_INDEX, namespace)
    }

    /// The objects filed under `value` in the index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Vec<Object> {
        self.indexer.by_index(name, value)
    }
}
