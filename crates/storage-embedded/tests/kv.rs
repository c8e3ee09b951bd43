//! KV-level tests of the embedded store: MVCC reads at old revisions against
//! a model, compare-and-swap semantics, group commit under concurrency,
//! watch replay and live delivery (including a watcher that falls behind),
//! compaction, and reopening.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use rand::{Rng, SeedableRng};
use storage::{
    prefix_end, KeyValue, Kv, KvEvent, KvEventKind, KvWatchItem, KvWatchStream, RangeRequest,
    StorageError, TxnOp, TxnResponse,
};
use storage_embedded::EmbeddedKv;

fn open() -> (tempfile::TempDir, EmbeddedKv) {
    let dir = tempfile::tempdir().unwrap();
    let kv = EmbeddedKv::open(dir.path()).unwrap();
    (dir, kv)
}

async fn put(kv: &EmbeddedKv, key: &str, expected: i64, value: &str) -> TxnResponse {
    kv.txn(
        key,
        expected,
        TxnOp::Put(Bytes::copy_from_slice(value.as_bytes())),
    )
    .await
    .unwrap()
}

/// Puts unconditionally (reads the current mod revision first); returns the revision.
async fn set(kv: &EmbeddedKv, key: &str, value: &str) -> i64 {
    let current = get(kv, key, 0).await.map_or(0, |kv| kv.mod_revision);
    match put(kv, key, current, value).await {
        TxnResponse::Succeeded { revision, .. } => revision,
        other => panic!("put {key} failed: {other:?}"),
    }
}

async fn remove(kv: &EmbeddedKv, key: &str) -> i64 {
    let current = get(kv, key, 0).await.unwrap().mod_revision;
    match kv.txn(key, current, TxnOp::Delete).await.unwrap() {
        TxnResponse::Succeeded { revision, .. } => revision,
        other => panic!("delete {key} failed: {other:?}"),
    }
}

async fn get(kv: &EmbeddedKv, key: &str, revision: i64) -> Option<KeyValue> {
    let req = RangeRequest {
        key: key.to_owned(),
        revision,
        ..Default::default()
    };
    let mut resp = kv.range(req).await.unwrap();
    assert!(resp.kvs.len() <= 1);
    resp.kvs.pop()
}

fn prefix_req(prefix: &str, revision: i64) -> RangeRequest {
    RangeRequest {
        key: prefix.to_owned(),
        range_end: Some(prefix_end(prefix)),
        revision,
        ..Default::default()
    }
}

async fn next_event(stream: &mut KvWatchStream) -> KvEvent {
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("watch event timed out")
            .expect("watch stream ended")
            .expect("watch stream failed");
        match item {
            KvWatchItem::Event(event) => return event,
            KvWatchItem::Progress(_) => continue,
        }
    }
}

#[tokio::test]
async fn fresh_store_starts_at_revision_one_and_counts_writes() {
    let (_dir, kv) = open();
    assert_eq!(kv.current_revision().await.unwrap(), 1);
    assert_eq!(kv.compacted_revision().await.unwrap(), 0);
    kv.health().await.unwrap();

    let TxnResponse::Succeeded { revision, prev } = put(&kv, "/a", 0, "1").await else {
        panic!("create failed")
    };
    assert_eq!((revision, prev), (2, None));
    let created = get(&kv, "/a", 0).await.unwrap();
    assert_eq!((created.create_revision, created.mod_revision), (2, 2));
    assert_eq!(created.value, Bytes::from_static(b"1"));

    // A create of an existing key fails and reports the key as it is.
    let TxnResponse::Failed { current, revision } = put(&kv, "/a", 0, "x").await else {
        panic!("second create succeeded")
    };
    assert_eq!((current, revision), (Some(created.clone()), 2));

    // An update against a stale revision fails; against the current one it wins.
    assert!(matches!(
        put(&kv, "/a", 1, "x").await,
        TxnResponse::Failed { .. }
    ));
    let TxnResponse::Succeeded { revision, prev } = put(&kv, "/a", 2, "2").await else {
        panic!("update failed")
    };
    assert_eq!((revision, prev), (3, Some(created.clone())));
    let updated = get(&kv, "/a", 0).await.unwrap();
    assert_eq!((updated.create_revision, updated.mod_revision), (2, 3));

    // Delete returns the deleted key-value; the key is gone at the latest revision.
    let TxnResponse::Succeeded { revision, prev } = kv.txn("/a", 3, TxnOp::Delete).await.unwrap()
    else {
        panic!("delete failed")
    };
    assert_eq!((revision, prev), (4, Some(updated)));
    assert_eq!(get(&kv, "/a", 0).await, None);
    // Deleting an absent key "must not exist" holds, nothing changes, no revision is taken.
    let TxnResponse::Succeeded { revision, prev } = kv.txn("/a", 0, TxnOp::Delete).await.unwrap()
    else {
        panic!("delete of absent key failed")
    };
    assert_eq!((revision, prev), (4, None));
    // Re-creating starts a new generation.
    let TxnResponse::Succeeded { revision, .. } = put(&kv, "/a", 0, "again").await else {
        panic!("re-create failed")
    };
    assert_eq!(get(&kv, "/a", 0).await.unwrap().create_revision, revision);
    assert_eq!(kv.current_revision().await.unwrap(), 5);
}

