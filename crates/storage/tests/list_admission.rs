//! Big lists wait for one of the per-core read admissions; small ones do
//! not, so the many small lists of a start (every watch cache's first list
//! of an empty resource) run at once instead of two at a time.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use storage::store::Store;
use storage::testing::MemoryKv;
use storage::{offload, JsonCodec, ListOptions, Storage};
use tokio::time::timeout;

async fn store_with(prefix: &str, objects: usize) -> Store {
    let store = Store::new(Arc::new(MemoryKv::new()), Arc::new(JsonCodec));
    for i in 0..objects {
        let name = format!("o{i:04}");
        let obj = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": name}});
        store
            .create(&format!("{prefix}/{name}"), obj)
            .await
            .unwrap();
    }
    store
}

fn everything() -> ListOptions {
    ListOptions {
        recursive: true,
        ..ListOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_lists_go_on_while_every_read_admission_is_held() {
    let store = store_with("/registry/configmaps", 3).await;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut held = Vec::new();
    for _ in 0..cores {
        held.push(offload::admit_read().await);
    }
    let list = store.get_list("/registry/configmaps", everything());
    let list = timeout(Duration::from_secs(5), list).await;
    let list = list.expect("a small list waited for an admission").unwrap();
    assert_eq!(list.items.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_lists_wait_for_a_read_admission() {
    let objects = offload::INLINE_OBJECTS + 50;
    let store = Arc::new(store_with("/registry/configmaps", objects).await);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut held = Vec::new();
    for _ in 0..cores {
        held.push(offload::admit_read().await);
    }
    let listing = {
        let store = store.clone();
        tokio::spawn(async move { store.get_list("/registry/configmaps", everything()).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !listing.is_finished(),
        "a big list ran without an admission"
    );
    held.clear();
    let list = timeout(Duration::from_secs(5), listing).await;
    let list = list.expect("the big list never ran").unwrap().unwrap();
    assert_eq!(list.items.len(), objects);
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|o| o.metadata_str("name"))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted, "every object once, in key order");
}
