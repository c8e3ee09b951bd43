//! Disk full: the store on a small tmpfs (root only; the test prints why and
//! skips when it cannot mount one). Writes that hit `ENOSPC` fail with a
//! message naming the cause and leave nothing behind; reads keep working;
//! once space is freed, writes succeed again on the same handle; a reopen
//! finds every acknowledged write.

use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;
use futures::StreamExt;
use storage::{Kv, KvWatchItem, KvWatchStream, RangeRequest, TxnOp, TxnResponse};
use storage_embedded::EmbeddedKv;

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (after saying why on stderr) when mounting is not permitted.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Tmpfs { dir }),
            other => {
                eprintln!("SKIPPED: cannot mount a tmpfs here (needs root): {other:?}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn value(i: usize) -> Bytes {
    Bytes::from(format!("{i:08}").repeat(64 * 1024 / 8))
}

async fn stored(kv: &EmbeddedKv, key: &str) -> Option<Bytes> {
    let req = RangeRequest {
        key: key.to_owned(),
        ..Default::default()
    };
    let resp = kv.range(req).await.expect("a read works on a full disk");
    resp.kvs.into_iter().next().map(|kv| kv.value)
}

/// Writes new keys until a write fails; returns the acknowledged keys and
/// the failure.
async fn fill(kv: &EmbeddedKv, prefix: &str) -> (Vec<(String, usize)>, String) {
    let mut acked = Vec::new();
    for i in 0..1000 {
        let key = format!("{prefix}{i}");
        match kv.txn(&key, 0, TxnOp::Put(value(i))).await {
            Ok(TxnResponse::Succeeded { .. }) => acked.push((key, i)),
            Ok(other) => panic!("create {key}: {other:?}"),
            Err(e) => return (acked, e.to_string()),
        }
    }
    panic!("the disk never filled up");
}

/// The keys a watch reports until (and including) `last`.
async fn watched_until(watch: &mut KvWatchStream, last: &str) -> Vec<String> {
    let mut keys = Vec::new();
    loop {
        let item = tokio::time::timeout(std::time::Duration::from_secs(10), watch.next())
            .await
            .expect("the watch keeps delivering");
        match item {
            Some(Ok(KvWatchItem::Event(event))) => {
                keys.push(event.kv.key.clone());
                if event.kv.key == last {
                    return keys;
                }
            }
            Some(Ok(KvWatchItem::Progress(_))) => {}
            other => panic!("the watch ended: {other:?}"),
        }
    }
}

async fn check_all(kv: &EmbeddedKv, acked: &[(String, usize)]) {
    for (key, i) in acked {
        assert_eq!(stored(kv, key).await, Some(value(*i)), "{key} was lost");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enospc_fails_writes_cleanly_and_recovers_when_space_returns() {
    let Some(fs) = Tmpfs::mount("8m") else {
        return;
    };
    let filler = PathBuf::from(fs.path()).join("filler");
    std::fs::write(&filler, vec![1u8; 2 * 1024 * 1024]).unwrap();
    let dir = fs.path().join("store");
    let kv = EmbeddedKv::open(&dir).unwrap();
    let mut watch = kv.watch("/full/", true, 0).await.unwrap();

    let (acked, failure) = fill(&kv, "/full/a").await;
    assert!(!acked.is_empty());
    assert!(
        failure.contains("No space left on device"),
        "the failure names the cause: {failure}"
    );
    let failed_key = format!("/full/a{}", acked.len());
    assert_eq!(
        stored(&kv, &failed_key).await,
        None,
        "a failed write is absent"
    );
    check_all(&kv, &acked).await;
    // Still full: another write fails the same way, nothing is wedged.
    let again = kv.txn("/full/again", 0, TxnOp::Put(value(0))).await;
    assert!(again.is_err(), "a write on a full disk: {again:?}");

    std::fs::remove_file(&filler).unwrap();
    let after = kv.txn("/full/after", 0, TxnOp::Put(value(7))).await;
    assert!(
        matches!(after, Ok(TxnResponse::Succeeded { .. })),
        "a write after space returned: {after:?}"
    );
    kv.health().await.expect("healthy once a commit succeeds");
    check_all(&kv, &acked).await;
    let mut expected: Vec<String> = acked.iter().map(|(key, _)| key.clone()).collect();
    expected.push("/full/after".to_owned());
    assert_eq!(
        watched_until(&mut watch, "/full/after").await,
        expected,
        "the watch saw exactly the acknowledged writes"
    );
    drop(watch);
    kv.close().await;

    let kv = EmbeddedKv::open(&dir).unwrap();
    check_all(&kv, &acked).await;
    assert_eq!(stored(&kv, "/full/after").await, Some(value(7)));
    assert_eq!(stored(&kv, &failed_key).await, None);
    kv.close().await;
}
