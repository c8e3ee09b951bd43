//! The Markdown table the benchmark prints: one row per figure, one column
//! per backend.

use std::fmt::Write;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::backend::BackendKind;
use crate::list::ListTimes;
use crate::watch::FanOut;
use crate::workload::Creates;
use crate::Args;

/// Everything measured on one backend.
pub struct BackendResults {
    pub kind: BackendKind,
    /// The create measurements, one per entry of `--writers`.
    pub writes: Vec<Creates>,
    pub list: ListTimes,
    pub fan_out: FanOut,
}

/// One table row: its label and a cell per backend.
type Row = (String, Vec<String>);

/// Renders the parameters line and the table.
pub fn render(args: &Args, results: &[BackendResults]) -> String {
    let buffer = args
        .watcher_buffer
        .map_or_else(|| "the whole stream".to_string(), |b| b.to_string());
    let mut out = format!(
        "{} B data field; creates for {:?} per row; lists repeated for {:?}; \
         fan-out stream of {} creates from {} writer(s), watcher buffer {buffer}\n\n",
        args.value_bytes,
        args.write_seconds,
        args.list_seconds,
        args.watch_events,
        args.watch_writers
    );
    out.push_str("| measurement |");
    for r in results {
        let _ = write!(out, " {} |", r.kind.name());
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(results.len()));
    out.push('\n');
    for (label, cells) in rows(args, results) {
        let _ = write!(out, "| {label} |");
        for cell in cells {
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

fn rows(args: &Args, results: &[BackendResults]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, &writers) in args.writers.iter().enumerate() {
        rows.push((
            format!("durable creates/s, {writers} writer(s)"),
            cells(results, |r| {
                creates(r, i).map_or_else(String::new, |c| rate(c.count, c.elapsed))
            }),
        ));
        rows.push((
            format!("create latency p50 / p99, {writers} writer(s)"),
            cells(results, |r| {
                creates(r, i).map_or_else(String::new, |c| {
                    format!(
                        "{} / {}",
                        quantile(&c.latency, 0.5),
                        quantile(&c.latency, 0.99)
                    )
                })
            }),
        ));
    }
    let n = group(args.list_objects as u64);
    rows.push((
        format!("raw KV range of the {n} keys (backend alone, no decoding), p50"),
        cells(results, |r| quantile(&r.list.kv, 0.5)),
    ));
    rows.push((
        format!("list {n} objects through the Store (KV), per list, p50"),
        cells(results, |r| quantile(&r.list.store, 0.5)),
    ));
    rows.push((
        format!("list {n} objects through the Cacher (`Any`), per list, p50"),
        cells(results, |r| quantile(&r.list.cacher, 0.5)),
    ));
    rows.push((
        format!("JSON-encode the {n}-object list (what a response adds), p50"),
        cells(results, |r| quantile(&r.list.encode, 0.5)),
    ));
    let w = group(args.watchers as u64);
    rows.push((
        format!("watch fan-out: events/s delivered in total to {w} Cacher watchers"),
        cells(results, |r| {
            rate(r.fan_out.delivered, r.fan_out.delivery_time)
        }),
    ));
    rows.push((
        "fan-out write stream: creates/s".to_string(),
        cells(results, |r| rate(r.fan_out.writes, r.fan_out.write_time)),
    ));
    rows.push((
        "fan-out: events delivered / expected; watchers cut off".to_string(),
        cells(results, |r| {
            let expected = r.fan_out.writes.saturating_mul(r.fan_out.watchers as u64);
            format!(
                "{} / {}; {}",
                group(r.fan_out.delivered),
                group(expected),
                r.fan_out.terminated
            )
        }),
    ));
    rows
}

/// The create measurement of row `i`, if the backend has it.
fn creates(r: &BackendResults, i: usize) -> Option<&Creates> {
    r.writes.get(i)
}

fn cells(results: &[BackendResults], cell: impl Fn(&BackendResults) -> String) -> Vec<String> {
    results.iter().map(cell).collect()
}

/// `count` per second over `elapsed`, grouped in thousands.
fn rate(count: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return "n/a".to_string();
    }
    // Rates are far below 2^53, where f64 is exact for integers.
    group((count as f64 / secs).round() as u64)
}

/// A quantile of a microsecond histogram, in milliseconds (µs below 1 ms).
fn quantile(histogram: &Histogram<u64>, q: f64) -> String {
    if histogram.is_empty() {
        return "n/a".to_string();
    }
    millis(histogram.value_at_quantile(q))
}

fn millis(micros: u64) -> String {
    let ms = micros as f64 / 1000.0;
    if micros < 1000 {
        format!("{micros} µs")
    } else if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 100.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// `1234567` as `1,234,567`.
fn group(n: u64) -> String {
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
    fn groups_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
    }

    #[test]
    fn millis_keep_three_significant_digits() {
        assert_eq!(millis(450), "450 µs");
        assert_eq!(millis(4_500), "4.50 ms");
        assert_eq!(millis(12_345), "12.3 ms");
        assert_eq!(millis(123_456), "123 ms");
    }

    #[test]
    fn rate_divides_by_elapsed_time() {
        assert_eq!(rate(3000, Duration::from_secs(2)), "1,500");
        assert_eq!(rate(5, Duration::ZERO), "n/a");
    }
}
