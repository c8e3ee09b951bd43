//! Torn writes: the file as a crash can leave it in the middle of the last
//! commit. redb writes a commit's pages, flushes them, and only then writes
//! the header that makes the commit current (checksummed, in two slots), so
//! a crash leaves either the new header over complete pages, a torn header,
//! or the old header over any mix of written and unwritten new pages. The
//! test builds such files from two snapshots — after an acknowledged commit
//! A and after the next commit B — and checks that every one opens with all
//! of A, with B whole or absent, and takes writes again. A file cut
//! short (a lost tail) must open with everything or refuse with a message.

use std::path::Path;

use bytes::Bytes;
use rand::{Rng, SeedableRng};
use storage::{Kv, RangeRequest, TxnOp, TxnResponse};
use storage_embedded::{EmbeddedKv, DATABASE_FILE};

/// The unit a disk writes atomically.
const SECTOR: usize = 512;

async fn put(kv: &EmbeddedKv, key: &str, value: &str) {
    let current = read(kv, key).await.map_or(0, |(_, rev)| rev);
    let value = Bytes::copy_from_slice(value.as_bytes());
    match kv.txn(key, current, TxnOp::Put(value)).await.unwrap() {
        TxnResponse::Succeeded { .. } => {}
        other => panic!("put {key}: {other:?}"),
    }
}

async fn read(kv: &EmbeddedKv, key: &str) -> Option<(String, i64)> {
    let req = RangeRequest {
        key: key.to_owned(),
        ..Default::default()
    };
    let resp = kv.range(req).await.unwrap();
    resp.kvs.into_iter().next().map(|kv| {
        let value = String::from_utf8(kv.value.to_vec()).unwrap();
        (value, kv.mod_revision)
    })
}

/// Commits A (keys a0..a199, each its own commit) and then B (one more
/// commit, /t/b); returns the file as the disk held it after each, the
/// store still open as a crash finds it.
async fn snapshots(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let file = dir.join(DATABASE_FILE);
    let kv = EmbeddedKv::open(dir).unwrap();
    for i in 0..200 {
        put(&kv, &format!("/t/a{i}"), &a_value(i)).await;
    }
    let a = std::fs::read(&file).unwrap();
    put(&kv, "/t/b", B_VALUE).await;
    let b = std::fs::read(&file).unwrap();
    kv.close().await;
    (a, b)
}

const B_VALUE: &str = "written by the last commit";

fn a_value(i: usize) -> String {
    format!("a{i}-{}", "x".repeat(i * 7))
}

/// Opens `bytes` as a store; checks A is whole, and that the store takes a
/// write. Returns whether B survived.
async fn check_opens(dir: &Path, bytes: &[u8], case: &str) -> bool {
    std::fs::write(dir.join(DATABASE_FILE), bytes).unwrap();
    let kv = EmbeddedKv::open(dir).unwrap_or_else(|e| panic!("{case}: open failed: {e}"));
    for i in 0..200 {
        let got = read(&kv, &format!("/t/a{i}")).await.map(|(v, _)| v);
        assert_eq!(got, Some(a_value(i)), "{case}: a{i}");
    }
    let b = read(&kv, "/t/b").await.map(|(v, _)| v);
    assert!(
        b.is_none() || b.as_deref() == Some(B_VALUE),
        "{case}: B garbled: {b:?}"
    );
    put(&kv, "/t/after", "written").await;
    assert!(read(&kv, "/t/after").await.is_some(), "{case}: writable");
    kv.close().await;
    b.is_some()
}

/// The sector-sized ranges where `a` and `b` differ.
fn differing_sectors(a: &[u8], b: &[u8]) -> Vec<usize> {
    (0..b.len().div_ceil(SECTOR))
        .filter(|s| {
            let range = s * SECTOR..((s + 1) * SECTOR).min(b.len());
            a.get(range.clone()) != b.get(range)
        })
        .collect()
}

fn copy_sector(to: &mut [u8], from: &[u8], sector: usize) {
    let range = sector * SECTOR..((sector + 1) * SECTOR).min(to.len());
    match from.get(range.clone()) {
        Some(bytes) => to[range].copy_from_slice(bytes),
        None => to[range].fill(0),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_last_commit_is_rolled_back_or_kept_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = snapshots(dir.path()).await;
    let sectors = differing_sectors(&a, &b);
    let header: Vec<usize> = sectors
        .iter()
        .copied()
        .filter(|s| *s * SECTOR < 4096)
        .collect();
    let body: Vec<usize> = sectors
        .iter()
        .copied()
        .filter(|s| *s * SECTOR >= 4096)
        .collect();
    assert!(
        !header.is_empty() && !body.is_empty(),
        "B changed the header and pages"
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(16);
    let (mut kept, mut rolled_back) = (0, 0);
    for round in 0..24 {
        // The old header over a random part of B's pages (B's flush torn).
        let mut torn = b.clone();
        torn.resize(b.len().max(a.len()), 0);
        for s in &header {
            copy_sector(&mut torn, &a, *s);
        }
        for s in &body {
            if rng.random_bool(0.5) {
                copy_sector(&mut torn, &a, *s);
            }
        }
        let case = format!("round {round}, old header over torn pages");
        assert!(
            !check_opens(dir.path(), &torn, &case).await,
            "{case}: B kept"
        );
        rolled_back += 1;
        // B's complete pages under a header torn sector by sector.
        let mut torn = b.clone();
        for s in &header {
            if rng.random_bool(0.5) {
                copy_sector(&mut torn, &a, *s);
            }
        }
        let case = format!("round {round}, torn header");
        if check_opens(dir.path(), &torn, &case).await {
            kept += 1;
        } else {
            rolled_back += 1;
        }
    }
    assert!(
        kept > 0 && rolled_back > 0,
        "kept {kept}, rolled back {rolled_back}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_cut_short_opens_whole_or_refuses_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = snapshots(dir.path()).await;
    for cut in [SECTOR, 4096, 64 * 1024, b.len() / 2] {
        let file = dir.path().join(DATABASE_FILE);
        std::fs::write(&file, &b[..b.len() - cut]).unwrap();
        let opened = std::panic::AssertUnwindSafe(async { EmbeddedKv::open(dir.path()) });
        match futures::FutureExt::catch_unwind(opened).await {
            Ok(Ok(kv)) => {
                kv.close().await;
                let case = format!("cut {cut} bytes");
                assert!(check_opens(dir.path(), &b[..b.len() - cut], &case).await);
            }
            Ok(Err(e)) => {
                let message = e.to_string();
                assert!(message.contains(DATABASE_FILE), "cut {cut}: {message}");
                eprintln!("cut {cut} bytes: refused: {message}");
            }
            Err(_) => panic!("cut {cut} bytes: opening panicked"),
        }
    }
}
