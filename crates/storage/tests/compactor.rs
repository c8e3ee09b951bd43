//! The periodic compactor against the in-memory reference KV.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use storage::compactor::{self, Compactor};
use storage::testing::MemoryKv;
use storage::{Kv, RangeRequest, StorageError, TxnOp};

async fn write(kv: &MemoryKv, key: &str) -> i64 {
    let current = kv
        .range(RangeRequest {
            key: key.to_string(),
            ..RangeRequest::default()
        })
        .await
        .unwrap();
    let expected = current.kvs.first().map_or(0, |kv| kv.mod_revision);
    kv.txn(key, expected, TxnOp::Put(Bytes::from_static(b"{}")))
        .await
        .unwrap();
    kv.current_revision().await.unwrap()
}

#[tokio::test]
async fn each_tick_compacts_to_the_previous_ticks_revision() {
    let kv = MemoryKv::new();
    let mut compactor = Compactor::default();
    write(&kv, "/a").await;
    let first = write(&kv, "/a").await;
    assert_eq!(
        compactor.tick(&kv).await.unwrap(),
        None,
        "never compacts at startup"
    );
    assert_eq!(kv.compacted_revision().await.unwrap(), 0);

    let second = write(&kv, "/a").await;
    assert_eq!(compactor.tick(&kv).await.unwrap(), Some(first));
    assert_eq!(kv.compacted_revision().await.unwrap(), first);
    // History since the previous tick is kept; older history is gone.
    let at = |revision| RangeRequest {
        key: "/a".into(),
        revision,
        ..RangeRequest::default()
    };
    assert!(kv.range(at(second)).await.is_ok());
    assert!(matches!(
        kv.range(at(first - 1)).await,
        Err(StorageError::TooOldResourceVersion { .. })
    ));

    // No writes since the last tick: that revision is compacted now.
    assert_eq!(compactor.tick(&kv).await.unwrap(), Some(second));
    assert_eq!(compactor.tick(&kv).await.unwrap(), None);
}

#[tokio::test]
async fn runs_on_an_interval_until_dropped() {
    let kv = Arc::new(MemoryKv::new());
    let disabled = compactor::start(kv.clone(), Duration::ZERO);
    assert!(!disabled.is_running());

    let handle = compactor::start(kv.clone(), Duration::from_millis(20));
    assert!(handle.is_running());
    let written = write(&kv, "/a").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while kv.compacted_revision().await.unwrap() < written {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no compaction happened"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(handle);
    // Give an aborted task the chance to misbehave.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let latest = write(&kv, "/a").await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        kv.compacted_revision().await.unwrap() < latest,
        "stopped on drop"
    );
}
