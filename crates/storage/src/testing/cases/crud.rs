//! Create, get, count and the size limit.

use serde_json::json;

use crate::error::StorageError;
use crate::interface::{GetOptions, ReadVersion};
use crate::testing::{object, rv, value_of, Harness, MAX_OBJECT_BYTES};

pub async fn create_and_get(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    assert!(rv(&created) > 0);
    assert_eq!(value_of(&created), "1");

    let got = h
        .storage
        .get(&key, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, created, "get returns what create returned");

    let missing = h.key("missing");
    match h.storage.get(&missing, GetOptions::default()).await {
        Err(StorageError::NotFound { key }) => assert_eq!(key, missing),
        other => panic!("expected NotFound, got {other:?}"),
    }
    let opts = GetOptions {
        ignore_not_found: true,
        ..GetOptions::default()
    };
    assert!(h.storage.get(&missing, opts).await.unwrap().is_none());
    assert!(h.storage.current_revision().await.unwrap() >= rv(&created));
    h.storage.health().await.unwrap();
}

pub async fn create_already_exists(h: Harness) {
    let key = h.key("a");
    let first = h.storage.create(&key, object("a", "1")).await.unwrap();
    match h.storage.create(&key, object("a", "2")).await {
        Err(StorageError::AlreadyExists { key: k }) => assert_eq!(k, key),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    let got = h
        .storage
        .get(&key, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, first, "the failed create changed nothing");
}

pub async fn create_strips_resource_version_and_self_link(h: Harness) {
    let key = h.key("a");
    let mut obj = object("a", "1");
    obj["metadata"]["resourceVersion"] = json!("999999");
    obj["metadata"]["selfLink"] = json!("/api/v1/namespaces/default/configmaps/a");
    let created = h.storage.create(&key, obj).await.unwrap();
    assert_ne!(rv(&created), 999_999);
    assert!(created["metadata"].get("selfLink").is_none());
    let got = h
        .storage
        .get(&key, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rv(&got), rv(&created));
    assert!(got["metadata"].get("selfLink").is_none());
}

pub async fn get_resource_version_semantics(h: Harness) {
    let key = h.key("a");
    let v1 = h.storage.create(&key, object("a", "1")).await.unwrap();
    let v2 = h
        .storage
        .guaranteed_update(&key, false, None, &super::set_value("2"))
        .await
        .unwrap();
    assert!(rv(&v2) > rv(&v1));
    let get = |version| GetOptions {
        version,
        ignore_not_found: false,
    };

    // (`Any` may be served from a stale cache, so it is not checked here.)
    for version in [ReadVersion::MostRecent, ReadVersion::NotOlderThan(rv(&v2))] {
        let got = h.storage.get(&key, get(version)).await.unwrap().unwrap();
        assert_eq!(value_of(&got), "2", "{version:?} reads the latest state");
    }
    let old = h
        .storage
        .get(&key, get(ReadVersion::Exact(rv(&v1))))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        value_of(&old),
        "1",
        "Exact reads the state as of that revision"
    );
    assert_eq!(rv(&old), rv(&v1));

    let future = h.storage.current_revision().await.unwrap() + 1000;
    match h
        .storage
        .get(&key, get(ReadVersion::NotOlderThan(future)))
        .await
    {
        Err(StorageError::TooLargeResourceVersion { requested, .. }) => {
            assert_eq!(requested, future)
        }
        other => panic!("expected TooLargeResourceVersion, got {other:?}"),
    }
}

pub async fn object_too_large(h: Harness) {
    let key = h.key("big");
    let huge = "x".repeat(MAX_OBJECT_BYTES + 1);
    match h.storage.create(&key, object("big", &huge)).await {
        Err(StorageError::TooLarge { size, limit }) => {
            assert!(size > limit);
            assert_eq!(limit, MAX_OBJECT_BYTES);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let opts = GetOptions {
        ignore_not_found: true,
        ..GetOptions::default()
    };
    assert!(h.storage.get(&key, opts.clone()).await.unwrap().is_none());

    h.storage
        .create(&key, object("big", "small"))
        .await
        .unwrap();
    let grow = super::set_value(&huge);
    assert!(matches!(
        h.storage.guaranteed_update(&key, false, None, &grow).await,
        Err(StorageError::TooLarge { .. })
    ));
    let got = h.storage.get(&key, opts).await.unwrap().unwrap();
    assert_eq!(value_of(&got), "small");
}

pub async fn count_children(h: Harness) {
    for name in ["a", "b", "c"] {
        h.storage
            .create(&h.key(name), object(name, ""))
            .await
            .unwrap();
    }
    // A sibling whose name extends the prefix is not a child.
    let sibling = format!("{}x/d", h.prefix);
    h.storage.create(&sibling, object("d", "")).await.unwrap();
    assert_eq!(h.storage.count(&h.prefix).await.unwrap(), 3);
    assert_eq!(h.storage.count(&format!("{}/", h.prefix)).await.unwrap(), 3);
    h.storage
        .delete(&h.key("a"), None, &super::allow_delete)
        .await
        .unwrap();
    assert_eq!(h.storage.count(&h.prefix).await.unwrap(), 2);
}

pub async fn get_exact_sees_deleted_object(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    h.storage
        .delete(&key, None, &super::allow_delete)
        .await
        .unwrap();
    let at = GetOptions {
        version: ReadVersion::Exact(rv(&created)),
        ignore_not_found: false,
    };
    let old = h.storage.get(&key, at).await.unwrap().unwrap();
    assert_eq!(old, created);
    assert!(matches!(
        h.storage.get(&key, GetOptions::default()).await,
        Err(StorageError::NotFound { .. })
    ));
}
