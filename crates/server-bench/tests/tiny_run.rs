//! Runs a tiny benchmark against the debug `kube-apiserver` binary (built by
//! `scripts/test` before the tests; `KUBE_APISERVER_BIN` overrides the path)
//! and checks the printed tables: every phase on every protocol has a row,
//! every request succeeded, and each phase made exactly the requests asked.

use std::path::PathBuf;
use std::process::Command;

const REQUESTS: u64 = 6;
const WATCHERS: u64 = 3;
const WATCH_EVENTS: u64 = 4;
const PHASES: [&str; 5] = [
    "GET one ConfigMap",
    "LIST 20 ConfigMaps, JSON",
    "LIST 20 ConfigMaps, protobuf",
    "CREATE ConfigMap",
    "watch fan-out",
];

/// The server binary, or `None` when it has not been built.
fn kube_apiserver() -> Option<PathBuf> {
    let path = std::env::var_os("KUBE_APISERVER_BIN").map_or_else(
        || {
            let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
                || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
                PathBuf::from,
            );
            target.join("debug/kube-apiserver")
        },
        PathBuf::from,
    );
    path.is_file().then_some(path)
}

/// Runs the benchmark with `extra` flags; returns its standard output.
fn run_bench(extra: &[&str]) -> Option<String> {
    let Some(server) = kube_apiserver() else {
        eprintln!(
            "SKIPPED: target/debug/kube-apiserver is not built \
             (cargo build -p kube-apiserver, or set KUBE_APISERVER_BIN)"
        );
        return None;
    };
    let requests = REQUESTS.to_string();
    let watchers = WATCHERS.to_string();
    let events = WATCH_EVENTS.to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_server-bench"))
        .arg("--kube-apiserver")
        .arg(&server)
        .args(["--seconds", "120", "--requests", &requests])
        .args([
            "--concurrency",
            "2",
            "--list-objects",
            "20",
            "--value-bytes",
            "64",
        ])
        .args(["--watchers", &watchers, "--watch-events", &events])
        .args(extra)
        .output()
        .expect("server-bench runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "server-bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(stdout)
}

/// The cells of the load table's rows.
fn load_rows(stdout: &str) -> Vec<Vec<String>> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with("| phase |"));
    let header = lines.next().expect("a load table");
    let columns = header.matches('|').count() - 1;
    assert_eq!(columns, 10, "{header}");
    assert!(lines.next().is_some_and(|l| l.starts_with("|---")));
    lines
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<String> = l
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect();
            assert_eq!(cells.len(), columns, "{l}");
            cells
        })
        .collect()
}

fn check_rows(stdout: &str, protocols: &[&str]) {
    let rows = load_rows(stdout);
    assert_eq!(rows.len(), PHASES.len() * protocols.len(), "{stdout}");
    for (row, (protocol, phase)) in rows.iter().zip(
        protocols
            .iter()
            .flat_map(|p| PHASES.iter().map(move |phase| (p, phase))),
    ) {
        assert!(row[0].starts_with(phase), "{row:?}");
        assert_eq!(row[1], *protocol, "{row:?}");
        let expected = if phase.starts_with("watch") {
            WATCHERS * WATCH_EVENTS
        } else {
            REQUESTS
        };
        assert_eq!(row[2], expected.to_string(), "requests: {row:?}");
        assert_eq!(row[3], "0", "errors: {row:?}");
        assert!(row[5].ends_with("ms") || row[5].ends_with("µs"), "{row:?}");
        assert!(row[9].ends_with("MiB"), "{row:?}");
    }
}

#[test]
fn tiny_run_on_the_embedded_store() {
    let Some(stdout) = run_bench(&[]) else {
        return;
    };
    for label in [
        "spawn → `/livez` 200",
        "spawn → `/readyz` 200",
        "peak RSS (VmHWM)",
    ] {
        assert!(stdout.contains(label), "{label} missing:\n{stdout}");
    }
    check_rows(&stdout, &["HTTP/2", "HTTP/1.1"]);
}

#[test]
fn tiny_run_on_etcd() {
    let Some(stdout) = run_bench(&["--etcd", "--http", "h2"]) else {
        return;
    };
    assert!(stdout.contains("on etcd"), "{stdout}");
    check_rows(&stdout, &["HTTP/2"]);
}
