//! The `tracing` layer that writes every enabled event in the configured
//! format (what klog's logger and the JSON logr sink do upstream), and the
//! flush daemon (klog's `StartFlushDaemon`).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::layer::{Context, Layer};

use super::entry::Entry;
use super::{json, klog, verbosity, Format};

/// Where lines go: one `write` per line, as klog writes to stderr.
#[derive(Clone)]
pub struct Output(Arc<Mutex<Box<dyn Write + Send>>>);

impl Output {
    pub fn new(sink: Box<dyn Write + Send>) -> Output {
        Output(Arc::new(Mutex::new(sink)))
    }

    fn write(&self, line: &str) {
        let mut sink = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = sink.write_all(line.as_bytes());
    }

    /// klog's `Flush`.
    pub fn flush(&self) {
        let _ = self.0.lock().unwrap_or_else(|e| e.into_inner()).flush();
    }

    /// Flushes every `interval` for the life of the process.
    pub fn start_flush_daemon(&self, interval: Duration) {
        if interval.is_zero() {
            return;
        }
        let output = self.clone();
        let _ = std::thread::Builder::new()
            .name("log-flush".into())
            .spawn(move || loop {
                std::thread::sleep(interval);
                output.flush();
            });
    }
}

pub struct LogLayer {
    format: Format,
    output: Output,
}

impl LogLayer {
    pub fn new(format: Format, output: Output) -> LogLayer {
        LogLayer { format, output }
    }
}

impl<S: Subscriber> Layer<S> for LogLayer {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // Spans are not logged; events are asked about each time, since
        // the verbosity changes at run time.
        if metadata.is_span() {
            Interest::never()
        } else {
            Interest::sometimes()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        metadata.is_event()
            && verbosity::enabled(verbosity::default_v(metadata.level()), metadata.file())
    }

    fn max_level_hint(&self) -> Option<tracing_subscriber::filter::LevelFilter> {
        Some(verbosity::level_for(verbosity::max_v()).into())
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let normalized = event.normalized_metadata();
        let metadata = normalized.as_ref().unwrap_or_else(|| event.metadata());
        let entry = Entry::from_event(event, metadata.file(), metadata.line());
        if entry.v > verbosity::default_v(metadata.level())
            && !verbosity::enabled(entry.v, metadata.file())
        {
            return;
        }
        let line = match self.format {
            Format::Text => klog::format(&entry, chrono::Local::now(), std::process::id()),
            Format::Json => json::format(&entry, SystemTime::now()),
        };
        self.output.write(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    /// A sink the test can read.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn logged(format: Format, log: impl FnOnce()) -> String {
        let buffer = Buffer::default();
        let layer = LogLayer::new(format, Output::new(Box::new(buffer.clone())));
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), log);
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    // The global verbosity stays 0 in these tests (tests run in parallel).
    #[test]
    fn events_are_written_in_klog_text() {
        let out = logged(Format::Text, || {
            tracing::info!(verb = "GET", resp = 200, "HTTP");
            tracing::warn!(error = %"boom", "reloading failed");
            tracing::debug!("hidden at -v=0");
            tracing::info!(v = 3, "hidden too");
        });
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].starts_with('I'), "{out}");
        assert!(lines[0].contains(" layer.rs:"), "{out}");
        assert!(
            lines[0].ends_with("] \"HTTP\" verb=\"GET\" resp=200"),
            "{out}"
        );
        assert!(lines[1].starts_with('W'), "{out}");
        assert!(
            lines[1].ends_with("] \"reloading failed\" err=\"boom\""),
            "{out}"
        );
    }

    #[test]
    fn events_are_written_as_json() {
        let out = logged(Format::Json, || {
            tracing::info!(n = 1, "hello");
            tracing::error!(error = "boom", "failed");
        });
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].contains(",\"caller\":\"logs/layer.rs:"), "{out}");
        assert!(
            lines[0].ends_with(",\"msg\":\"hello\",\"v\":0,\"n\":1}"),
            "{out}"
        );
        assert!(
            lines[1].ends_with(",\"msg\":\"failed\",\"err\":\"boom\"}"),
            "{out}"
        );
    }
}
