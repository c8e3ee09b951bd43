//! The garbage collector's dependency graph (upstream's `GraphBuilder`):
//! every object seen by the watches, keyed by uid, with its owners and
//! dependents. Owners referenced but not (yet) seen are virtual nodes whose
//! existence a worker checks. Applying a change yields the work it causes.
//!
//! The graph holds a node for every object the server stores, so nodes are
//! kept small: boxed (the map's slots stay one pointer wide), with each uid
//! shared by its node's key and its dependents' sets, and group versions,
//! kinds and namespaces shared by every node that names them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use apiserver::registry::deletion::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use apiserver::registry::store::Store;
use serde_json::Value;

/// One `metadata.ownerReferences` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block_owner_deletion: bool,
}

impl OwnerRef {
    fn parse(v: &Value) -> Option<Self> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(OwnerRef {
            api_version: text("apiVersion")?,
            kind: text("kind")?,
            name: text("name")?,
            uid: text("uid")?,
            block_owner_deletion: v.get("blockOwnerDeletion").and_then(Value::as_bool)
                == Some(true),
        })
    }
}

/// The owner references of an object.
pub fn owner_refs(obj: &Value) -> Vec<OwnerRef> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter_map(OwnerRef::parse).collect())
        .unwrap_or_default()
}

pub fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == finalizer))
}

pub fn being_deleted(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Where an object lives: enough to read it again.
#[derive(Clone)]
pub struct Identity {
    pub api_version: Arc<str>,
    pub kind: Arc<str>,
    /// The namespace of the object, or for a virtual node the namespace of
    /// the dependent that named it (used if the owner's kind is namespaced).
    pub namespace: Option<Arc<str>>,
    pub name: Box<str>,
    pub uid: Arc<str>,
    /// The store the object was seen in; `None` for virtual nodes.
    pub store: Option<Arc<Store>>,
}

pub struct Node {
    pub identity: Identity,
    pub owners: Box<[OwnerRef]>,
    /// The uids of the objects naming this one as an owner.
    pub dependents: HashSet<Arc<str>>,
    pub being_deleted: bool,
    /// Being deleted with `foregroundDeletion`: waits for its dependents.
    pub deleting_dependents: bool,
}

impl Node {
    pub fn is_virtual(&self) -> bool {
        self.identity.store.is_none()
    }
}

/// What a change asks the workers to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// Check whether the object (by uid) should be deleted, or finish a
    /// foreground deletion.
    Delete(String),
    /// Orphan the dependents of the owner (by uid).
    Orphan(String),
}

#[derive(Default)]
pub struct Graph {
    nodes: HashMap<Arc<str>, Box<Node>>,
    /// One copy of each group version, kind and namespace named.
    names: HashSet<Arc<str>>,
}

