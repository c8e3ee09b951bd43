//! Watches and compaction against a real etcd: history replay with previous
//! values, progress notifications, compacted start revisions, and the
//! compaction scheme shared between API servers.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use storage::{
    Kv, KvEvent, KvEventKind, KvWatchItem, KvWatchStream, RangeRequest, StorageError, TxnOp,
    TxnResponse,
};
use storage_etcd::testing::{EtcdServer, EtcdServerOptions};
use storage_etcd::{EtcdKv, COMPACT_REV_KEY};

const WAIT: Duration = Duration::from_secs(10);

async fn etcd() -> (EtcdServer, EtcdKv) {
    let server = EtcdServer::start().await.expect("start etcd");
    let kv = server.kv().await.expect("connect");
    (server, kv)
}

/// Writes `value` to `key` unconditionally-ish (reads the current mod
/// revision first) and returns the revision of the write.
async fn write(kv: &EtcdKv, key: &str, value: &str) -> i64 {
    let current = kv
        .range(RangeRequest {
            key: key.to_string(),
            ..RangeRequest::default()
        })
        .await
        .unwrap();
    let expected = current.kvs.first().map_or(0, |kv| kv.mod_revision);
    let op = TxnOp::Put(Bytes::copy_from_slice(value.as_bytes()));
    match kv.txn(key, expected, op).await.unwrap() {
        TxnResponse::Succeeded { revision, .. } => revision,
        other => panic!("write of {key} failed: {other:?}"),
    }
}

async fn delete(kv: &EtcdKv, key: &str, expected: i64) -> i64 {
    match kv.txn(key, expected, TxnOp::Delete).await.unwrap() {
        TxnResponse::Succeeded { revision, .. } => revision,
        other => panic!("delete of {key} failed: {other:?}"),
    }
}

/// The next event, skipping progress notifications.
async fn next_event(stream: &mut KvWatchStream) -> KvEvent {
    loop {
        let item = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("no watch item in time")
            .expect("watch stream ended")
            .expect("watch error");
        if let KvWatchItem::Event(event) = item {
            return event;
        }
    }
}

