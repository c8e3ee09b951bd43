//! Runs a tiny benchmark against the debug `kube-apiserver` binary (built by
//! `scripts/test` before the tests; `KUBE_APISERVER_BIN` overrides the path)
//! and checks the printed tables: every phase on every protocol has a row,
//! every request succeeded, and each phase made exactly the requests asked;
//! the same for tiny `--targets` (with its plots) and `--scale` runs.

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
    let requests = REQUESTS.to_string();
    let watchers = WATCHERS.to_string();
    let events = WATCH_EVENTS.to_string();
    let mut args = vec!["--seconds", "120", "--requests", &requests];
    args.extend(["--concurrency", "2", "--list-objects", "20"]);
    args.extend(["--value-bytes", "64"]);
    args.extend(["--watchers", &watchers, "--watch-events", &events]);
    args.extend(extra);
    run_with(&args)
}

/// Runs the benchmark on the debug server with `args`; returns its
/// standard output, or `None` when the server is not built.
fn run_with(args: &[&str]) -> Option<String> {
    let Some(server) = kube_apiserver() else {
        eprintln!(
            "SKIPPED: target/debug/kube-apiserver is not built \
             (cargo build -p kube-apiserver, or set KUBE_APISERVER_BIN)"
        );
        return None;
    };
    let output = Command::new(env!("CARGO_BIN_EXE_server-bench"))
        .arg("--kube-apiserver")
        .arg(&server)
        .args(args)
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

/// The rows of the first table whose header starts with `header`, as cells.
fn table(stdout: &str, header: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn tiny_targets_run_with_plots() {
    let plots = tempfile::tempdir().expect("a temporary directory");
    let plot_dir = plots.path().to_str().expect("a UTF-8 path");
    let Some(stdout) = run_with(&[
        "--targets",
        "--seconds",
        "120",
        "--requests",
        "5",
        "--steps",
        "1,3",
        "--rss-objects",
        "10,25",
        "--cache-list-objects",
        "12",
        "--concurrency",
        "2",
        "--plot-dir",
        plot_dir,
    ]) else {
        return;
    };
    let targets = table(&stdout, "| figure |");
    let figures: Vec<&str> = targets.iter().map(|row| row[0].as_str()).collect();
    for wanted in [
        "raw etcd create transactions/s, 3 in flight",
        "creates/s, 3 clients, on the embedded store",
        "creates/s, 3 clients, on etcd",
        "server CPU per create",
        "server CPU per GET of one object",
        "LIST of 12 objects from the watch cache, JSON",
        "LIST of 12 objects from the watch cache, protobuf",
        "start to `/readyz` ok, empty data dir (certificates included)",
        "restart to `/readyz` ok with 25 objects",
    ] {
        assert!(figures.contains(&wanted), "{wanted} missing:\n{stdout}");
    }
    let memory_rows = figures
        .iter()
        .filter(|f| f.starts_with("resident memory per stored object"))
        .count();
    assert_eq!(memory_rows, 2, "{stdout}");
    // Past the reference and the two create rows, each figure has both backends.
    for row in &targets[3..] {
        assert!(
            row[1].contains("(embedded store)") && row[1].contains("(etcd)"),
            "{row:?}"
        );
        assert!(
            [
                "met",
                "not met",
                "met on the embedded store only",
                "met on the etcd only"
            ]
            .contains(&row[3].as_str()),
            "{row:?}"
        );
    }
    // Each loaded step made exactly the requests asked, without errors.
    let creates = table(&stdout, "| requests in flight |");
    assert_eq!(creates.len(), 6, "{stdout}");
    for row in &creates {
        assert_eq!(row[6], "0", "errors: {row:?}");
    }
    let reads = table(&stdout, "| load |");
    assert_eq!(reads.len(), 6, "{stdout}");
    for row in &reads {
        assert_eq!((row[2].as_str(), row[3].as_str()), ("5", "0"), "{row:?}");
    }
    for (file, series) in [
        ("throughput.svg", "raw etcd (create transactions)"),
        ("memory.svg", "kube-apiserver on etcd"),
    ] {
        let svg = std::fs::read_to_string(plots.path().join(file)).expect("the plot");
        assert!(svg.starts_with("<svg"), "{file}");
        assert!(svg.contains(series), "{file} has no {series}");
        assert!(
            svg.contains("kube-apiserver on the embedded store"),
            "{file}"
        );
    }
}

#[test]
fn tiny_scale_run() {
    let Some(stdout) = run_with(&[
        "--scale",
        "--seconds",
        "120",
        "--requests",
        "4",
        "--scale-pods",
        "12",
        "--scale-namespaces",
        "3",
        "--scale-services",
        "3",
        "--steps",
        "4",
        "--concurrency",
        "2",
    ]) else {
        return;
    };
    assert!(
        stdout.contains("3 namespaces, 3 services and 12 pods stored"),
        "{stdout}"
    );
    let rows = table(&stdout, "| figure |");
    assert_eq!(rows.len(), 4, "{stdout}");
    assert!(rows[1][0].contains("4 made"), "{stdout}");
    assert!(rows[2][0].starts_with("full LIST of every pod"), "{stdout}");
    assert!(rows[3][3] == "met", "a tiny server fits in 8 GiB: {stdout}");
}
