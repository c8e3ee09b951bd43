//! The log backend (`--audit-log-path`, upstream's `plugin/pkg/audit/log`):
//! one line per event, JSON or upstream's legacy text, to a file rotated as
//! upstream's lumberjack writer does (`--audit-log-maxsize` megabytes,
//! backups named `<name>-<UTC time><ext>`, at most `--audit-log-maxbackup`
//! of them, none older than `--audit-log-maxage` days) or to standard
//! output for `-`. A dedicated thread does all file I/O; requests only
//! queue lines (and, in the blocking modes, wait for them to be written).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{NaiveDateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use super::event::Event;
use super::metrics;
use super::truncate::{self, Truncation};
use super::{Backend, Mode};

/// `--audit-log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Legacy,
}

/// Where and how the log is written.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// `--audit-log-path`; `-` is standard output.
    pub path: PathBuf,
    /// `--audit-log-maxage` (days; 0 keeps backups regardless of age).
    pub max_age_days: u64,
    /// `--audit-log-maxbackup` (0 keeps all).
    pub max_backups: usize,
    /// `--audit-log-maxsize` (megabytes; 0 never rotates).
    pub max_size_mb: u64,
    pub format: Format,
    pub mode: Mode,
    /// `--audit-log-truncate-*` when enabled (JSON lines only: legacy
    /// lines never carry objects).
    pub truncate: Option<Truncation>,
    /// `--audit-log-compress`: gzip rotated files.
    pub compress: bool,
}

/// Why the log cannot be opened.
#[derive(Debug, thiserror::Error)]
#[error("ensureLogFile: {path}: {source}")]
pub struct LogError {
    path: String,
    source: io::Error,
}

type Ack = Option<oneshot::Sender<bool>>;

/// The log backend; see the module doc.
pub struct LogBackend {
    tx: mpsc::Sender<(Vec<u8>, Ack)>,
    mode: Mode,
    format: Format,
    truncate: Option<Truncation>,
}

/// Queue length of the blocking modes (requests wait when it is full).
const BLOCKING_QUEUE: usize = 1024;
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

impl LogBackend {
    /// Opens (creating it and its directory, mode 0600) the log and starts
    /// its writer thread.
    pub fn start(config: LogConfig) -> Result<LogBackend, LogError> {
        let err = |source| LogError {
            path: config.path.display().to_string(),
            source,
        };
        let out: Box<dyn Write + Send> = if config.path.as_os_str() == "-" {
            Box::new(io::stdout())
        } else {
            Box::new(RotatingFile::open(&config).map_err(err)?)
        };
        let capacity = match config.mode {
            Mode::Batch(b) => b.buffer_size.max(1),
            _ => BLOCKING_QUEUE,
        };
        let (tx, rx) = mpsc::channel(capacity);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_loop(rx, out))
            .map_err(err)?;
        Ok(LogBackend {
            tx,
            mode: config.mode,
            format: config.format,
            truncate: config.truncate,
        })
    }
}

fn write_loop(mut rx: mpsc::Receiver<(Vec<u8>, Ack)>, mut out: Box<dyn Write + Send>) {
    let mut acks = Vec::new();
    while let Some(first) = rx.blocking_recv() {
        let mut ok = true;
        let mut next = Some(first);
        // Everything queued meanwhile goes out with one flush.
        while let Some((line, ack)) = next.take() {
            if let Err(e) = out.write_all(&line) {
                metrics::global().plugin_error("log", 1);
                tracing::error!(error = %e, "writing the audit log failed");
                ok = false;
            }
            acks.extend(ack);
            next = rx.try_recv().ok();
        }
        if let Err(e) = out.flush() {
            tracing::error!(error = %e, "flushing the audit log failed");
            ok = false;
        }
        for ack in acks.drain(..) {
            let _ = ack.send(ok);
        }
    }
}

#[async_trait]
impl Backend for LogBackend {
    async fn process(&self, event: &Event) -> bool {
        let line = match self.format {
            Format::Json => match truncate::encode(event, self.truncate) {
                Ok(mut v) => {
                    v.push(b'\n');
                    v
                }
                Err(e) => {
                    metrics::global().plugin_error(e.plugin("log"), 1);
                    tracing::error!(error = %e, audit_id = %event.audit_id, "encoding an audit event failed");
                    return self.mode.result(false);
                }
            },
            Format::Legacy => legacy_line(event).into_bytes(),
        };
        if let Mode::Batch(_) = self.mode {
            if self.tx.try_send((line, None)).is_err() {
                metrics::global().plugin_error("buffered", 1);
                tracing::warn!(audit_id = %event.audit_id, "audit log buffer full; event dropped");
                return false;
            }
            return true;
        }
        let (ack, done) = oneshot::channel();
        if self.tx.send((line, Some(ack))).await.is_err() {
            return self.mode.result(false);
        }
        self.mode.result(done.await.unwrap_or(false))
    }

    fn name(&self) -> &'static str {
        "log"
    }
}

/// Go's `%q` of a string (close enough: JSON string quoting).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Go's RFC3339Nano: fractional seconds without trailing zeros.
fn rfc3339_nano(t: &chrono::DateTime<Utc>) -> String {
    let frac = format!("{:09}", t.timestamp_subsec_nanos());
    let frac = frac.trim_end_matches('0');
    let base = t.format("%Y-%m-%dT%H:%M:%S");
    if frac.is_empty() {
        format!("{base}Z")
    } else {
        format!("{base}.{frac}Z")
    }
}

