//! The Markdown the benchmark prints: a parameters line, a startup table and
//! a load table with one row per phase and protocol, then the first error of
//! any row that had failures.

use std::fmt::Write;
use std::time::Duration;

use crate::phases::{Measured, Phase, Row};
use crate::procfs::Memory;
use crate::server::Startup;
use crate::Args;

/// The load table's header.
const LOAD_HEADER: &str = "| phase | protocol | requests | errors | requests/s | p50 | p99 \
                               | server CPU-s | requests per CPU-s | RSS after |";

/// Renders everything measured.
pub fn render(args: &Args, startup: &Startup, measured: &Measured, after: &Memory) -> String {
    let mut out = String::new();
    let storage = if args.etcd {
        "etcd (started for the run)"
    } else {
        "the embedded store"
    };
    let _ = writeln!(
        out,
        "kube-apiserver {} ({}) on {storage}; {} requests in flight (HTTP/2 over {} \
         connection(s), HTTP/1.1 one connection each); {:?} per phase; ConfigMaps with a \
         {} B value\n",
        measured.version,
        args.kube_apiserver.display(),
        args.concurrency,
        args.connections.min(args.concurrency),
        args.seconds,
        args.value_bytes,
    );
    out.push_str("| startup | |\n|---|---:|\n");
    let startup_rows = [
        (
            "spawn → admin.kubeconfig written",
            millis(startup.kubeconfig),
        ),
        ("spawn → `/livez` 200", millis(startup.livez)),
        ("spawn → `/readyz` 200", millis(startup.readyz)),
        ("server CPU until ready", seconds(startup.cpu)),
        ("RSS when ready (VmRSS)", mib(startup.memory.rss)),
        ("RSS after the load (VmRSS)", mib(after.rss)),
        ("peak RSS (VmHWM)", mib(after.peak)),
    ];
    for (label, value) in startup_rows {
        let _ = writeln!(out, "| {label} | {value} |");
    }
    let _ = write!(out, "\n{LOAD_HEADER}\n|---|---|");
    out.push_str(&"---:|".repeat(LOAD_HEADER.matches('|').count() - 3));
    out.push('\n');
    for row in &measured.rows {
        let _ = writeln!(out, "{}", load_row(args, row));
    }
    for row in measured.rows.iter().filter(|r| r.load.errors > 0) {
        let _ = write!(
            out,
            "\n{} over {}: first error: {}",
            phase_label(args, row.phase),
            row.protocol.label(),
            row.load.first_error.as_deref().unwrap_or("unknown")
        );
    }
    out
}

fn load_row(args: &Args, row: &Row) -> String {
    let load = &row.load;
    let per_cpu = if load.cpu.is_zero() {
        "n/a".to_string()
    } else {
        group((load.requests as f64 / load.cpu.as_secs_f64()).round() as u64)
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {per_cpu} | {} |",
        phase_label(args, row.phase),
        row.protocol.label(),
        group(load.requests),
        group(load.errors),
        rate(load.requests, load.elapsed),
        load.p50.map_or_else(|| "n/a".to_string(), micros),
        load.p99.map_or_else(|| "n/a".to_string(), micros),
        seconds(load.cpu),
        mib(row.rss),
    )
}

fn phase_label(args: &Args, phase: Phase) -> String {
    let n = group(args.list_objects);
    match phase {
        Phase::Get => "GET one ConfigMap".to_string(),
        Phase::ListJson => format!("LIST {n} ConfigMaps, JSON"),
        Phase::ListProtobuf => format!("LIST {n} ConfigMaps, protobuf"),
        Phase::Create => "CREATE ConfigMap".to_string(),
        Phase::Watch => format!(
            "watch fan-out: {} watchers × {} creates (events received; latency create → event)",
            group(args.watchers as u64),
            group(args.watch_events)
        ),
    }
}

/// `count` per second over `elapsed`, grouped in thousands.
fn rate(count: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return "n/a".to_string();
    }
    group((count as f64 / secs).round() as u64)
}

/// Microseconds as milliseconds with three significant digits (µs below
/// 1 ms, seconds from 1 s).
pub fn micros(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    if us < 1000 {
        format!("{us} µs")
    } else if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 100.0 {
        format!("{ms:.1} ms")
    } else if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.2} s", ms / 1000.0)
    }
}

pub fn millis(d: Duration) -> String {
    micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

pub fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// `1234567` as `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_format() {
        assert_eq!(group(999), "999");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(micros(450), "450 µs");
        assert_eq!(micros(4_500), "4.50 ms");
        assert_eq!(micros(123_456), "123 ms");
        assert_eq!(micros(11_347_000), "11.35 s");
        assert_eq!(mib(3 * 1024 * 1024 / 2), "1.5 MiB");
        assert_eq!(seconds(Duration::from_millis(1250)), "1.25 s");
        assert_eq!(rate(3000, Duration::from_secs(2)), "1,500");
        assert_eq!(rate(5, Duration::ZERO), "n/a");
    }

    #[test]
    fn load_table_has_ten_columns() {
        assert_eq!(LOAD_HEADER.matches('|').count(), 11);
    }
}
