//! Crash safety: a child process (`embedded-crash-writer`) writes from
//! several concurrent writers and prints every acknowledged write; the test
//! kills it with SIGKILL at a random moment, reopens the directory and
//! checks that every acknowledged write is there with its value, that the
//! history and change log are consistent, and that the store keeps working.
//! Many rounds run on the same directory.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use rand::Rng;
use storage::{Kv, KvEventKind, KvWatchItem, RangeRequest, TxnOp, TxnResponse};
use storage_embedded::EmbeddedKv;

const ROUNDS: u64 = 30;
const WRITERS: usize = 6;

/// One acknowledged write as the child reported it.
#[derive(Debug, Clone)]
struct Ack {
    key: String,
    revision: i64,
    /// `None` for a delete.
    value: Option<String>,
}

fn parse(line: &str) -> Ack {
    let fields: Vec<&str> = line.split(' ').collect();
    match fields.as_slice() {
        ["P", key, revision, value] => Ack {
            key: (*key).to_owned(),
            revision: revision.parse().unwrap(),
            value: Some((*value).to_owned()),
        },
        ["D", key, revision] => Ack {
            key: (*key).to_owned(),
            revision: revision.parse().unwrap(),
            value: None,
        },
        _ => panic!("the child reported: {line}"),
    }
}

/// Runs one child until it has acknowledged something, then kills it at a
/// random moment; returns the complete lines it printed.
fn run_child(dir: &Path, round: u64) -> Vec<String> {
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_embedded-crash-writer"))
        .arg(dir)
        .arg(WRITERS.to_string())
        .arg(round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let lines = lines.clone();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match stdout.read_line(&mut line) {
                    // A line cut by the kill has no newline: not acknowledged.
                    Ok(n) if n > 0 && line.ends_with('\n') => {
                        lines.lock().unwrap().push(line.trim_end().to_owned());
                    }
                    _ => return,
                }
            }
        })
    };
    let started = Instant::now();
    while lines.lock().unwrap().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "round {round}: the child acknowledged nothing"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("round {round}: the child exited early: {status}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(rand::rng().random_range(0..300)));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    Arc::try_unwrap(lines).unwrap().into_inner().unwrap()
}

