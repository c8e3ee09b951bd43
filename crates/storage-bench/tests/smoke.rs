//! Runs the benchmark binary with tiny sizes on both backends (etcd from
//! the `PATH`, as `scripts/test` installs it) and checks the table it
//! prints: every row present and every watcher given every event.

use std::process::Command;

#[test]
fn tiny_run_prints_a_complete_table() {
    let output = Command::new(env!("CARGO_BIN_EXE_storage-bench"))
        .args(["--writers", "1,4", "--write-seconds", "0.2"])
        .args(["--list-objects", "50", "--list-seconds", "0.05"])
        .args([
            "--watchers",
            "5",
            "--watch-events",
            "20",
            "--watch-writers",
            "2",
        ])
        .output()
        .expect("run storage-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "storage-bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("| measurement | embedded | etcd |"),
        "{stdout}"
    );
    for row in [
        "| durable creates/s, 1 writer(s) |",
        "| create latency p50 / p99, 4 writer(s) |",
        "| list 50 objects through the Store (KV), per list, p50 |",
        "| list 50 objects through the Cacher (`Any`), per list, p50 |",
        "| watch fan-out: events/s delivered in total to 5 Cacher watchers |",
    ] {
        assert!(stdout.contains(row), "missing {row:?} in:\n{stdout}");
    }
    // 20 creates to 5 watchers, on both backends, none cut off.
    assert!(
        stdout.contains("| 100 / 100; 0 | 100 / 100; 0 |"),
        "{stdout}"
    );
}