#[tokio::test]
async fn ranges_honour_limit_count_and_bounds() {
    let (_dir, kv) = open();
    for name in ["a", "b", "c", "d"] {
        set(&kv, &format!("/p/{name}"), name).await;
    }
    set(&kv, "/q/x", "outside").await;
    set(&kv, "/p", "the prefix itself").await;

    let all = kv.range(prefix_req("/p/", 0)).await.unwrap();
    let keys: Vec<_> = all.kvs.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["/p/a", "/p/b", "/p/c", "/p/d"]);
    assert_eq!((all.count, all.more, all.revision), (4, false, 7));

    let limited = kv
        .range(RangeRequest {
            limit: 3,
            ..prefix_req("/p/", 0)
        })
        .await
        .unwrap();
    assert_eq!(limited.kvs.len(), 3);
    assert_eq!((limited.count, limited.more), (4, true));

    let counted = kv
        .range(RangeRequest {
            count_only: true,
            ..prefix_req("/p/", 0)
        })
        .await
        .unwrap();
    assert!(counted.kvs.is_empty());
    assert_eq!(counted.count, 4);

    // "\0" as the range end reads every key from `key` on.
    let tail = kv
        .range(RangeRequest {
            key: "/p/c".to_owned(),
            range_end: Some("\0".to_owned()),
            ..Default::default()
        })
        .await
        .unwrap();
    let keys: Vec<_> = tail.kvs.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["/p/c", "/p/d", "/q/x"]);

    // A future revision is refused.
    let err = kv.range(prefix_req("/p/", 100)).await.unwrap_err();
    assert!(matches!(
        err,
        StorageError::TooLargeResourceVersion {
            requested: 100,
            current: 7
        }
    ));
}

/// A model of the store: the full state after each revision.
#[derive(Default)]
struct Model {
    /// key → (value, create_revision, mod_revision) after each revision.
    states: BTreeMap<i64, BTreeMap<String, (String, i64, i64)>>,
}

