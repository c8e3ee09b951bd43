//! What the server process costs, read from Linux's `/proc/<pid>`: CPU time
//! used so far (user plus system, all threads) and resident memory (current
//! and peak).

use std::time::Duration;

use crate::BenchError;

/// Memory figures of `/proc/<pid>/status`, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss: u64,
    /// `VmHWM`: the most ever resident.
    pub peak: u64,
}

/// One process's `/proc` entry.
pub struct Process {
    pid: u32,
    ticks_per_second: u64,
}

impl Process {
    pub fn new(pid: u32) -> Process {
        // SAFETY: sysconf only reads a system constant.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Process {
            pid,
            // USER_HZ is 100 on every Linux ABI should sysconf fail.
            ticks_per_second: u64::try_from(ticks).ok().filter(|&t| t > 0).unwrap_or(100),
        }
    }

    /// CPU time (user plus system) the process has used.
    pub async fn cpu(&self) -> Result<Duration, BenchError> {
        let text = tokio::fs::read_to_string(format!("/proc/{}/stat", self.pid)).await?;
        let ticks = parse_cpu_ticks(&text)
            .ok_or_else(|| BenchError::Proc(format!("unexpected /proc/{}/stat", self.pid)))?;
        Ok(Duration::from_secs_f64(
            ticks as f64 / self.ticks_per_second as f64,
        ))
    }

    /// Current and peak resident memory.
    pub async fn memory(&self) -> Result<Memory, BenchError> {
        let text = tokio::fs::read_to_string(format!("/proc/{}/status", self.pid)).await?;
        let field = |name| {
            status_kib(&text, name)
                .ok_or_else(|| BenchError::Proc(format!("no {name} in /proc/{}/status", self.pid)))
        };
        Ok(Memory {
            rss: field("VmRSS")? * 1024,
            peak: field("VmHWM")? * 1024,
        })
    }
}

/// `utime + stime` of a `/proc/<pid>/stat` line, in clock ticks.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) is parenthesised and may hold spaces; the
    // fields after it start with field 3, so utime (14) and stime (15) are
    // the 12th and 13th.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// A `Name:   1234 kB` line of `/proc/<pid>/status`, in KiB.
fn status_kib(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_utime_plus_stime() {
        let stat = "4242 (kube apiserver) S 1 4242 4242 0 -1 4194560 1234 0 0 0 \
                    250 75 0 0 20 0 12 0 100 123456789 5000";
        assert_eq!(parse_cpu_ticks(stat), Some(325));
        assert_eq!(parse_cpu_ticks("4242 (x) S 1"), None);
    }

    #[test]
    fn status_fields_in_kib() {
        let status = "Name:\tkube-apiserver\nVmHWM:\t   51200 kB\nVmRSS:\t   40960 kB\n";
        assert_eq!(status_kib(status, "VmRSS"), Some(40960));
        assert_eq!(status_kib(status, "VmHWM"), Some(51200));
        assert_eq!(status_kib(status, "VmSwap"), None);
    }

    #[tokio::test]
    async fn reads_this_process() -> Result<(), BenchError> {
        let me = Process::new(std::process::id());
        let memory = me.memory().await?;
        assert!(memory.rss > 0 && memory.peak >= memory.rss);
        // Burn CPU until the kernel counts a tick (bounded, for a loaded machine).
        let before = me.cpu().await?;
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while me.cpu().await? == before {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no CPU tick counted"
            );
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        Ok(())
    }
}
