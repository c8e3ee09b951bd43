//! The log backend: lines written in each format and mode, and rotation.

use super::*;
use crate::audit::event::{Level, ResponseStatus, Stage};
use crate::audit::BatchConfig;

fn event(id: &str) -> Event {
    let mut ev = Event::new(Level::Metadata, id.into());
    ev.stage = Stage::ResponseComplete;
    ev.verb = "list".into();
    ev.request_uri = "/api/v1/namespaces/default/pods".into();
    ev.user.username = "alice".into();
    ev.user.groups = vec!["dev".into(), "system:authenticated".into()];
    ev.source_ips = vec!["127.0.0.1".into()];
    ev.user_agent = "kubectl/v1.32".into();
    ev.response_status = Some(ResponseStatus::code(200));
    ev
}

fn config(path: PathBuf, format: Format, mode: Mode) -> LogConfig {
    LogConfig {
        path,
        max_age_days: 0,
        max_backups: 0,
        max_size_mb: 0,
        format,
        mode,
        truncate: None,
        compress: false,
    }
}

#[tokio::test]
async fn blocking_mode_writes_json_lines_before_returning() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("sub/audit.log");
    let backend = LogBackend::start(config(path.clone(), Format::Json, Mode::Blocking))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(backend.process(&event("a")).await);
    assert!(backend.process(&event("b")).await);
    let text = fs::read_to_string(&path).unwrap_or_default();
    let ids: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap_or_default())
        .map(|v| v["auditID"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o600));
    }
}

#[tokio::test]
async fn batch_mode_drops_events_when_the_buffer_is_full() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("audit.log");
    let batch = BatchConfig {
        buffer_size: 1,
        max_batch_size: 1,
        max_batch_wait: Duration::ZERO,
        throttle: None,
    };
    let backend = LogBackend::start(config(path.clone(), Format::Legacy, Mode::Batch(batch)))
        .unwrap_or_else(|e| panic!("{e}"));
    // Never waits; at least the first event is queued.
    let results: Vec<bool> = futures::future::join_all((0..50).map(|i| {
        let ev = event(&i.to_string());
        let backend = &backend;
        async move { backend.process(&ev).await }
    }))
    .await;
    assert!(results[0]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let written = loop {
        let text = fs::read_to_string(&path).unwrap_or_default();
        if !text.is_empty() || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let accepted = results.iter().filter(|ok| **ok).count();
    assert!(written.lines().count() >= 1 && accepted >= 1);
    assert!(written.lines().all(|l| l.contains(" AUDIT: id=")));
}

#[test]
fn legacy_lines_follow_upstream() {
    let mut ev = event("x1");
    ev.request_received_timestamp = super::super::event::MicroTime(
        chrono::DateTime::parse_from_rfc3339("2025-01-02T03:04:05.120Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default(),
    );
    assert_eq!(
        legacy_line(&ev),
        "2025-01-02T03:04:05.12Z AUDIT: id=\"x1\" stage=\"ResponseComplete\" ip=\"127.0.0.1\" \
         method=\"list\" user=\"alice\" groups=\"\\\"dev\\\",\\\"system:authenticated\\\"\" \
         as=\"<self>\" asgroups=\"<lookup>\" user-agent=\"kubectl/v1.32\" namespace=\"<none>\" \
         uri=\"/api/v1/namespaces/default/pods\" response=\"200\"\n"
    );
}

#[test]
fn rotation_keeps_at_most_max_backups() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("audit.log");
    let mut cfg = config(path.clone(), Format::Json, Mode::Blocking);
    cfg.max_backups = 2;
    let mut file = RotatingFile::open(&cfg).unwrap_or_else(|e| panic!("{e}"));
    file.max_size = 100;
    for _ in 0..6 {
        file.write_all(&[b'x'; 60])
            .unwrap_or_else(|e| panic!("{e}"));
        // Backups are named by the millisecond.
        std::thread::sleep(Duration::from_millis(3));
    }
    file.flush().unwrap_or_else(|e| panic!("{e}"));
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("audit.log"));
    for backup in &names[..2] {
        let stamp = backup
            .strip_prefix("audit-")
            .and_then(|s| s.strip_suffix(".log"))
            .unwrap_or_default();
        assert!(
            NaiveDateTime::parse_from_str(stamp, BACKUP_TIME_FORMAT).is_ok(),
            "{backup}"
        );
    }
    assert_eq!(fs::metadata(&path).map(|m| m.len()).ok(), Some(60));
}

#[test]
fn compressed_backups_are_gzipped_and_counted() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("audit.log");
    let mut cfg = config(path.clone(), Format::Json, Mode::Blocking);
    cfg.max_backups = 1;
    cfg.compress = true;
    let mut file = RotatingFile::open(&cfg).unwrap_or_else(|e| panic!("{e}"));
    file.max_size = 100;
    for fill in [b'a', b'b', b'c'] {
        file.write_all(&[fill; 60])
            .unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(Duration::from_millis(3));
    }
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    // One backup kept (the newest, holding the b's), compressed.
    assert_eq!(names.len(), 2, "{names:?}");
    let backup = &names[0];
    assert!(
        backup.starts_with("audit-") && backup.ends_with(".log.gz"),
        "{backup}"
    );
    let gz = fs::File::open(dir.path().join(backup)).unwrap_or_else(|e| panic!("{e}"));
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut text)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(text, vec![b'b'; 60]);
}

#[tokio::test]
async fn truncation_drops_objects_of_large_events() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("audit.log");
    let mut cfg = config(path.clone(), Format::Json, Mode::Blocking);
    cfg.truncate = Some(Truncation {
        max_event_size: 2_000,
        max_batch_size: 20_000,
    });
    let backend = LogBackend::start(cfg).unwrap_or_else(|e| panic!("{e}"));
    let mut ev = event("big");
    ev.level = Level::RequestResponse;
    ev.response_object = Some(serde_json::json!({"data": "x".repeat(4_000)}));
    assert!(backend.process(&ev).await);
    let text = fs::read_to_string(&path).unwrap_or_default();
    let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_default();
    assert_eq!(line["auditID"], "big");
    assert_eq!(line["annotations"]["audit.k8s.io/truncated"], "true");
    assert!(line.get("responseObject").is_none());
}
