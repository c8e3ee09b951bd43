use apiserver::registry::store::Strategies;
use apiserver::registry::ResourceInfo;
use serde_json::json;

use super::*;

fn store() -> Arc<Store> {
    Arc::new(Store::in_memory(
        ResourceInfo::configmaps(),
        Strategies::default(),
    ))
}

fn cm(name: &str, uid: &str, owners: &[(&str, bool)]) -> Value {
    let refs: Vec<Value> = owners
        .iter()
        .map(|(uid, block)| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": format!("owner-{uid}"),
                "uid": uid, "blockOwnerDeletion": block})
        })
        .collect();
    json!({"metadata": {"name": name, "namespace": "ns", "uid": uid, "ownerReferences": refs}})
}

#[test]
fn unseen_owners_are_virtual_and_checked() {
    let (s, mut g, mut work) = (store(), Graph::default(), Vec::new());
    g.upsert(&s, &cm("dep", "d1", &[("o1", false)]), &mut work);
    assert_eq!(work, vec![Work::Delete("o1".into())]);
    let owner = g.node("o1").expect("virtual owner");
    assert!(owner.is_virtual());
    assert_eq!(owner.identity.namespace.as_deref(), Some("ns"));
    assert!(owner.dependents.contains("d1"));
    // The owner shows up: a real node that keeps its dependents.
    work.clear();
    g.upsert(&s, &cm("owner-o1", "o1", &[]), &mut work);
    let owner = g.node("o1").expect("owner");
    assert!(!owner.is_virtual());
    assert!(owner.dependents.contains("d1"));
}

#[test]
fn deleting_an_owner_queues_its_dependents() {
    let (s, mut g, mut work) = (store(), Graph::default(), Vec::new());
    let owner = cm("owner-o1", "o1", &[]);
    g.upsert(&s, &owner, &mut work);
    g.upsert(&s, &cm("dep", "d1", &[("o1", false)]), &mut work);
    work.clear();
    g.remove("o1", &mut work);
    assert_eq!(work, vec![Work::Delete("d1".into())]);
    // The dependent still names it; once the dependent goes, so does it.
    assert!(g.node("o1").is_some_and(Node::is_virtual));
    g.remove("d1", &mut work);
    assert!(g.node("o1").is_none());
}

#[test]
fn foreground_owners_queue_dependents_and_are_rechecked() {
    let (s, mut g, mut work) = (store(), Graph::default(), Vec::new());
    g.upsert(&s, &cm("owner-o1", "o1", &[]), &mut work);
    g.upsert(&s, &cm("a", "d1", &[("o1", true)]), &mut work);
    g.upsert(&s, &cm("b", "d2", &[("o1", false)]), &mut work);
    let mut owner = cm("owner-o1", "o1", &[]);
    owner["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    owner["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
    work.clear();
    g.upsert(&s, &owner, &mut work);
    assert!(work.contains(&Work::Delete("d1".into())));
    assert!(work.contains(&Work::Delete("d2".into())));
    assert_eq!(work.last(), Some(&Work::Delete("o1".into())));
    let blocking: Vec<&str> = g
        .blocking_dependents("o1")
        .iter()
        .map(|n| &*n.identity.name)
        .collect();
    assert_eq!(blocking, vec!["a"]);
    // The blocking dependent goes: the owner is checked again.
    work.clear();
    g.remove("d1", &mut work);
    assert_eq!(work, vec![Work::Delete("o1".into())]);
}

#[test]
fn orphaning_owners_are_queued_and_deletions_make_them_virtual() {
    let (s, mut g, mut work) = (store(), Graph::default(), Vec::new());
    let mut owner = cm("owner-o1", "o1", &[]);
    owner["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    owner["metadata"]["finalizers"] = json!(["orphan"]);
    g.upsert(&s, &owner, &mut work);
    assert_eq!(work, vec![Work::Orphan("o1".into())]);
    g.upsert(&s, &cm("dep", "d1", &[("o1", false)]), &mut work);
    // A relist without the owner: the informer reports it deleted.
    work.clear();
    g.remove("o1", &mut work);
    assert!(work.contains(&Work::Delete("d1".into())));
    assert!(g.node("o1").is_some_and(Node::is_virtual));
}

/// Nodes share what they name in common: one copy of a namespace, kind
/// and group version for all nodes, one of each uid for its node's key and
/// the owners' dependent sets.
#[test]
fn nodes_share_names_and_uids() {
    let (s, mut g, mut work) = (store(), Graph::default(), Vec::new());
    g.upsert(&s, &cm("owner-o1", "o1", &[]), &mut work);
    g.upsert(&s, &cm("dep", "d1", &[("o1", true)]), &mut work);
    let (owner, dependent) = (g.node("o1").expect("owner"), g.node("d1").expect("dep"));
    let shared = |a: &Option<Arc<str>>, b: &Option<Arc<str>>| match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    };
    assert!(shared(
        &owner.identity.namespace,
        &dependent.identity.namespace
    ));
    assert!(Arc::ptr_eq(&owner.identity.kind, &dependent.identity.kind));
    assert!(Arc::ptr_eq(
        &owner.identity.api_version,
        &dependent.identity.api_version
    ));
    let named = owner
        .dependents
        .get("d1")
        .expect("the dependent is recorded");
    assert!(Arc::ptr_eq(named, &dependent.identity.uid));
    assert_eq!(&*dependent.identity.uid, "d1");
}

/// A namespace's shared name goes with the last node in it.
#[test]
fn names_no_node_holds_are_forgotten() {
    let (s, mut g, mut work) = (store(), Graph::default(), Vec::new());
    let in_ns = |name: &str, uid: &str, ns: &str| json!({"metadata": {"name": name, "namespace": ns, "uid": uid}});
    g.upsert(&s, &in_ns("a", "u1", "gone-soon"), &mut work);
    g.upsert(&s, &in_ns("b", "u2", "gone-soon"), &mut work);
    g.remove("u1", &mut work);
    assert!(g.names.contains("gone-soon"));
    g.remove("u2", &mut work);
    assert!(!g.names.contains("gone-soon"));
    // No node left: the kind and group version went too.
    assert!(g.names.is_empty());
}
