//! The webhook backend against a small HTTP server started by the test.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::audit::event::Level;

/// Accepts connections and forwards each request's JSON body.
async fn receiver() -> (u16, mpsc::UnboundedReceiver<(String, serde_json::Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = conn.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    let Some((head, body)) = text.split_once("\r\n\r\n") else {
                        continue;
                    };
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if body.len() < len {
                        continue;
                    }
                    let auth = head
                        .lines()
                        .find_map(|l| l.strip_prefix("authorization: ").map(str::to_owned))
                        .unwrap_or_default();
                    let _ = tx.send((auth, serde_json::from_str(body).unwrap_or_default()));
                    let _ = conn
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                }
            });
        }
    });
    (port, rx)
}

fn kubeconfig(dir: &Path, port: u16) -> std::path::PathBuf {
    let path = dir.join("webhook.kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sink\n  cluster:\n    server: http://127.0.0.1:{port}/events\nusers:\n- name: api\n  user:\n    token: s3cret\ncontexts:\n- name: c\n  context: {{cluster: sink, user: api}}\ncurrent-context: c\n"
    );
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

#[tokio::test]
async fn batch_mode_posts_event_lists() {
    let (port, mut rx) = receiver().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let batch = BatchConfig {
        buffer_size: 100,
        max_batch_size: 3,
        max_batch_wait: Duration::from_millis(200),
        throttle: None,
    };
    let backend = WebhookBackend::start(
        &kubeconfig(dir.path(), port),
        Mode::Batch(batch),
        Duration::from_millis(10),
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for i in 0..4 {
        assert!(
            backend
                .process(&Event::new(Level::Metadata, format!("id{i}")))
                .await
        );
    }
    let mut ids = Vec::new();
    let mut sizes = Vec::new();
    while ids.len() < 4 {
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        let Ok(Some((auth, list))) = got else {
            panic!("no batch arrived; got {ids:?}");
        };
        assert_eq!(auth, "Bearer s3cret");
        assert_eq!(list["kind"], "EventList");
        assert_eq!(list["apiVersion"], "audit.k8s.io/v1");
        let items = list["items"].as_array().cloned().unwrap_or_default();
        sizes.push(items.len());
        ids.extend(
            items
                .iter()
                .map(|i| i["auditID"].as_str().unwrap_or_default().to_owned()),
        );
    }
    assert_eq!(ids, ["id0", "id1", "id2", "id3"]);
    // The first three fill a batch; the last one waits out max_batch_wait.
    assert_eq!(sizes, [3, 1]);
}

#[tokio::test]
async fn blocking_strict_reports_an_unreachable_webhook() {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    drop(listener);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = kubeconfig(dir.path(), port);
    let strict = WebhookBackend::start(&path, Mode::BlockingStrict, Duration::from_millis(1), None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !strict
            .process(&Event::new(Level::Metadata, "x".into()))
            .await
    );
    let lenient = WebhookBackend::start(&path, Mode::Blocking, Duration::from_millis(1), None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        lenient
            .process(&Event::new(Level::Metadata, "x".into()))
            .await
    );
}

#[tokio::test]
async fn truncation_splits_batches_by_bytes() {
    let (port, mut rx) = receiver().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let batch = BatchConfig {
        buffer_size: 100,
        max_batch_size: 10,
        max_batch_wait: Duration::from_millis(200),
        throttle: None,
    };
    let one = serde_json::to_vec(&Event::new(Level::Metadata, "id0".into()))
        .map(|v| v.len())
        .unwrap_or_default();
    // Room for two events per request, not three.
    let truncate = Truncation {
        max_event_size: one * 2,
        max_batch_size: one * 2 + one / 2,
    };
    let backend = WebhookBackend::start(
        &kubeconfig(dir.path(), port),
        Mode::Batch(batch),
        Duration::from_millis(10),
        Some(truncate),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for i in 0..5 {
        assert!(
            backend
                .process(&Event::new(Level::Metadata, format!("id{i}")))
                .await
        );
    }
    let mut sizes = Vec::new();
    while sizes.iter().sum::<usize>() < 5 {
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        let Ok(Some((_, list))) = got else {
            panic!("no batch arrived; got {sizes:?}");
        };
        sizes.push(list["items"].as_array().map_or(0, Vec::len));
    }
    assert_eq!(sizes, [2, 2, 1]);
}
