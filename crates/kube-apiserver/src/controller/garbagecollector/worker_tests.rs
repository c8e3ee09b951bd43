use apiserver::registry::store::Strategies;
use apiserver::registry::ResourceInfo;
use apiserver::server::DiscoveryRegistry;
use serde_json::json;

use super::*;

fn store(
    kv: &Arc<storage::testing::MemoryKv>,
    group: &str,
    kind: &str,
    namespaced: bool,
) -> Arc<Store> {
    let info = ResourceInfo {
        namespaced,
        ..ResourceInfo::testing(group, kind)
    };
    let raw = Arc::new(storage::store::Store::new(
        kv.clone(),
        Arc::new(storage::JsonCodec),
    ));
    Arc::new(Store::new(info, Strategies::default(), raw, "/registry"))
}

struct Fixture {
    configmaps: Arc<Store>,
    roles: Arc<Store>,
    workers: Workers,
}

fn fixture() -> Fixture {
    let kv = Arc::new(storage::testing::MemoryKv::default());
    let configmaps = store(&kv, "", "ConfigMap", true);
    let roles = store(&kv, "rbac.authorization.k8s.io", "ClusterRole", false);
    let (_, crds) = watch::channel(Snapshot::default());
    let mapper = Mapper::new(
        &[configmaps.clone(), roles.clone()],
        crds,
        DynamicGroups::new(DiscoveryRegistry::default()),
    );
    Fixture {
        configmaps,
        roles,
        workers: Workers::new(Arc::default(), mapper),
    }
}

impl Fixture {
    /// Creates an object and shows it to the graph; returns its uid.
    async fn create(&self, store: &Arc<Store>, obj: Value) -> String {
        let created = store
            .create(obj, &WriteOptions::default())
            .await
            .expect("created");
        self.seen(store, &created);
        uid_of(&created).to_owned()
    }

    fn seen(&self, store: &Arc<Store>, obj: &Value) {
        self.workers
            .with_graph(|g, work| g.upsert(store, obj, work));
    }

    async fn get(&self, name: &str) -> Option<Object> {
        live(&self.configmaps, Some("ns"), name)
            .await
            .expect("read")
    }
}

fn cm(name: &str, owners: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns", "ownerReferences": owners}})
}

fn owner_ref(kind: &str, name: &str, uid: &str) -> Value {
    let api_version = if kind == "ConfigMap" {
        "v1"
    } else {
        "rbac.authorization.k8s.io/v1"
    };
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "blockOwnerDeletion": true})
}

#[tokio::test]
async fn dependents_of_absent_owners_go_and_references_to_them_are_dropped() {
    let f = fixture();
    let role = f.create(&f.roles, json!({"metadata": {"name": "r"}})).await;
    let lone = f
        .create(
            &f.configmaps,
            cm("lone", json!([owner_ref("ConfigMap", "gone", "u-gone")])),
        )
        .await;
    let shared_owners = json!([
        owner_ref("ConfigMap", "gone", "u-gone"),
        owner_ref("ClusterRole", "r", &role)
    ]);
    let shared = f.create(&f.configmaps, cm("shared", shared_owners)).await;
    f.workers.attempt_to_delete(&lone).await.expect("checked");
    assert!(f.get("lone").await.is_none());
    f.workers.attempt_to_delete(&shared).await.expect("checked");
    let kept = f.get("shared").await.expect("kept: its role remains");
    let names: Vec<String> = owner_refs(&kept).into_iter().map(|r| r.name).collect();
    assert_eq!(names, vec!["r"]);
}

#[tokio::test]
async fn foreground_owners_wait_for_blocking_dependents() {
    let f = fixture();
    let owner = f.create(&f.configmaps, cm("owner", json!([]))).await;
    let child = f
        .create(
            &f.configmaps,
            cm("child", json!([owner_ref("ConfigMap", "owner", &owner)])),
        )
        .await;
    let opts = DeleteOptions {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    let Ok(DeleteOutcome::Pending(marked)) = f.configmaps.delete(Some("ns"), "owner", &opts).await
    else {
        panic!("kept for its dependents");
    };
    f.seen(&f.configmaps, &marked);
    // The owner waits: the blocking dependent is queued instead.
    f.workers.attempt_to_delete(&owner).await.expect("checked");
    assert!(f.get("owner").await.is_some());
    f.workers.attempt_to_delete(&child).await.expect("checked");
    assert!(f.get("child").await.is_none());
    f.workers.with_graph(|g, work| g.remove(&child, work));
    f.workers.attempt_to_delete(&owner).await.expect("checked");
    assert!(
        f.get("owner").await.is_none(),
        "finalizer removed, owner gone"
    );
}

#[tokio::test]
async fn orphaning_releases_dependents_then_the_owner() {
    let f = fixture();
    let owner = f.create(&f.configmaps, cm("owner", json!([]))).await;
    f.create(
        &f.configmaps,
        cm("child", json!([owner_ref("ConfigMap", "owner", &owner)])),
    )
    .await;
    let opts = DeleteOptions {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..Default::default()
    };
    let Ok(DeleteOutcome::Pending(marked)) = f.configmaps.delete(Some("ns"), "owner", &opts).await
    else {
        panic!("kept until orphaned");
    };
    f.seen(&f.configmaps, &marked);
    f.workers.attempt_to_orphan(&owner).await.expect("orphaned");
    let child = f.get("child").await.expect("kept");
    assert!(owner_refs(&child).is_empty());
    assert!(f.get("owner").await.is_none());
}

#[tokio::test]
async fn cluster_scoped_dependents_of_namespaced_owners_are_left_alone() {
    let f = fixture();
    let owner = f.create(&f.configmaps, cm("owner", json!([]))).await;
    let role = json!({"metadata": {"name": "r", "ownerReferences": [owner_ref("ConfigMap", "owner", &owner)]}});
    let uid = f.create(&f.roles, role).await;
    let result = f.workers.attempt_to_delete(&uid).await;
    assert!(
        matches!(result, Err(GcError::NamespacedOwner(_))),
        "{result:?}"
    );
    assert!(live(&f.roles, None, "r").await.expect("read").is_some());
}