#[tokio::test]
async fn reads_at_every_old_revision_match_a_model() {
    let (_dir, kv) = open();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut model = Model::default();
    let mut state: BTreeMap<String, (String, i64, i64)> = BTreeMap::new();
    model.states.insert(1, state.clone());
    for step in 0..300 {
        let key = format!("/m/k{}", rng.random_range(0..12));
        let expected = state.get(&key).map_or(0, |entry| entry.2);
        let delete = state.contains_key(&key) && rng.random_bool(0.3);
        let value = format!("v{step}");
        let op = if delete {
            TxnOp::Delete
        } else {
            TxnOp::Put(Bytes::from(value.clone()))
        };
        let TxnResponse::Succeeded { revision, .. } = kv.txn(&key, expected, op).await.unwrap()
        else {
            panic!("txn with the right expected revision failed")
        };
        if delete {
            state.remove(&key);
        } else {
            let create = state.get(&key).map_or(revision, |entry| entry.1);
            state.insert(key, (value, create, revision));
        }
        model.states.insert(revision, state.clone());
    }
    for (&revision, expected) in &model.states {
        let resp = kv.range(prefix_req("/m/", revision)).await.unwrap();
        let got: BTreeMap<String, (String, i64, i64)> = resp
            .kvs
            .into_iter()
            .map(|kv| {
                let value = String::from_utf8(kv.value.to_vec()).unwrap();
                (kv.key, (value, kv.create_revision, kv.mod_revision))
            })
            .collect();
        assert_eq!(&got, expected, "state at revision {revision}");
        assert_eq!(resp.count, expected.len() as i64);
        // Single-key reads at the same revision agree.
        for key in ["/m/k0", "/m/k5"] {
            let single = get(&kv, key, revision).await.map(|kv| kv.mod_revision);
            assert_eq!(single, expected.get(key).map(|entry| entry.2));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_share_commits_and_conflicts_are_exclusive() {
    let (_dir, kv) = open();
    let kv = Arc::new(kv);
    // 64 writers on distinct keys: every write lands with its own revision.
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let kv = kv.clone();
            tokio::spawn(async move {
                let mut revisions = Vec::new();
                for round in 0..5 {
                    revisions.push(set(&kv, &format!("/c/{i}"), &format!("{round}")).await);
                }
                revisions
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 320);
    assert_eq!(kv.current_revision().await.unwrap(), 321);

    // 16 writers race to update one key from the same revision: one wins.
    let base = set(&kv, "/c/contended", "base").await;
    let racers: Vec<_> = (0..16)
        .map(|i| {
            let kv = kv.clone();
            tokio::spawn(async move { put(&kv, "/c/contended", base, &format!("r{i}")).await })
        })
        .collect();
    let mut winners = 0;
    for racer in racers {
        match racer.await.unwrap() {
            TxnResponse::Succeeded { .. } => winners += 1,
            TxnResponse::Failed { current, .. } => {
                assert!(current.unwrap().mod_revision > base);
            }
        }
    }
    assert_eq!(winners, 1);
}

#[tokio::test]
async fn oversized_writes_are_refused() {
    let (_dir, kv) = open();
    let value = Bytes::from(vec![b'x'; storage_embedded::MAX_REQUEST_BYTES + 1]);
    let err = kv.txn("/big", 0, TxnOp::Put(value)).await.unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { .. }));
    assert_eq!(kv.current_revision().await.unwrap(), 1);
}

#[tokio::test]
async fn watch_replays_history_then_follows_live_writes() {
    let (_dir, kv) = open();
    let first = set(&kv, "/w/a", "a1").await; // 2
    set(&kv, "/other", "x").await; // 3
    set(&kv, "/w/a", "a2").await; // 4
    remove(&kv, "/w/a").await; // 5

    let mut stream = kv.watch("/w/", true, first).await.unwrap();
    let live = set(&kv, "/w/b", "b1").await; // 6

    let e = next_event(&mut stream).await;
    assert_eq!(
        (e.kind, e.kv.mod_revision, e.prev.is_none()),
        (KvEventKind::Put, 2, true)
    );
    let e = next_event(&mut stream).await;
    assert_eq!((e.kind, e.kv.mod_revision), (KvEventKind::Put, 4));
    assert_eq!(e.kv.create_revision, 2);
    assert_eq!(e.prev.unwrap().value, Bytes::from_static(b"a1"));
    let e = next_event(&mut stream).await;
    assert_eq!((e.kind, e.kv.mod_revision), (KvEventKind::Delete, 5));
    assert!(e.kv.value.is_empty());
    let prev = e.prev.unwrap();
    assert_eq!((prev.value.as_ref(), prev.mod_revision), (&b"a2"[..], 4));
    let e = next_event(&mut stream).await;
    assert_eq!(
        (e.kind, e.kv.mod_revision, e.kv.key.as_str()),
        (KvEventKind::Put, live, "/w/b")
    );

    // A single-key watch from "now" sees only later writes to that key.
    let mut exact = kv.watch("/w/b", false, 0).await.unwrap();
    set(&kv, "/w/bb", "not me").await;
    let rev = set(&kv, "/w/b", "b2").await;
    let e = next_event(&mut exact).await;
    assert_eq!((e.kv.key.as_str(), e.kv.mod_revision), ("/w/b", rev));
    assert_eq!(e.prev.unwrap().value, Bytes::from_static(b"b1"));
}

/// Commits more batches than the store buffers for watchers (1024), one
/// write each, under `prefix`.
async fn overflow_watch_buffer(kv: &EmbeddedKv, prefix: &str) {
    let mut revision = 0;
    for i in 0..1100 {
        let key = format!("{prefix}{}", i % 10);
        revision = match put(kv, &key, revision_of(kv, &key).await, "v").await {
            TxnResponse::Succeeded { revision, .. } => revision,
            other => panic!("write failed: {other:?}"),
        };
    }
    assert_eq!(revision, 1101);
}

async fn revision_of(kv: &EmbeddedKv, key: &str) -> i64 {
    get(kv, key, 0).await.map_or(0, |kv| kv.mod_revision)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_watcher_catches_up_without_gaps() {
    let (_dir, kv) = open();
    let kv = Arc::new(kv);
    let mut stream = kv.watch("/lag/", true, 0).await.unwrap();
    // More commits (one write each) than the broadcast buffer holds, while
    // nobody reads.
    overflow_watch_buffer(&kv, "/lag/").await;
    let current = kv.current_revision().await.unwrap();
    let mut expected = 2;
    while expected <= current {
        let e = next_event(&mut stream).await;
        assert_eq!(e.kv.mod_revision, expected, "gap or duplicate");
        expected += 1;
    }
    // And it is live again afterwards.
    let rev = set(&kv, "/lag/after", "x").await;
    assert_eq!(next_event(&mut stream).await.kv.mod_revision, rev);
}

#[tokio::test]
async fn compaction_drops_old_history_but_keeps_what_newer_revisions_need() {
    let (_dir, kv) = open();
    set(&kv, "/k/a", "a1").await; // 2
    set(&kv, "/k/b", "b1").await; // 3
    set(&kv, "/k/a", "a2").await; // 4
    remove(&kv, "/k/b").await; // 5
    set(&kv, "/k/a", "a3").await; // 6
    set(&kv, "/k/c", "c1").await; // 7

    kv.compact(6).await.unwrap();
    assert_eq!(kv.compacted_revision().await.unwrap(), 6);

    let err = kv.range(prefix_req("/k/", 5)).await.unwrap_err();
    assert!(matches!(
        err,
        StorageError::TooOldResourceVersion {
            requested: 5,
            compacted: 6
        }
    ));
    let at6 = kv.range(prefix_req("/k/", 6)).await.unwrap();
    let got: Vec<_> = at6
        .kvs
        .iter()
        .map(|kv| (kv.key.as_str(), kv.mod_revision))
        .collect();
    assert_eq!(got, [("/k/a", 6)]);
    assert_eq!(get(&kv, "/k/c", 0).await.unwrap().mod_revision, 7);

    // Watching from before the compaction fails; from it, replay is exact,
    // including the previous value of the change at the compacted revision.
    let old = kv.watch("/k/", true, 5).await.err().unwrap();
    assert!(matches!(
        old,
        StorageError::TooOldResourceVersion {
            requested: 5,
            compacted: 6
        }
    ));
    let mut from = kv.watch("/k/", true, 6).await.unwrap();
    let e = next_event(&mut from).await;
    assert_eq!(e.kv.mod_revision, 6);
    assert_eq!(e.prev.unwrap().value, Bytes::from_static(b"a2"));
    assert_eq!(next_event(&mut from).await.kv.mod_revision, 7);

    // etcd's rules for the compaction revision itself.
    assert!(matches!(
        kv.compact(6).await,
        Err(StorageError::TooOldResourceVersion { .. })
    ));
    assert!(matches!(
        kv.compact(100).await,
        Err(StorageError::TooLargeResourceVersion { .. })
    ));
    // A later compaction removes what the first one had to keep.
    set(&kv, "/k/a", "a4").await; // 8
    kv.compact(8).await.unwrap();
    let at8 = kv.range(prefix_req("/k/", 8)).await.unwrap();
    let got: Vec<_> = at8
        .kvs
        .iter()
        .map(|kv| (kv.key.as_str(), kv.mod_revision))
        .collect();
    assert_eq!(got, [("/k/a", 8), ("/k/c", 7)]);
}

#[tokio::test]
async fn large_compactions_run_in_chunks_and_stay_correct() {
    let (_dir, kv) = open();
    let kv = Arc::new(kv);
    // Enough revisions for several compaction chunks, written concurrently
    // so the test stays fast.
    let writers: Vec<_> = (0..50)
        .map(|w| {
            let kv = kv.clone();
            tokio::spawn(async move {
                for i in 0..500 {
                    set(&kv, &format!("/big/{w}"), &format!("{i}")).await;
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let current = kv.current_revision().await.unwrap();
    assert_eq!(current, 1 + 50 * 500);
    kv.compact(current).await.unwrap();
    let all = kv.range(prefix_req("/big/", current)).await.unwrap();
    assert_eq!(all.count, 50);
    assert!(all
        .kvs
        .iter()
        .all(|kv| kv.value == Bytes::from_static(b"499")));
}

#[tokio::test]
async fn reopening_gives_back_the_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    let kv = EmbeddedKv::open(dir.path()).unwrap();
    set(&kv, "/r/a", "a1").await;
    set(&kv, "/r/a", "a2").await;
    set(&kv, "/r/b", "b1").await;
    kv.compact(3).await.unwrap();
    kv.close().await;

    let kv = EmbeddedKv::open(dir.path()).unwrap();
    assert_eq!(kv.current_revision().await.unwrap(), 4);
    assert_eq!(kv.compacted_revision().await.unwrap(), 3);
    assert_eq!(
        get(&kv, "/r/a", 0).await.unwrap().value,
        Bytes::from_static(b"a2")
    );
    assert_eq!(get(&kv, "/r/a", 3).await.unwrap().mod_revision, 3);
    // Writes continue from the stored revision.
    assert_eq!(set(&kv, "/r/c", "c1").await, 5);
}

#[tokio::test]
async fn a_closed_store_refuses_requests_and_ends_watches() {
    let (_dir, kv) = open();
    let other = kv.clone();
    let mut stream = kv.watch("/", true, 0).await.unwrap();
    kv.close().await;
    assert!(other.health().await.is_err());
    assert!(matches!(
        other.txn("/x", 0, TxnOp::Delete).await,
        Err(StorageError::Unreachable(_))
    ));
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .unwrap();
    assert!(end.is_none());
}

#[tokio::test]
async fn a_quiet_watcher_hears_progress_while_others_write() {
    let (_dir, kv) = open();
    let mut quiet = kv.watch("/quiet/", true, 0).await.unwrap();
    let mut written = 0;
    for i in 0..3 {
        written = set(&kv, "/busy/x", &format!("{i}")).await;
    }
    let progress = loop {
        let item = tokio::time::timeout(Duration::from_secs(5), quiet.next())
            .await
            .expect("no progress notification")
            .unwrap()
            .unwrap();
        match item {
            KvWatchItem::Progress(revision) if revision >= written => break revision,
            KvWatchItem::Progress(_) => continue,
            KvWatchItem::Event(event) => panic!("unexpected event {event:?}"),
        }
    };
    assert_eq!(progress, written);
    // Events for its own keys still come through after the progress.
    let own = set(&kv, "/quiet/a", "a").await;
    assert_eq!(next_event(&mut quiet).await.kv.mod_revision, own);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_watcher_whose_history_was_compacted_ends_with_too_old() {
    let (_dir, kv) = open();
    let kv = Arc::new(kv);
    let mut stream = kv.watch("/gone/", true, 0).await.unwrap();
    // More commits than the broadcast buffer holds, then compact them all.
    overflow_watch_buffer(&kv, "/gone/").await;
    let current = kv.current_revision().await.unwrap();
    kv.compact(current).await.unwrap();
    let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        item,
        Err(StorageError::TooOldResourceVersion { requested: 2, .. })
    ));
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn a_single_key_watch_replays_only_that_key() {
    let (_dir, kv) = open();
    let mut mine = Vec::new();
    for i in 0..30 {
        set(&kv, &format!("/s/other{}", i % 3), "x").await;
        set(&kv, "/s/keyed", "near miss").await;
        if i % 10 == 9 {
            mine.push((KvEventKind::Delete, remove(&kv, "/s/key").await));
        } else {
            mine.push((KvEventKind::Put, set(&kv, "/s/key", &format!("{i}")).await));
        }
    }
    let mut stream = kv.watch("/s/key", false, 2).await.unwrap();
    for (kind, revision) in mine {
        let e = next_event(&mut stream).await;
        assert_eq!(
            (e.kv.key.as_str(), e.kind, e.kv.mod_revision),
            ("/s/key", kind, revision)
        );
        // Right after a delete, the put re-creates the key: no previous value.
        assert_eq!(
            e.prev.is_none(),
            kind == KvEventKind::Put && e.kv.create_revision == revision
        );
    }
    let live = set(&kv, "/s/key", "live").await;
    assert_eq!(next_event(&mut stream).await.kv.mod_revision, live);
}

#[tokio::test]
async fn a_long_single_key_replay_is_read_in_chunks_without_gaps() {
    let (_dir, kv) = open();
    let mut revision = 0;
    for i in 0..1100 {
        revision = match put(&kv, "/one", revision, &format!("{i}")).await {
            TxnResponse::Succeeded { revision, .. } => revision,
            other => panic!("write failed: {other:?}"),
        };
    }
    let mut stream = kv.watch("/one", false, 2).await.unwrap();
    for expected in 2..=revision {
        assert_eq!(next_event(&mut stream).await.kv.mod_revision, expected);
    }
}