impl Graph {
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid).map(|n| &**n)
    }

    /// The shared copy of `text`.
    fn intern(&mut self, text: &str) -> Arc<str> {
        if let Some(held) = self.names.get(text) {
            return held.clone();
        }
        let held: Arc<str> = Arc::from(text);
        self.names.insert(held.clone());
        held
    }

    /// Forgets the shared copies of a gone node's names that no other node
    /// holds (namespaces come and go).
    fn release(&mut self, identity: Identity) {
        let Identity {
            api_version,
            kind,
            namespace,
            ..
        } = identity;
        for name in [Some(api_version), Some(kind), namespace]
            .into_iter()
            .flatten()
        {
            // Held by `names` and by this node alone.
            if Arc::strong_count(&name) == 2 {
                self.names.remove(&name);
            }
        }
    }

    /// The node's uid as the graph holds it (shared), or a new copy.
    fn uid(&self, uid: &str) -> Arc<str> {
        match self.nodes.get_key_value(uid) {
            Some((held, _)) => held.clone(),
            None => Arc::from(uid),
        }
    }

    fn identity(&mut self, store: &Arc<Store>, obj: &Value) -> Option<Identity> {
        let text = |p: &str| obj.pointer(p).and_then(Value::as_str);
        let (name, uid) = (text("/metadata/name")?, text("/metadata/uid")?);
        let namespace = text("/metadata/namespace").filter(|n| !n.is_empty());
        Some(Identity {
            api_version: self.intern(&store.info.api_version()),
            kind: self.intern(&store.info.kind),
            namespace: namespace.map(|ns| self.intern(ns)),
            name: name.into(),
            uid: self.uid(uid),
            store: Some(store.clone()),
        })
    }

    /// The dependents of `uid` whose reference to it blocks its deletion.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<&Node> {
        let Some(node) = self.nodes.get(uid) else {
            return Vec::new();
        };
        node.dependents
            .iter()
            .filter_map(|d| self.node(d))
            .filter(|d| {
                d.owners
                    .iter()
                    .any(|o| o.uid == uid && o.block_owner_deletion)
            })
            .collect()
    }

    /// An object was added or changed.
    pub fn upsert(&mut self, store: &Arc<Store>, obj: &Value, work: &mut Vec<Work>) {
        let Some(identity) = self.identity(store, obj) else {
            return;
        };
        let uid = identity.uid.clone();
        let owners = owner_refs(obj);
        let deleting = being_deleted(obj);
        let foreground = deleting && has_finalizer(obj, FOREGROUND_FINALIZER);
        let (old_owners, dependents, was_virtual) = match self.nodes.remove(&uid) {
            Some(n) => (n.owners, n.dependents, n.identity.store.is_none()),
            None => (Box::default(), HashSet::new(), false),
        };
        if was_virtual {
            // Dependents named this object by a guessed identity: recheck them.
            work.extend(dependents.iter().map(|d| Work::Delete(d.to_string())));
        }
        let namespace = identity.namespace.clone();
        self.nodes.insert(
            uid.clone(),
            Box::new(Node {
                identity,
                owners: owners.clone().into_boxed_slice(),
                dependents,
                being_deleted: deleting,
                deleting_dependents: foreground,
            }),
        );
        for old in old_owners.iter() {
            let kept = owners.iter().find(|o| o.uid == old.uid);
            if kept.is_none() {
                self.unlink(&uid, &old.uid, work);
            } else if kept.is_some_and(|k| old.block_owner_deletion && !k.block_owner_deletion) {
                self.recheck_if_waiting(&old.uid, work);
            }
        }
        for owner in owners
            .iter()
            .filter(|o| !old_owners.iter().any(|x| x.uid == o.uid))
        {
            self.link(&uid, owner, namespace.as_ref(), work);
        }
        if owners.iter().any(|o| {
            self.nodes
                .get(o.uid.as_str())
                .is_some_and(|n| n.deleting_dependents)
        }) {
            work.push(Work::Delete(uid.to_string()));
        }
        if deleting && has_finalizer(obj, ORPHAN_FINALIZER) {
            work.push(Work::Orphan(uid.to_string()));
        }
        if foreground {
            if let Some(node) = self.nodes.get(&uid) {
                work.extend(node.dependents.iter().map(|d| Work::Delete(d.to_string())));
            }
            work.push(Work::Delete(uid.to_string()));
        }
    }

    /// Records `dependent` under its owner, adding a virtual owner (to be
    /// checked) when the owner has not been seen.
    fn link(
        &mut self,
        dependent: &Arc<str>,
        owner: &OwnerRef,
        namespace: Option<&Arc<str>>,
        work: &mut Vec<Work>,
    ) {
        if let Some(node) = self.nodes.get_mut(owner.uid.as_str()) {
            node.dependents.insert(dependent.clone());
            return;
        }
        work.push(Work::Delete(owner.uid.clone()));
        let uid: Arc<str> = Arc::from(owner.uid.as_str());
        let identity = Identity {
            api_version: self.intern(&owner.api_version),
            kind: self.intern(&owner.kind),
            namespace: namespace.cloned(),
            name: owner.name.as_str().into(),
            uid: uid.clone(),
            store: None,
        };
        let node = Node {
            identity,
            owners: Box::default(),
            dependents: HashSet::from([dependent.clone()]),
            being_deleted: false,
            deleting_dependents: false,
        };
        self.nodes.insert(uid, Box::new(node));
    }

    fn unlink(&mut self, dependent: &str, owner: &str, work: &mut Vec<Work>) {
        let Some(node) = self.nodes.get_mut(owner) else {
            return;
        };
        node.dependents.remove(dependent);
        if node.is_virtual() && node.dependents.is_empty() {
            if let Some(gone) = self.nodes.remove(owner) {
                self.release(gone.identity);
            }
            return;
        }
        self.recheck_if_waiting(owner, work);
    }

    /// An owner waiting for its dependents is checked again when one of
    /// them stops blocking it.
    fn recheck_if_waiting(&self, owner: &str, work: &mut Vec<Work>) {
        if self.nodes.get(owner).is_some_and(|n| n.deleting_dependents) {
            work.push(Work::Delete(owner.to_owned()));
        }
    }

    /// An object is gone (deleted, or found absent by a worker): its
    /// dependents may have lost their last owner.
    pub fn remove(&mut self, uid: &str, work: &mut Vec<Work>) {
        let Some(node) = self.nodes.remove(uid) else {
            return;
        };
        for owner in node.owners.iter() {
            self.unlink(uid, &owner.uid, work);
        }
        if node.dependents.is_empty() {
            self.release(node.identity);
            return;
        }
        work.extend(node.dependents.iter().map(|d| Work::Delete(d.to_string())));
        // The dependents still name it: keep it as a virtual node, which
        // the workers find absent, until they let go of it.
        let mut identity = node.identity;
        identity.store = None;
        let uid = identity.uid.clone();
        self.nodes.insert(
            uid,
            Box::new(Node {
                identity,
                owners: Box::default(),
                dependents: node.dependents,
                being_deleted: false,
                deleting_dependents: false,
            }),
        );
    }

    /// A virtual node found absent by a worker: its dependents are checked.
    pub fn absent(&mut self, uid: &str, work: &mut Vec<Work>) {
        let Some(node) = self.nodes.get(uid) else {
            return;
        };
        work.extend(node.dependents.iter().map(|d| Work::Delete(d.to_string())));
        if node.is_virtual() {
            return;
        }
        self.remove(uid, work);
    }
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