/// What the test knows about the store across rounds.
#[derive(Default)]
struct Ledger {
    /// The last acknowledged write of each key.
    latest: HashMap<String, Ack>,
    /// The highest acknowledged revision so far.
    max_revision: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = Ledger::default();
    let started = Instant::now();
    for round in 0..ROUNDS {
        let path = dir.path().to_owned();
        let lines = tokio::task::spawn_blocking(move || run_child(&path, round))
            .await
            .unwrap();
        let acks: Vec<Ack> = lines.iter().map(|line| parse(line)).collect();
        assert!(!acks.is_empty());
        let round_start = acks.iter().map(|a| a.revision).min().unwrap();
        assert!(
            round_start > ledger.max_revision,
            "round {round}: revision {round_start} reused (previous max {})",
            ledger.max_revision
        );

        let kv = EmbeddedKv::open(dir.path()).unwrap();
        check_latest(&kv, &ledger, &acks, round).await;
        check_history(&kv, &acks, round).await;
        check_change_log(&kv, &acks, round_start, round).await;
        check_still_writable(&kv, round).await;
        kv.close().await;

        for ack in acks {
            ledger.max_revision = ledger.max_revision.max(ack.revision);
            ledger.latest.insert(ack.key.clone(), ack);
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "the crash rounds took {:?}",
        started.elapsed()
    );
}

/// Every key holds its last acknowledged write, or a newer one that was
/// committed but not yet acknowledged when the child died.
async fn check_latest(kv: &EmbeddedKv, ledger: &Ledger, acks: &[Ack], round: u64) {
    let mut last: HashMap<&str, &Ack> = ledger
        .latest
        .iter()
        .map(|(key, ack)| (key.as_str(), ack))
        .collect();
    for ack in acks {
        let entry = last.entry(ack.key.as_str()).or_insert(ack);
        if ack.revision > entry.revision {
            *entry = ack;
        }
    }
    let current = kv.current_revision().await.unwrap();
    let max_acked = acks.iter().map(|a| a.revision).max().unwrap();
    assert!(
        current >= max_acked,
        "round {round}: current {current} < acknowledged {max_acked}"
    );
    for (key, ack) in last {
        let req = RangeRequest {
            key: key.to_owned(),
            ..Default::default()
        };
        let found = kv.range(req).await.unwrap().kvs.pop();
        match (&found, &ack.value) {
            (Some(kv), Some(value)) if kv.mod_revision == ack.revision => {
                assert_eq!(kv.value, Bytes::from(value.clone()), "round {round}: {key}");
            }
            // An unacknowledged later write of the same writer.
            (Some(kv), _) if kv.mod_revision > ack.revision => {}
            (None, None) => {}
            (None, Some(_)) if changed_after(kv, key, ack.revision).await => {}
            _ => panic!("round {round}: {key} lost {ack:?}; the store has {found:?}"),
        }
    }
}

/// Whether `key` was changed after `revision` by a write that replaced the
/// one at `revision` (an unacknowledged delete, say).
async fn changed_after(kv: &EmbeddedKv, key: &str, revision: i64) -> bool {
    let compacted = kv.compacted_revision().await.unwrap();
    if revision + 1 < compacted {
        // The log before the compacted revision is gone: look at the key there.
        let req = RangeRequest {
            key: key.to_owned(),
            revision: compacted,
            ..Default::default()
        };
        match kv.range(req).await.unwrap().kvs.pop() {
            // Changed before the compaction (a lost write would leave an older version).
            None => return true,
            Some(kv) if kv.mod_revision > revision => return true,
            Some(kv) if kv.mod_revision < revision => return false,
            // Still the write at `revision`: it changed after the compaction.
            Some(_) => {}
        }
    }
    // The next change of the key must name `revision` as its previous.
    let from = (revision + 1).max(compacted);
    let mut stream = kv.watch(key, false, from).await.unwrap();
    loop {
        let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let KvWatchItem::Event(event) = item {
            return event.prev.is_some_and(|prev| prev.mod_revision == revision);
        }
    }
}

/// Reads at each acknowledged revision (unless compacted since) see the write.
async fn check_history(kv: &EmbeddedKv, acks: &[Ack], round: u64) {
    let compacted = kv.compacted_revision().await.unwrap();
    for ack in acks.iter().filter(|a| a.revision >= compacted) {
        let req = RangeRequest {
            key: ack.key.clone(),
            revision: ack.revision,
            ..Default::default()
        };
        let found = kv.range(req).await.unwrap().kvs.pop();
        match (&found, &ack.value) {
            (Some(kv), Some(value)) => {
                assert_eq!(kv.mod_revision, ack.revision, "round {round}: {ack:?}");
                assert_eq!(
                    kv.value,
                    Bytes::from(value.clone()),
                    "round {round}: {ack:?}"
                );
            }
            (None, None) => {}
            _ => panic!(
                "round {round}: read at {} gave {found:?} for {ack:?}",
                ack.revision
            ),
        }
    }
}

/// The change log replays this round's revisions contiguously, and every
/// acknowledged write appears in it as acknowledged.
async fn check_change_log(kv: &EmbeddedKv, acks: &[Ack], round_start: i64, round: u64) {
    let compacted = kv.compacted_revision().await.unwrap();
    let current = kv.current_revision().await.unwrap();
    let from = round_start.max(compacted);
    let by_revision: HashMap<i64, &Ack> = acks.iter().map(|a| (a.revision, a)).collect();
    let mut stream = kv.watch("/crash/", true, from).await.unwrap();
    let mut expected = from;
    while expected <= current {
        let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let KvWatchItem::Event(event) = item else {
            continue;
        };
        assert_eq!(event.kv.mod_revision, expected, "round {round}: log gap");
        if let Some(ack) = by_revision.get(&expected) {
            assert_eq!(event.kv.key, ack.key, "round {round}");
            match &ack.value {
                Some(value) => {
                    assert_eq!(event.kind, KvEventKind::Put);
                    assert_eq!(event.kv.value, Bytes::from(value.clone()));
                }
                None => assert_eq!(event.kind, KvEventKind::Delete),
            }
        }
        expected += 1;
    }
}

async fn check_still_writable(kv: &EmbeddedKv, round: u64) {
    kv.health().await.unwrap();
    let key = format!("/parent/{round}");
    let response = kv
        .txn(&key, 0, TxnOp::Put(Bytes::from_static(b"ok")))
        .await
        .unwrap();
    let TxnResponse::Succeeded { revision, .. } = response else {
        panic!("round {round}: the parent's write failed: {response:?}")
    };
    assert_eq!(kv.current_revision().await.unwrap(), revision);
}