/// Upstream's one-line legacy format.
pub fn legacy_line(ev: &Event) -> String {
    let joined = |list: &[String]| list.iter().map(|g| quote(g)).collect::<Vec<_>>().join(",");
    let (user, groups) = if ev.user.username.is_empty() {
        ("<none>".to_owned(), "<none>".to_owned())
    } else if ev.user.groups.is_empty() {
        (ev.user.username.clone(), "<none>".to_owned())
    } else {
        (ev.user.username.clone(), joined(&ev.user.groups))
    };
    let (as_user, as_groups) = match &ev.impersonated_user {
        Some(u) => (u.username.clone(), joined(&u.groups)),
        None => ("<self>".to_owned(), "<lookup>".to_owned()),
    };
    let namespace = ev
        .object_ref
        .as_ref()
        .map(|o| o.namespace.as_str())
        .filter(|ns| !ns.is_empty())
        .unwrap_or("<none>");
    let response = ev
        .response_status
        .as_ref()
        .map_or("<deferred>".to_owned(), |s| s.code.to_string());
    let ip = ev.source_ips.first().map_or("<unknown>", String::as_str);
    format!(
        "{} AUDIT: id={} stage={} ip={} method={} user={} groups={} as={} asgroups={} user-agent={} namespace={} uri={} response=\"{response}\"\n",
        rfc3339_nano(&ev.request_received_timestamp.0),
        quote(&ev.audit_id),
        quote(ev.stage.as_str()),
        quote(ip),
        quote(&ev.verb),
        quote(&user),
        quote(&groups),
        quote(&as_user),
        quote(&as_groups),
        quote(&ev.user_agent),
        quote(namespace),
        quote(&ev.request_uri),
    )
}

/// A file that rotates itself by size.
struct RotatingFile {
    path: PathBuf,
    file: BufWriter<File>,
    size: u64,
    max_size: u64,
    max_backups: usize,
    max_age: Option<Duration>,
    compress: bool,
}

fn open_append(path: &Path) -> io::Result<File> {
    private_options().append(true).open(path)
}

/// Options creating files readable by their owner only.
fn private_options() -> OpenOptions {
    let mut opts = OpenOptions::new();
    opts.create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts
}

impl RotatingFile {
    fn open(config: &LogConfig) -> io::Result<RotatingFile> {
        if let Some(dir) = config.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = open_append(&config.path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: config.path.clone(),
            file: BufWriter::new(file),
            size,
            max_size: config.max_size_mb.saturating_mul(1024 * 1024),
            max_backups: config.max_backups,
            max_age: (config.max_age_days > 0)
                .then(|| Duration::from_secs(config.max_age_days.saturating_mul(86_400))),
            compress: config.compress,
        })
    }

    /// `<stem>-` and `<ext>` around a backup's timestamp.
    fn backup_parts(&self) -> (String, String) {
        let stem = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ext = self
            .path
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        (format!("{stem}-"), ext)
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        let (prefix, ext) = self.backup_parts();
        let stamp = Utc::now().format(BACKUP_TIME_FORMAT);
        let backup = self.path.with_file_name(format!("{prefix}{stamp}{ext}"));
        fs::rename(&self.path, &backup)?;
        self.file = BufWriter::new(open_append(&self.path)?);
        self.size = 0;
        if self.compress {
            gzip(&backup)?;
        }
        self.remove_old_backups()
    }

    fn remove_old_backups(&self) -> io::Result<()> {
        let (prefix, ext) = self.backup_parts();
        let dir = match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        };
        let mut backups: Vec<(NaiveDateTime, PathBuf)> = fs::read_dir(&dir)?
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let name = name.strip_suffix(GZ).unwrap_or(&name);
                let stamp = name.strip_prefix(&prefix)?.strip_suffix(ext.as_str())?;
                let t = NaiveDateTime::parse_from_str(stamp, BACKUP_TIME_FORMAT).ok()?;
                Some((t, entry.path()))
            })
            .collect();
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let now = Utc::now().naive_utc();
        for (i, (t, path)) in backups.iter().enumerate() {
            let too_many = self.max_backups > 0 && i >= self.max_backups;
            let too_old = self
                .max_age
                .is_some_and(|age| (now - *t).to_std().is_ok_and(|elapsed| elapsed > age));
            if too_many || too_old {
                fs::remove_file(path)?;
            }
        }
        Ok(())
    }
}

/// The suffix of compressed backups.
const GZ: &str = ".gz";

/// Replaces `path` with `<path>.gz` (mode 0600), as lumberjack's compression.
fn gzip(path: &Path) -> io::Result<()> {
    let mut target = path.as_os_str().to_owned();
    target.push(GZ);
    let target = PathBuf::from(target);
    let mut source = File::open(path)?;
    let out = private_options().write(true).truncate(true).open(&target)?;
    let mut encoder =
        flate2::write::GzEncoder::new(BufWriter::new(out), flate2::Compression::default());
    io::copy(&mut source, &mut encoder)?;
    encoder.finish()?.flush()?;
    fs::remove_file(path)
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let len = buf.len() as u64;
        if self.max_size > 0 && self.size > 0 && self.size + len > self.max_size {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
