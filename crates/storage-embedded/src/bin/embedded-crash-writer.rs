//! The child process of the crash test (`tests/crash.rs`): opens the store in
//! a directory and writes to it from several concurrent writers until it is
//! killed, printing every acknowledged write on stdout, one line each:
//!
//! * `P <key> <revision> <value>` — a put acknowledged at `revision`;
//! * `D <key> <revision>` — a delete acknowledged at `revision`;
//! * `X <message>` — something went wrong (the test fails on it).
//!
//! Usage: `embedded-crash-writer <dir> <writers> <round>`. Writer `w` owns
//! the keys `/crash/w<w>/k<0..8>` and is their only writer, so the test
//! knows what each key must hold. A background task compacts now and then,
//! so crashes also hit compactions.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use storage::{Kv, RangeRequest, TxnOp, TxnResponse};
use storage_embedded::EmbeddedKv;

/// Keys per writer.
const KEYS: usize = 8;
/// Writes per writer before it stops on its own (the test kills it sooner).
const MAX_WRITES: u64 = 200_000;
/// Revisions of history kept by the background compactions.
const KEEP_HISTORY: i64 = 50;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, writers, round] = args.as_slice() else {
        eprintln!("usage: embedded-crash-writer <dir> <writers> <round>");
        return ExitCode::from(2);
    };
    let (Ok(writers), Ok(round)) = (writers.parse::<usize>(), round.parse::<u64>()) else {
        eprintln!("writers and round must be numbers");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (lines, printed) = mpsc::channel::<String>();
    let printer = std::thread::spawn(move || print_lines(printed));
    let outcome = runtime.block_on(run(PathBuf::from(dir), writers, round, lines));
    let _ = printer.join();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// Writes acknowledgement lines to stdout as they come, flushing each so
/// the parent sees it before any kill.
fn print_lines(lines: mpsc::Receiver<String>) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in lines {
        if out.write_all(line.as_bytes()).is_err() || out.flush().is_err() {
            return;
        }
    }
}

async fn run(
    dir: PathBuf,
    writers: usize,
    round: u64,
    lines: mpsc::Sender<String>,
) -> Result<(), String> {
    let kv = EmbeddedKv::open(&dir).map_err(|e| format!("open: {e}"))?;
    let compactor = tokio::spawn(compact_now_and_then(kv.clone()));
    let tasks: Vec<_> = (0..writers)
        .map(|w| tokio::spawn(write_forever(kv.clone(), w, round, lines.clone())))
        .collect();
    drop(lines);
    let mut outcome = Ok(());
    for task in tasks {
        let result = task.await.map_err(|e| e.to_string()).and_then(|r| r);
        if outcome.is_ok() {
            outcome = result;
        }
    }
    compactor.abort();
    outcome
}

async fn compact_now_and_then(kv: EmbeddedKv) {
    loop {
        tokio::time::sleep(Duration::from_millis(30)).await;
        let (Ok(current), Ok(compacted)) =
            (kv.current_revision().await, kv.compacted_revision().await)
        else {
            return;
        };
        if current - KEEP_HISTORY > compacted {
            // Losing a race with another compaction is fine.
            let _ = kv.compact(current - KEEP_HISTORY).await;
        }
    }
}

/// One writer: puts and deletes on its own keys, reporting each acknowledgement.
async fn write_forever(
    kv: EmbeddedKv,
    writer: usize,
    round: u64,
    lines: mpsc::Sender<String>,
) -> Result<(), String> {
    let keys: Vec<String> = (0..KEYS)
        .map(|k| format!("/crash/w{writer}/k{k}"))
        .collect();
    // The mod revision of each key as the store has it now (0: absent).
    let mut revisions = Vec::with_capacity(KEYS);
    for key in &keys {
        let req = RangeRequest {
            key: key.clone(),
            ..Default::default()
        };
        let resp = kv
            .range(req)
            .await
            .map_err(|e| format!("read {key}: {e}"))?;
        revisions.push(resp.kvs.first().map_or(0, |kv| kv.mod_revision));
    }
    for seq in 0..MAX_WRITES {
        let k = (seq as usize * 5 + writer) % KEYS;
        let key = &keys[k];
        let delete = revisions[k] != 0 && seq % 4 == 3;
        let value = format!("r{round}-w{writer}-s{seq}");
        let op = if delete {
            TxnOp::Delete
        } else {
            TxnOp::Put(Bytes::from(value.clone()))
        };
        let response = kv
            .txn(key, revisions[k], op)
            .await
            .map_err(|e| format!("write {key}: {e}"))?;
        let TxnResponse::Succeeded { revision, .. } = response else {
            let line = format!("X compare failed on {key}, which only this writer writes\n");
            let _ = lines.send(line);
            return Err(format!("unexpected conflict on {key}"));
        };
        let line = if delete {
            revisions[k] = 0;
            format!("D {key} {revision}\n")
        } else {
            revisions[k] = revision;
            format!("P {key} {revision} {value}\n")
        };
        if lines.send(line).is_err() {
            return Err("the printer stopped".to_owned());
        }
    }
    Ok(())
}
