//! The two storage backends under test, each opened fresh for one run: the
//! embedded store in a temporary directory, and a real etcd process started
//! for the run on free loopback ports. Both keep their data in the same
//! parent directory, so both pay the same disk's fsync.

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use storage::Kv;
use storage_embedded::EmbeddedKv;
use storage_etcd::{EtcdConfig, EtcdKv};
use tempfile::TempDir;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::BenchError;

/// How long etcd may take to answer after being launched.
const ETCD_STARTUP: Duration = Duration::from_secs(30);

/// Which backend to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    Embedded,
    Etcd,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Embedded => "embedded",
            BackendKind::Etcd => "etcd",
        }
    }
}

/// What keeps a backend alive; torn down by [`Backend::shutdown`].
enum Resources {
    Embedded(EmbeddedKv),
    Etcd(Child),
}

/// An open backend. Fields drop in order: the data directory goes last.
pub struct Backend {
    kv: Arc<dyn Kv>,
    resources: Resources,
    dir: TempDir,
}

impl Backend {
    /// Opens `kind` with its data in a new directory under `parent`.
    pub async fn open(
        kind: BackendKind,
        parent: &Path,
        etcd_binary: &Path,
    ) -> Result<Backend, BenchError> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("storage-bench-{}-", kind.name()))
            .tempdir_in(parent)?;
        match kind {
            BackendKind::Embedded => {
                let kv = EmbeddedKv::open(&dir.path().join("data"))?;
                Ok(Backend {
                    kv: Arc::new(kv.clone()),
                    resources: Resources::Embedded(kv),
                    dir,
                })
            }
            BackendKind::Etcd => {
                let (child, kv) = start_etcd(etcd_binary, dir.path()).await?;
                Ok(Backend {
                    kv: Arc::new(kv),
                    resources: Resources::Etcd(child),
                    dir,
                })
            }
        }
    }

    pub fn kv(&self) -> Arc<dyn Kv> {
        self.kv.clone()
    }

    /// Closes the store (stops etcd) and removes its data.
    pub async fn shutdown(self) -> Result<(), BenchError> {
        let Backend { kv, resources, dir } = self;
        drop(kv);
        match resources {
            Resources::Embedded(kv) => kv.close().await,
            Resources::Etcd(mut child) => {
                child.kill().await?;
            }
        }
        dir.close()?;
        Ok(())
    }
}

/// Launches a single-member etcd with its default (production) timers and
/// waits until it answers.
async fn start_etcd(binary: &Path, dir: &Path) -> Result<(Child, EtcdKv), BenchError> {
    let client_url = format!("http://127.0.0.1:{}", free_port()?);
    let peer_url = format!("http://127.0.0.1:{}", free_port()?);
    let log_path = dir.join("etcd.log");
    let log = std::fs::File::create(&log_path)?;
    let mut child = Command::new(binary)
        .arg("--name=bench")
        .arg(format!("--data-dir={}", dir.join("data").display()))
        .arg(format!("--listen-client-urls={client_url}"))
        .arg(format!("--advertise-client-urls={client_url}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg(format!("--initial-cluster=bench={peer_url}"))
        .args(["--logger=zap", "--log-level=warn"])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| BenchError::EtcdStart(format!("cannot run {}: {e}", binary.display())))?;
    let deadline = Instant::now() + ETCD_STARTUP;
    let config = EtcdConfig::new([client_url]);
    loop {
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            return Err(BenchError::EtcdStart(format!(
                "etcd exited with {status}; log:\n{log}"
            )));
        }
        let kv = EtcdKv::connect(config.clone()).await?;
        if kv.health().await.is_ok() {
            return Ok((child, kv));
        }
        if Instant::now() >= deadline {
            return Err(BenchError::EtcdStart(format!(
                "etcd did not answer within {ETCD_STARTUP:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A loopback port that was free a moment ago.
fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
