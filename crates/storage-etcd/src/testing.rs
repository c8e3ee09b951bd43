//! Test harness (feature `testing`): [`EtcdServer`] runs the real `etcd`
//! binary for one test, on free loopback ports and a throwaway data
//! directory, optionally serving TLS with client-certificate
//! authentication, and kills it when dropped.
//!
//! Startup takes well under a second: a single member with short raft
//! timers, its data under `/dev/shm` when available. etcd is also killed
//! when the test process dies without dropping the server (a test killed
//! for a timeout), so no etcd outlives its test.
//!
//! [`EtcdServer::into_kv`] gives a [`Kv`] that owns its server, for suites
//! that take an `Arc<dyn Kv>`. [`EtcdCluster`] runs several members as one
//! cluster.

mod cluster;

pub use cluster::EtcdCluster;

use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use storage::error::Result as StorageResult;
use storage::{Kv, KvWatchStream, RangeRequest, RangeResponse, TxnOp, TxnResponse};
use tempfile::TempDir;
use tokio::time::Instant;

use crate::{ConnectError, EtcdConfig, EtcdKv};

/// How long etcd may take to answer after being launched.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// Launch attempts when a picked port was taken in the meantime.
const LAUNCH_ATTEMPTS: usize = 5;

/// Why a test etcd could not be started.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("test etcd: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot run `etcd` (is etcd installed and on PATH?): {0}")]
    Spawn(#[source] std::io::Error),
    #[error("test etcd: generating certificates: {0}")]
    Certs(#[from] rcgen::Error),
    #[error("test etcd: {0}")]
    Connect(#[from] ConnectError),
    #[error("test etcd exited with {status}; log:\n{log}")]
    Exited { status: ExitStatus, log: String },
    #[error("test etcd did not answer within {STARTUP_TIMEOUT:?}; log:\n{log}")]
    NotReady { log: String },
}

/// How to run the test etcd.
#[derive(Debug, Clone, Default)]
pub struct EtcdServerOptions {
    /// Serve clients over TLS and require client certificates.
    pub tls: bool,
    /// Listen for clients on this port instead of a free one (to start etcd
    /// at an address a client already points at).
    pub client_port: Option<u16>,
    /// etcd's `--experimental-watch-progress-notify-interval` (default 10m).
    pub progress_notify_interval: Option<Duration>,
    /// etcd's `--quota-backend-bytes` (default 2 GiB).
    pub quota_backend_bytes: Option<u64>,
}

/// Files of the TLS variant; `ca_file` signs the server's certificate, the
/// client certificate is accepted by the server.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub ca_file: PathBuf,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

/// A running etcd, killed on drop.
#[derive(Debug)]
pub struct EtcdServer {
    child: Option<Child>,
    client_url: String,
    tls: Option<TlsFiles>,
    // Last: removed after the process is gone.
    dir: TempDir,
}

impl EtcdServer {
    /// Starts a plain-HTTP etcd on free ports and waits until it answers.
    pub async fn start() -> Result<EtcdServer, HarnessError> {
        Self::start_with(EtcdServerOptions::default()).await
    }

    /// Starts an etcd that serves TLS and requires client certificates.
    pub async fn start_tls() -> Result<EtcdServer, HarnessError> {
        Self::start_with(EtcdServerOptions {
            tls: true,
            ..EtcdServerOptions::default()
        })
        .await
    }

    pub async fn start_with(options: EtcdServerOptions) -> Result<EtcdServer, HarnessError> {
        let mut dir = scratch_dir()?;
        let tls = if options.tls {
            Some(write_certs(dir.path()).await?)
        } else {
            None
        };
        let mut last_error = None;
        for _ in 0..LAUNCH_ATTEMPTS {
            let client_port = match options.client_port {
                Some(port) => port,
                None => free_port()?,
            };
            let scheme = if tls.is_some() { "https" } else { "http" };
            let mut server = EtcdServer {
                child: None,
                client_url: format!("{scheme}://127.0.0.1:{client_port}"),
                tls: tls.clone(),
                dir,
            };
            server.launch(&options)?;
            match server.wait_ready().await {
                Ok(()) => return Ok(server),
                // A port picked as free was taken before etcd bound it: retry
                // on other ports (unless the caller fixed the client port).
                Err(e @ HarnessError::Exited { .. }) if options.client_port.is_none() => {
                    last_error = Some(e);
                    dir = server.take_dir()?;
                }
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or(HarnessError::NotReady { log: String::new() }))
    }

    /// The client URL, for `--etcd-servers`.
    pub fn client_url(&self) -> &str {
        &self.client_url
    }

    /// The TLS files, for the TLS variant.
    pub fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// A client configuration for this server (with the TLS files when TLS).
    pub fn config(&self) -> EtcdConfig {
        let mut config = EtcdConfig::new([self.client_url.clone()]);
        if let Some(tls) = &self.tls {
            config.ca_file = Some(tls.ca_file.clone());
            config.cert_file = Some(tls.cert_file.clone());
            config.key_file = Some(tls.key_file.clone());
        }
        config
    }

    /// A client connected to this server.
    pub async fn kv(&self) -> Result<EtcdKv, HarnessError> {
        Ok(EtcdKv::connect(self.config()).await?)
    }

    /// A client that owns this server: etcd stops when the client is dropped.
    pub async fn into_kv(self) -> Result<TestEtcdKv, HarnessError> {
        Ok(TestEtcdKv {
            kv: self.kv().await?,
            server: self,
        })
    }

    /// Kills etcd now (to test a dead backend); also done on drop.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Errors mean the process is already gone, which is the goal.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn launch(&mut self, options: &EtcdServerOptions) -> Result<(), HarnessError> {
        let peer_url = format!("http://127.0.0.1:{}", free_port()?);
        let data = self.dir.path().join("data");
        if data.exists() {
            std::fs::remove_dir_all(&data)?;
        }
        let log = std::fs::File::create(self.log_path())?;
        let mut cmd = Command::new("etcd");
        cmd.arg("--name=test")
            .arg(format!("--data-dir={}", data.display()))
            .arg(format!("--listen-client-urls={}", self.client_url))
            .arg(format!("--advertise-client-urls={}", self.client_url))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=test={peer_url}"))
            .args(["--heartbeat-interval=10", "--election-timeout=100"])
            .args(["--logger=zap", "--log-level=warn"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some(interval) = options.progress_notify_interval {
            cmd.arg(format!(
                "--experimental-watch-progress-notify-interval={}ms",
                interval.as_millis()
            ));
        }
        if let Some(bytes) = options.quota_backend_bytes {
            cmd.arg(format!("--quota-backend-bytes={bytes}"));
        }
        if let Some(tls) = &self.tls {
            let dir = self.dir.path();
            cmd.arg(format!("--cert-file={}", dir.join("server.crt").display()))
                .arg(format!("--key-file={}", dir.join("server.key").display()))
                .arg(format!("--trusted-ca-file={}", tls.ca_file.display()))
                .arg("--client-cert-auth");
        }
        die_with_parent(&mut cmd);
        self.child = Some(cmd.spawn().map_err(HarnessError::Spawn)?);
        Ok(())
    }

    /// Polls etcd until it answers a read, or fails when it exits.
    async fn wait_ready(&mut self) -> Result<(), HarnessError> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let mut config = self.config();
        config.dial_timeout = Duration::from_millis(200);
        config.health_timeout = Duration::from_millis(500);
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    self.child = None;
                    return Err(HarnessError::Exited {
                        status,
                        log: self.log(),
                    });
                }
            }
            if EtcdKv::connect(config.clone())
                .await?
                .health()
                .await
                .is_ok()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(HarnessError::NotReady { log: self.log() });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Hands the scratch directory to the next launch attempt.
    fn take_dir(mut self) -> Result<TempDir, HarnessError> {
        self.stop();
        let replacement = scratch_dir()?;
        Ok(std::mem::replace(&mut self.dir, replacement))
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An [`EtcdKv`] that owns the etcd it talks to.
#[derive(Debug)]
pub struct TestEtcdKv {
    kv: EtcdKv,
    server: EtcdServer,
}

impl TestEtcdKv {
    pub fn server(&self) -> &EtcdServer {
        &self.server
    }

    pub fn kv(&self) -> &EtcdKv {
        &self.kv
    }
}

#[async_trait]
impl Kv for TestEtcdKv {
    async fn range(&self, req: RangeRequest) -> StorageResult<RangeResponse> {
        self.kv.range(req).await
    }
    async fn txn(&self, key: &str, expected: i64, op: TxnOp) -> StorageResult<TxnResponse> {
        self.kv.txn(key, expected, op).await
    }
    async fn watch(&self, key: &str, prefix: bool, start: i64) -> StorageResult<KvWatchStream> {
        self.kv.watch(key, prefix, start).await
    }
    async fn compact(&self, revision: i64) -> StorageResult<()> {
        self.kv.compact(revision).await
    }
    async fn compacted_revision(&self) -> StorageResult<i64> {
        self.kv.compacted_revision().await
    }
    async fn current_revision(&self) -> StorageResult<i64> {
        self.kv.current_revision().await
    }
    async fn health(&self) -> StorageResult<()> {
        self.kv.health().await
    }
    async fn put_with_ttl(&self, key: &str, value: Bytes, ttl: Duration) -> StorageResult<i64> {
        self.kv.put_with_ttl(key, value, ttl).await
    }
}

/// Makes the launched process die with the thread that launched it: a test
/// process killed before dropping its etcd must not leave etcd behind.
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and only
    // makes one async-signal-safe system call.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A port on 127.0.0.1 that was free a moment ago (bound to port 0, then
/// released).
pub fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// A temporary directory, in memory when `/dev/shm` exists (etcd fsyncs).
fn scratch_dir() -> std::io::Result<TempDir> {
    let shm = Path::new("/dev/shm");
    let mut builder = tempfile::Builder::new();
    builder.prefix("test-etcd-");
    if shm.is_dir() {
        builder.tempdir_in(shm)
    } else {
        builder.tempdir()
    }
}

/// Writes a CA, a server certificate for 127.0.0.1 and a client
/// certificate, all signed by the CA.
async fn write_certs(dir: &Path) -> Result<TlsFiles, HarnessError> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "test-etcd-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;

    let mut server =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?;
    server
        .distinguished_name
        .push(DnType::CommonName, "test-etcd");
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_key = KeyPair::generate()?;
    let server_cert = server.signed_by(&server_key, &ca)?;

    let mut client = CertificateParams::new(Vec::<String>::new())?;
    client
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver-etcd-client");
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = KeyPair::generate()?;
    let client_cert = client.signed_by(&client_key, &ca)?;

    let files = TlsFiles {
        ca_file: dir.join("ca.crt"),
        cert_file: dir.join("client.crt"),
        key_file: dir.join("client.key"),
    };
    tokio::fs::write(&files.ca_file, ca.pem()).await?;
    tokio::fs::write(dir.join("server.crt"), server_cert.pem()).await?;
    tokio::fs::write(dir.join("server.key"), server_key.serialize_pem()).await?;
    tokio::fs::write(&files.cert_file, client_cert.pem()).await?;
    tokio::fs::write(&files.key_file, client_key.serialize_pem()).await?;
    Ok(files)
}
