//! The process series every Go binary exposes (`process_*`), read from
//! /proc/self at scrape time; absent where /proc is not available.

use std::fs;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Linux reports CPU times in USER_HZ ticks, fixed at 100 for user space.
const TICKS_PER_SECOND: f64 = 100.0;

#[derive(Debug, Default)]
pub(super) struct ProcessCollector;

impl ProcessCollector {
    pub(super) fn new() -> Self {
        ProcessCollector
    }
}

/// One reading of /proc; a field is `None` when its file could not be read.
#[derive(Debug)]
pub(super) struct Sample {
    pub cpu_seconds: Option<f64>,
    pub start_time_seconds: Option<f64>,
    pub virtual_memory_bytes: Option<f64>,
    pub resident_memory_bytes: Option<f64>,
    pub open_fds: Option<f64>,
    pub max_fds: Option<f64>,
}

impl Sample {
    pub(super) fn read() -> Sample {
        let stat = fs::read_to_string("/proc/self/stat").ok();
        let stat = stat.as_deref().and_then(parse_stat);
        let boot_time = fs::read_to_string("/proc/stat")
            .ok()
            .as_deref()
            .and_then(parse_boot_time);
        Sample {
            cpu_seconds: stat.map(|s| s.cpu_ticks / TICKS_PER_SECOND),
            start_time_seconds: stat
                .zip(boot_time)
                .map(|(s, boot)| boot + s.start_ticks / TICKS_PER_SECOND),
            virtual_memory_bytes: stat.map(|s| s.virtual_bytes),
            resident_memory_bytes: fs::read_to_string("/proc/self/status")
                .ok()
                .as_deref()
                .and_then(parse_rss),
            open_fds: fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as f64),
            max_fds: fs::read_to_string("/proc/self/limits")
                .ok()
                .as_deref()
                .and_then(parse_max_fds),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Stat {
    pub cpu_ticks: f64,
    pub start_ticks: f64,
    pub virtual_bytes: f64,
}

/// `/proc/self/stat`: the command name (field 2) may hold spaces and
/// parentheses, so fields are counted from the last `)`.
pub(super) fn parse_stat(text: &str) -> Option<Stat> {
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // fields[0] is field 3 (state).
    let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
    Some(Stat {
        cpu_ticks: field(14)? + field(15)?,
        start_ticks: field(22)?,
        virtual_bytes: field(23)?,
    })
}

/// `btime` of /proc/stat: boot time in seconds since the epoch.
pub(super) fn parse_boot_time(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// `VmRSS` of /proc/self/status, in kB.
pub(super) fn parse_rss(text: &str) -> Option<f64> {
    let kb: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024.0)
}

/// The soft `Max open files` limit of /proc/self/limits.
pub(super) fn parse_max_fds(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: Option<f64>,
) -> Result<(), std::fmt::Error> {
    let Some(v) = v else { return Ok(()) };
    let metric = ConstGauge::new(v);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = Sample::read();
        if let Some(cpu) = s.cpu_seconds {
            let metric = ConstCounter::new(cpu);
            metric.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "CPU time (user and system) used by the process, in seconds.",
                None,
                metric.metric_type(),
            )?)?;
        }
        let e = &mut encoder;
        gauge(
            e,
            "process_max_fds",
            "Soft limit on open file descriptors.",
            s.max_fds,
        )?;
        gauge(
            e,
            "process_open_fds",
            "File descriptors open now.",
            s.open_fds,
        )?;
        gauge(
            e,
            "process_resident_memory_bytes",
            "Resident set size in bytes.",
            s.resident_memory_bytes,
        )?;
        gauge(
            e,
            "process_start_time_seconds",
            "When the process started, in seconds since the Unix epoch.",
            s.start_time_seconds,
        )?;
        gauge(
            e,
            "process_virtual_memory_bytes",
            "Virtual memory size of the process in bytes.",
            s.virtual_memory_bytes,
        )
    }
}
