//! guaranteed_update and delete: retries under contention, preconditions,
//! no-op detection and deletion validation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::error::{Result, StorageError};
use crate::interface::{GetOptions, Object, Preconditions, Storage};
use crate::testing::{object, rv, value_of, Harness};

use super::{allow_delete, set_value};

async fn get(storage: &dyn Storage, key: &str) -> Option<Object> {
    let opts = GetOptions {
        ignore_not_found: true,
        ..GetOptions::default()
    };
    storage.get(key, opts).await.unwrap()
}

#[derive(Debug, thiserror::Error)]
#[error("refused by the test")]
struct Refused;

pub async fn guaranteed_update_concurrent_writers(h: Harness) {
    const WRITERS: usize = 8;
    const INCREMENTS: usize = 5;
    let key = h.key("counter");
    h.storage
        .create(&key, object("counter", "0"))
        .await
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..WRITERS {
        let (storage, key, calls) = (h.storage.clone(), key.clone(), calls.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..INCREMENTS {
                let calls = calls.clone();
                let increment =
                    move |current: Option<Object>| -> BoxFuture<'static, Result<Value>> {
                        calls.fetch_add(1, Ordering::SeqCst);
                        Box::pin(async move {
                            // Yield so writers interleave and conflicts really happen.
                            tokio::task::yield_now().await;
                            let mut obj = current
                                .ok_or(StorageError::internal("no object"))?
                                .to_value();
                            let n: usize =
                                value_of(&obj).parse().map_err(StorageError::internal)?;
                            obj["data"]["value"] = Value::String((n + 1).to_string());
                            Ok(obj)
                        })
                    };
                storage
                    .guaranteed_update(&key, false, None, &increment)
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let last = get(h.storage.as_ref(), &key).await.unwrap();
    assert_eq!(
        value_of(&last),
        (WRITERS * INCREMENTS).to_string(),
        "every increment counted once"
    );
    assert!(calls.load(Ordering::SeqCst) >= WRITERS * INCREMENTS);
}

pub async fn guaranteed_update_preconditions(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    let wrong_uid = Preconditions {
        uid: Some("other".into()),
        resource_version: None,
    };
    match h
        .storage
        .guaranteed_update(&key, false, Some(&wrong_uid), &set_value("2"))
        .await
    {
        Err(StorageError::InvalidPrecondition { message, .. }) => assert_eq!(
            message,
            "Precondition failed: UID in precondition: other, UID in object meta: uid-a"
        ),
        other => panic!("expected InvalidPrecondition, got {other:?}"),
    }
    let stale = Preconditions {
        uid: None,
        resource_version: Some((rv(&created) - 1).to_string()),
    };
    assert!(matches!(
        h.storage
            .guaranteed_update(&key, false, Some(&stale), &set_value("2"))
            .await,
        Err(StorageError::Conflict { .. })
    ));
    assert_eq!(get(h.storage.as_ref(), &key).await.unwrap(), created);

    let good = Preconditions {
        uid: Some("uid-a".into()),
        resource_version: Some(rv(&created).to_string()),
    };
    let updated = h
        .storage
        .guaranteed_update(&key, false, Some(&good), &set_value("2"))
        .await
        .unwrap();
    assert_eq!(value_of(&updated), "2");
    assert!(rv(&updated) > rv(&created));
}

pub async fn guaranteed_update_noop_keeps_revision(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    let same = h
        .storage
        .guaranteed_update(&key, false, None, &set_value("1"))
        .await
        .unwrap();
    assert_eq!(
        rv(&same),
        rv(&created),
        "an unchanged object is not rewritten"
    );
    assert_eq!(same, created);
    let got = get(h.storage.as_ref(), &key).await.unwrap();
    assert_eq!(rv(&got), rv(&created));
}

pub async fn guaranteed_update_ignore_not_found_creates(h: Harness) {
    let key = h.key("a");
    let saw_none = Arc::new(AtomicUsize::new(0));
    let seen = saw_none.clone();
    let create = move |current: Option<Object>| -> BoxFuture<'static, Result<Value>> {
        if current.is_none() {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        Box::pin(async { Ok(object("a", "created")) })
    };
    let created = h
        .storage
        .guaranteed_update(&key, true, None, &create)
        .await
        .unwrap();
    assert_eq!(saw_none.load(Ordering::SeqCst), 1);
    assert_eq!(value_of(&created), "created");
    assert!(rv(&created) > 0);
    assert_eq!(get(h.storage.as_ref(), &key).await.unwrap(), created);
}

pub async fn guaranteed_update_not_found(h: Harness) {
    let key = h.key("missing");
    match h
        .storage
        .guaranteed_update(&key, false, None, &set_value("x"))
        .await
    {
        Err(StorageError::NotFound { key: k }) => assert_eq!(k, key),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert!(get(h.storage.as_ref(), &key).await.is_none());
}

pub async fn guaranteed_update_callback_error(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    let refuse = |_: Option<Object>| -> BoxFuture<'static, Result<Value>> {
        Box::pin(async { Err(StorageError::callback(Refused)) })
    };
    match h
        .storage
        .guaranteed_update(&key, false, None, &refuse)
        .await
    {
        Err(StorageError::Callback(e)) => assert!(e.downcast_ref::<Refused>().is_some()),
        other => panic!("expected the callback's error, got {other:?}"),
    }
    assert_eq!(get(h.storage.as_ref(), &key).await.unwrap(), created);
}

pub async fn delete_returns_deletion_revision(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    let deleted = h.storage.delete(&key, None, &allow_delete).await.unwrap();
    assert_eq!(value_of(&deleted), "1");
    assert!(
        rv(&deleted) > rv(&created),
        "carries the deletion's revision"
    );
    assert!(h.storage.current_revision().await.unwrap() >= rv(&deleted));
    assert!(get(h.storage.as_ref(), &key).await.is_none());
    match h.storage.delete(&key, None, &allow_delete).await {
        Err(StorageError::NotFound { key: k }) => assert_eq!(k, key),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

pub async fn delete_preconditions(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    let wrong_uid = Preconditions {
        uid: Some("other".into()),
        resource_version: None,
    };
    assert!(matches!(
        h.storage
            .delete(&key, Some(&wrong_uid), &allow_delete)
            .await,
        Err(StorageError::InvalidPrecondition { .. })
    ));
    let stale = Preconditions {
        uid: None,
        resource_version: Some((rv(&created) + 1).to_string()),
    };
    assert!(matches!(
        h.storage.delete(&key, Some(&stale), &allow_delete).await,
        Err(StorageError::Conflict { .. })
    ));
    assert!(get(h.storage.as_ref(), &key).await.is_some());
    let good = Preconditions {
        uid: Some("uid-a".into()),
        resource_version: Some(rv(&created).to_string()),
    };
    h.storage
        .delete(&key, Some(&good), &allow_delete)
        .await
        .unwrap();
    assert!(get(h.storage.as_ref(), &key).await.is_none());
}

pub async fn delete_validation(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    let refuse = |_: Object| -> BoxFuture<'static, Result<()>> {
        Box::pin(async { Err(StorageError::callback(Refused)) })
    };
    match h.storage.delete(&key, None, &refuse).await {
        Err(StorageError::Callback(e)) => assert!(e.downcast_ref::<Refused>().is_some()),
        other => panic!("expected the validator's error, got {other:?}"),
    }
    assert_eq!(get(h.storage.as_ref(), &key).await.unwrap(), created);

    // The validator sees the current object.
    let seen = Arc::new(std::sync::Mutex::new(None));
    let record = seen.clone();
    let inspect = move |obj: Object| -> BoxFuture<'static, Result<()>> {
        *record
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(obj);
        Box::pin(async { Ok(()) })
    };
    h.storage.delete(&key, None, &inspect).await.unwrap();
    let seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    assert_eq!(seen, Some(created));
}

pub async fn guaranteed_update_retries_with_fresh_state(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (storage, record, k) = (h.storage.clone(), seen.clone(), key.clone());
    let append = move |current: Option<Object>| -> BoxFuture<'static, Result<Value>> {
        let (storage, record, key) = (storage.clone(), record.clone(), k.clone());
        Box::pin(async move {
            let current = current.ok_or(StorageError::internal("no object"))?;
            let first = {
                let mut seen = record
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                seen.push(current.clone());
                seen.len() == 1
            };
            if first {
                // Another writer gets in between this read and the write.
                storage
                    .guaranteed_update(&key, false, None, &set_value("other"))
                    .await?;
            }
            let mut obj = current.to_value();
            obj["data"]["value"] = Value::String(format!("{}+mine", value_of(&current)));
            Ok(obj)
        })
    };
    let updated = h
        .storage
        .guaranteed_update(&key, false, None, &append)
        .await
        .unwrap();
    assert_eq!(
        value_of(&updated),
        "other+mine",
        "the retry saw the other write"
    );
    let seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0], created,
        "the update function sees the stored object"
    );
    assert_eq!(value_of(&seen[1]), "other");
    assert!(rv(&seen[1]) > rv(&created) && rv(&updated) > rv(&seen[1]));
}