async fn next_error(stream: &mut KvWatchStream) -> StorageError {
    loop {
        match tokio::time::timeout(WAIT, stream.next()).await {
            Ok(Some(Err(e))) => return e,
            Ok(Some(Ok(KvWatchItem::Progress(_)))) => continue,
            other => panic!("expected a watch error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn watch_replays_history_with_previous_values() {
    let (_etcd, kv) = etcd().await;
    let created = write(&kv, "/registry/pods/a", "v1").await;
    let updated = write(&kv, "/registry/pods/a", "v2").await;
    write(&kv, "/registry/other/x", "ignored").await;
    let deleted = delete(&kv, "/registry/pods/a", updated).await;

    let mut stream = kv.watch("/registry/pods/", true, created).await.unwrap();
    let ev = next_event(&mut stream).await;
    assert_eq!(ev.kind, KvEventKind::Put);
    assert_eq!(
        (ev.kv.key.as_str(), ev.kv.mod_revision),
        ("/registry/pods/a", created)
    );
    assert!(ev.prev.is_none());

    let ev = next_event(&mut stream).await;
    assert_eq!(ev.kind, KvEventKind::Put);
    assert_eq!(ev.kv.value, Bytes::from_static(b"v2"));
    assert_eq!(ev.kv.create_revision, created);
    assert_eq!(
        ev.prev.as_ref().map(|p| p.value.clone()),
        Some(Bytes::from_static(b"v1"))
    );

    let ev = next_event(&mut stream).await;
    assert_eq!(ev.kind, KvEventKind::Delete);
    assert_eq!(ev.kv.mod_revision, deleted);
    assert!(ev.kv.value.is_empty());
    let prev = ev.prev.expect("delete carries the previous value");
    assert_eq!(
        (prev.value, prev.mod_revision),
        (Bytes::from_static(b"v2"), updated)
    );

    // Live events follow the replay.
    let again = write(&kv, "/registry/pods/b", "b").await;
    let ev = next_event(&mut stream).await;
    assert_eq!(
        (ev.kv.key.as_str(), ev.kv.mod_revision),
        ("/registry/pods/b", again)
    );
}

#[tokio::test]
async fn watch_from_zero_sees_writes_after_it_returns() {
    let (_etcd, kv) = etcd().await;
    write(&kv, "/registry/a", "before").await;
    let mut stream = kv.watch("/registry/a", false, 0).await.unwrap();
    let rev = write(&kv, "/registry/a", "after").await;
    write(&kv, "/registry/ab", "not this key").await;
    let rev2 = write(&kv, "/registry/a", "again").await;
    let ev = next_event(&mut stream).await;
    assert_eq!(
        (ev.kv.mod_revision, ev.kv.value),
        (rev, Bytes::from_static(b"after"))
    );
    let ev = next_event(&mut stream).await;
    assert_eq!(ev.kv.mod_revision, rev2);
}

#[tokio::test]
async fn watch_reports_progress() {
    let server = EtcdServer::start_with(EtcdServerOptions {
        progress_notify_interval: Some(Duration::from_millis(100)),
        ..EtcdServerOptions::default()
    })
    .await
    .unwrap();
    let kv = server.kv().await.unwrap();
    let rev = write(&kv, "/registry/a", "v").await;
    let mut stream = kv.watch("/registry/b", false, 0).await.unwrap();
    let item = tokio::time::timeout(WAIT, stream.next()).await.unwrap();
    match item {
        Some(Ok(KvWatchItem::Progress(progress))) => assert!(progress >= rev),
        other => panic!("expected a progress notification, got {other:?}"),
    }
}

#[tokio::test]
async fn compaction_makes_old_revisions_too_old() {
    let (_etcd, kv) = etcd().await;
    let r1 = write(&kv, "/registry/a", "v1").await;
    let r2 = write(&kv, "/registry/a", "v2").await;
    write(&kv, "/registry/a", "v3").await;
    assert_eq!(kv.compacted_revision().await.unwrap(), 0);

    kv.compact(r2).await.unwrap();
    assert_eq!(kv.compacted_revision().await.unwrap(), r2);

    let err = kv
        .range(RangeRequest {
            key: "/registry/a".to_string(),
            revision: r1,
            ..RangeRequest::default()
        })
        .await
        .unwrap_err();
    match err {
        StorageError::TooOldResourceVersion {
            requested,
            compacted,
        } => {
            assert_eq!((requested, compacted), (r1, r2));
        }
        other => panic!("expected TooOldResourceVersion, got {other:?}"),
    }
    // The compacted revision itself is still readable.
    let at = kv
        .range(RangeRequest {
            key: "/registry/a".to_string(),
            revision: r2,
            ..RangeRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(at.kvs[0].value, Bytes::from_static(b"v2"));

    let mut stream = kv.watch("/registry/a", false, r1).await.unwrap();
    match next_error(&mut stream).await {
        StorageError::TooOldResourceVersion {
            requested,
            compacted,
        } => {
            assert_eq!((requested, compacted), (r1, r2));
        }
        other => panic!("expected TooOldResourceVersion, got {other:?}"),
    }
    assert!(
        tokio::time::timeout(WAIT, stream.next())
            .await
            .unwrap()
            .is_none(),
        "the stream ends after the error"
    );
}

#[tokio::test]
async fn servers_sharing_etcd_compact_once_per_round() {
    let (etcd, first) = etcd().await;
    let second = etcd.kv().await.unwrap();
    let r1 = write(&first, "/registry/a", "v1").await;
    let r2 = write(&first, "/registry/a", "v2").await;

    // The first server wins the round and compacts.
    first.compact(r1).await.unwrap();
    // The second one, still at compact time 0, loses the CAS: it adopts the
    // round without compacting r2.
    second.compact(r2).await.unwrap();
    assert_eq!(second.compacted_revision().await.unwrap(), r1);
    let at_r1 = first
        .range(RangeRequest {
            key: "/registry/a".to_string(),
            revision: r1,
            ..RangeRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(at_r1.kvs[0].value, Bytes::from_static(b"v1"));

    // Next round: the second server is in step now and compacts.
    second.compact(r2).await.unwrap();
    assert_eq!(first.compacted_revision().await.unwrap(), r2);
    // The compaction key counts the rounds, as upstream's does.
    let key = first
        .range(RangeRequest {
            key: COMPACT_REV_KEY.to_string(),
            ..RangeRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(key.kvs[0].value, Bytes::from(r2.to_string()));
    // The first server is now behind: its next round is a lost CAS.
    let r3 = write(&first, "/registry/a", "v3").await;
    first.compact(r3).await.unwrap();
    assert_eq!(first.compacted_revision().await.unwrap(), r2);
}
