//! The Kv operations against a real etcd: compare-on-mod-revision writes,
//! reads at old and future revisions, ranges, value size limit.

use bytes::Bytes;
use storage::{prefix_end, Kv, RangeRequest, StorageError, TxnOp, TxnResponse};
use storage_etcd::testing::EtcdServer;
use storage_etcd::EtcdKv;

async fn etcd() -> (EtcdServer, EtcdKv) {
    let server = EtcdServer::start().await.expect("start etcd");
    let kv = server.kv().await.expect("connect");
    (server, kv)
}

fn put(value: &str) -> TxnOp {
    TxnOp::Put(Bytes::copy_from_slice(value.as_bytes()))
}

async fn create(kv: &EtcdKv, key: &str, value: &str) -> i64 {
    match kv.txn(key, 0, put(value)).await.expect("create") {
        TxnResponse::Succeeded { revision, .. } => revision,
        other => panic!("create of {key} failed: {other:?}"),
    }
}

fn get(key: &str) -> RangeRequest {
    RangeRequest {
        key: key.to_string(),
        ..RangeRequest::default()
    }
}

#[tokio::test]
async fn txn_compares_mod_revision() {
    let (_etcd, kv) = etcd().await;
    let created = create(&kv, "/registry/a", "v1").await;

    // Creating again fails and reports the existing key.
    match kv.txn("/registry/a", 0, put("other")).await.unwrap() {
        TxnResponse::Failed {
            current: Some(cur),
            revision,
        } => {
            assert_eq!(cur.value, Bytes::from_static(b"v1"));
            assert_eq!(cur.mod_revision, created);
            assert_eq!(cur.create_revision, created);
            assert_eq!(revision, created);
        }
        other => panic!("expected failure, got {other:?}"),
    }

    // An update at the right revision applies; a stale one does not.
    let updated = match kv.txn("/registry/a", created, put("v2")).await.unwrap() {
        TxnResponse::Succeeded { revision, .. } => revision,
        other => panic!("update failed: {other:?}"),
    };
    assert!(updated > created);
    match kv.txn("/registry/a", created, put("v3")).await.unwrap() {
        TxnResponse::Failed {
            current: Some(cur), ..
        } => {
            assert_eq!(cur.value, Bytes::from_static(b"v2"));
            assert_eq!(cur.mod_revision, updated);
            assert_eq!(cur.create_revision, created);
        }
        other => panic!("expected failure, got {other:?}"),
    }

    // Delete returns the deleted key-value.
    match kv.txn("/registry/a", updated, TxnOp::Delete).await.unwrap() {
        TxnResponse::Succeeded {
            revision,
            prev: Some(prev),
        } => {
            assert_eq!(revision, updated + 1);
            assert_eq!(prev.key, "/registry/a");
            assert_eq!(prev.value, Bytes::from_static(b"v2"));
        }
        other => panic!("delete failed: {other:?}"),
    }
    // An update of a missing key fails with no current value.
    match kv.txn("/registry/a", updated, put("v4")).await.unwrap() {
        TxnResponse::Failed {
            current: None,
            revision,
        } => assert_eq!(revision, updated + 1),
        other => panic!("expected failure, got {other:?}"),
    }
    assert_eq!(kv.current_revision().await.unwrap(), updated + 1);
}

#[tokio::test]
async fn range_reads_old_revisions_prefixes_and_counts() {
    let (_etcd, kv) = etcd().await;
    let r1 = create(&kv, "/registry/pods/a", "a1").await;
    let r2 = create(&kv, "/registry/pods/b", "b1").await;
    create(&kv, "/registry/pods/c", "c1").await;
    create(&kv, "/registry/podsx", "outside").await;
    let latest = match kv.txn("/registry/pods/a", r1, put("a2")).await.unwrap() {
        TxnResponse::Succeeded { revision, .. } => revision,
        other => panic!("update failed: {other:?}"),
    };

    let old = kv
        .range(RangeRequest {
            revision: r2,
            ..get("/registry/pods/a")
        })
        .await
        .unwrap();
    assert_eq!(old.kvs.len(), 1);
    assert_eq!(old.kvs[0].value, Bytes::from_static(b"a1"));
    assert_eq!(old.kvs[0].mod_revision, r1);

    let prefix = "/registry/pods/";
    let page = kv
        .range(RangeRequest {
            range_end: Some(prefix_end(prefix)),
            limit: 2,
            ..get(prefix)
        })
        .await
        .unwrap();
    let keys: Vec<_> = page.kvs.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["/registry/pods/a", "/registry/pods/b"]);
    assert!(page.more);
    assert_eq!(page.count, 3);
    assert_eq!(page.revision, latest);
    assert_eq!(page.kvs[0].value, Bytes::from_static(b"a2"));

    // At r2 only a and b existed.
    let counted = kv
        .range(RangeRequest {
            range_end: Some(prefix_end(prefix)),
            count_only: true,
            revision: r2,
            ..get(prefix)
        })
        .await
        .unwrap();
    assert!(counted.kvs.is_empty());
    assert_eq!(counted.count, 2);

    let missing = kv.range(get("/registry/pods/zz")).await.unwrap();
    assert!(missing.kvs.is_empty());
    assert_eq!(missing.count, 0);
    assert_eq!(missing.revision, latest);
}

#[tokio::test]
async fn range_at_future_revision_is_too_large() {
    let (_etcd, kv) = etcd().await;
    let rev = create(&kv, "/registry/a", "v").await;
    let err = kv
        .range(RangeRequest {
            revision: rev + 10,
            ..get("/registry/a")
        })
        .await
        .unwrap_err();
    match err {
        StorageError::TooLargeResourceVersion { requested, current } => {
            assert_eq!(requested, rev + 10);
            assert_eq!(current, rev);
        }
        other => panic!("expected TooLargeResourceVersion, got {other:?}"),
    }
}

#[tokio::test]
async fn oversized_value_is_too_large() {
    let (_etcd, kv) = etcd().await;
    for size in [2 * 1024 * 1024, 3 * 1024 * 1024] {
        let value = Bytes::from(vec![b'x'; size]);
        match kv.txn("/registry/big", 0, TxnOp::Put(value)).await {
            Err(StorageError::TooLarge { size: s, limit }) => {
                assert_eq!(s, size);
                assert_eq!(limit, storage_etcd::DEFAULT_MAX_REQUEST_BYTES);
            }
            other => panic!("expected TooLarge for {size} bytes, got {other:?}"),
        }
    }
    // Just under the limit is accepted.
    let value = Bytes::from(vec![b'x'; 1024 * 1024]);
    assert!(matches!(
        kv.txn("/registry/big", 0, TxnOp::Put(value)).await,
        Ok(TxnResponse::Succeeded { .. })
    ));
}