pub async fn delete_retries_with_fresh_state(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "1")).await.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let (storage, count, k) = (h.storage.clone(), calls.clone(), key.clone());
    let interfere = move |_: Object| -> BoxFuture<'static, Result<()>> {
        let (storage, key) = (storage.clone(), k.clone());
        let first = count.fetch_add(1, Ordering::SeqCst) == 0;
        Box::pin(async move {
            if first {
                storage
                    .guaranteed_update(&key, false, None, &set_value("2"))
                    .await?;
            }
            Ok(())
        })
    };
    let deleted = h.storage.delete(&key, None, &interfere).await.unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "validated again after the conflict"
    );
    assert_eq!(value_of(&deleted), "2", "returns the state it deleted");
    assert!(get(h.storage.as_ref(), &key).await.is_none());

    // A resourceVersion precondition is rechecked against the fresh state.
    let again = h.storage.create(&key, object("a", "1")).await.unwrap();
    assert!(rv(&again) > rv(&created));
    calls.store(0, Ordering::SeqCst);
    let pinned = Preconditions {
        uid: None,
        resource_version: Some(rv(&again).to_string()),
    };
    assert!(matches!(
        h.storage.delete(&key, Some(&pinned), &interfere).await,
        Err(StorageError::Conflict { .. })
    ));
    assert_eq!(value_of(&get(h.storage.as_ref(), &key).await.unwrap()), "2");
}
