//! The server under test: the built `kube-apiserver` binary started with a
//! fresh data directory on a free loopback port (optionally on a real etcd
//! started for the run), timed from spawn until `/livez` and `/readyz`
//! answer 200, restarted on the same data when asked, and stopped with its
//! data removed.

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use tempfile::TempDir;
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::client::{Client, Conn, Protocol};
use crate::procfs::{Memory, Process};
use crate::BenchError;

/// Pause between readiness probes.
const POLL: Duration = Duration::from_millis(5);
/// Bytes of a log shown when a process fails.
const LOG_TAIL: usize = 4000;
/// How long a stopped server may take to exit before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// How to start the server.
pub struct Launch<'a> {
    /// The `kube-apiserver` binary.
    pub binary: &'a Path,
    /// Where the temporary data directory is made.
    pub parent: &'a Path,
    /// Start this etcd binary and pass `--etcd-servers` (else the embedded
    /// store).
    pub etcd: Option<&'a Path>,
    /// More server flags.
    pub extra_args: &'a [String],
    /// How long the server may take to become ready.
    pub timeout: Duration,
}

/// What startup took.
#[derive(Debug, Clone, Copy)]
pub struct Startup {
    /// From spawn until `admin.kubeconfig` could be read.
    pub kubeconfig: Duration,
    /// From spawn until `/livez` answered 200.
    pub livez: Duration,
    /// From spawn until `/readyz` answered 200.
    pub readyz: Duration,
    /// Memory once ready.
    pub memory: Memory,
    /// CPU time used until ready.
    pub cpu: Duration,
}

/// A running server; killed (with its etcd) when dropped.
pub struct Server {
    child: Child,
    etcd: Option<Child>,
    pub process: Process,
    pub client: Client,
    /// How it was started, to start it again on the same data.
    spawn: Spawn,
    dir: TempDir,
}

/// The server's command line and where its data and log are.
struct Spawn {
    binary: PathBuf,
    args: Vec<String>,
    data: PathBuf,
    log: PathBuf,
    timeout: Duration,
}

impl Spawn {
    /// Spawns the server (its log appended to) and waits until it is ready.
    async fn run(&self) -> Result<(Child, Process, Client, Startup), BenchError> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut command = Command::new(&self.binary);
        command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        let spawned = Instant::now();
        let mut child = command.spawn().map_err(|e| {
            BenchError::Server(format!("cannot run {}: {e}", self.binary.display()))
        })?;
        let pid = child
            .id()
            .ok_or_else(|| BenchError::Server("the server exited at once".into()))?;
        let process = Process::new(pid);
        let deadline = spawned + self.timeout;
        let kubeconfig = self.data.join("admin.kubeconfig");
        let ready = wait_ready(&mut child, &kubeconfig, spawned, deadline).await;
        let (client, kubeconfig, livez, readyz) = match ready {
            Ok(ready) => ready,
            Err(e) => return Err(with_log(e, &self.log)),
        };
        let startup = Startup {
            kubeconfig,
            livez,
            readyz,
            memory: process.memory().await?,
            cpu: process.cpu().await?,
        };
        Ok((child, process, client, startup))
    }
}

impl Server {
    /// Starts the server and waits until it is ready.
    pub async fn start(launch: &Launch<'_>) -> Result<(Server, Startup), BenchError> {
        let dir = tempfile::Builder::new()
            .prefix("server-bench-")
            .tempdir_in(launch.parent)?;
        let etcd = match launch.etcd {
            Some(binary) => Some(start_etcd(binary, dir.path()).await?),
            None => None,
        };
        let data = dir.path().join("data");
        let mut args = vec![
            format!("--data-dir={}", data.display()),
            format!("--secure-port={}", free_port()?),
            "--bind-address=127.0.0.1".to_string(),
        ];
        if let Some((_, url)) = &etcd {
            args.push(format!("--etcd-servers={url}"));
        }
        args.extend(launch.extra_args.iter().cloned());
        let spawn = Spawn {
            binary: launch.binary.to_path_buf(),
            args,
            data,
            log: dir.path().join("server.log"),
            timeout: launch.timeout,
        };
        let (child, process, client, startup) = spawn.run().await?;
        let server = Server {
            child,
            etcd: etcd.map(|(child, _)| child),
            process,
            client,
            spawn,
            dir,
        };
        Ok((server, startup))
    }

    /// Stops the server as an operator would (SIGTERM, then waits for it to
    /// exit) and starts it again on the same data and port; returns what
    /// the second startup took.
    pub async fn restart(&mut self) -> Result<Startup, BenchError> {
        self.terminate().await?;
        let (child, process, client, startup) = self.spawn.run().await?;
        self.child = child;
        self.process = process;
        self.client = client;
        Ok(startup)
    }

    /// Sends SIGTERM and waits for the exit (killing after a minute).
    async fn terminate(&mut self) -> Result<(), BenchError> {
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: signals our own child, which has not been reaped.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        if tokio::time::timeout(STOP_TIMEOUT, self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await?;
        }
        Ok(())
    }

    /// Fails if the server has exited (showing its log).
    pub fn check_running(&mut self) -> Result<(), BenchError> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(with_log(
                BenchError::Server(format!("the server exited with {status}")),
                &self.spawn.log,
            )),
        }
    }

    /// Stops the server (and etcd) and removes their data.
    pub async fn stop(mut self) -> Result<(), BenchError> {
        self.child.kill().await?;
        if let Some(etcd) = &mut self.etcd {
            etcd.kill().await?;
        }
        self.dir.close()?;
        Ok(())
    }
}

/// Polls until the kubeconfig is readable and `/livez` and `/readyz` answer
/// 200; returns the client and the three times since `spawned`.
async fn wait_ready(
    child: &mut Child,
    kubeconfig: &Path,
    spawned: Instant,
    deadline: Instant,
) -> Result<(Client, Duration, Duration, Duration), BenchError> {
    let mut client = None;
    let mut conn: Option<Conn> = None;
    let mut livez = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Err(BenchError::Server(format!(
                "the server exited with {status} before it was ready"
            )));
        }
        if Instant::now() >= deadline {
            return Err(BenchError::Server(
                "the server was not ready in time".into(),
            ));
        }
        // The file is missing at first and may be half-written when first
        // seen: retry until it parses.
        if client.is_none() {
            client = Client::from_kubeconfig(kubeconfig)
                .await
                .ok()
                .map(|c| (c, spawned.elapsed()));
        }
        let Some((c, kubeconfig_time)) = &client else {
            tokio::time::sleep(POLL).await;
            continue;
        };
        if conn.is_none() {
            conn = c.connect(Protocol::H1).await.ok();
        }
        if let Some(open) = &mut conn {
            let path = if livez.is_none() { "/livez" } else { "/readyz" };
            let request = c
                .target(Protocol::H1, path)?
                .request(Method::GET, "*/*", None)?;
            match open.call(request, StatusCode::OK).await {
                Ok(_) if livez.is_none() => {
                    livez = Some(spawned.elapsed());
                    continue;
                }
                Ok(_) => {
                    let readyz = spawned.elapsed();
                    let livez = livez.unwrap_or(readyz);
                    return Ok((c.clone(), *kubeconfig_time, livez, readyz));
                }
                Err(BenchError::Status { .. }) => {}
                // Not listening yet, or the connection broke: reconnect.
                Err(_) => conn = None,
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Adds the end of a log file to a startup error.
fn with_log(error: BenchError, log: &Path) -> BenchError {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let start = text.len().saturating_sub(LOG_TAIL);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    BenchError::Server(format!(
        "{error}; end of {}:\n{}",
        log.display(),
        &text[start..]
    ))
}

/// Launches a single-member etcd with its default timers and data on disk
/// under `dir` and waits until `/health` answers; returns it and its client
/// URL.
pub async fn start_etcd(binary: &Path, dir: &Path) -> Result<(Child, String), BenchError> {
    let client_port = free_port()?;
    let client_url = format!("http://127.0.0.1:{client_port}");
    let peer_url = format!("http://127.0.0.1:{}", free_port()?);
    let log_path: PathBuf = dir.join("etcd.log");
    let log = std::fs::File::create(&log_path)?;
    let mut child = Command::new(binary)
        .arg("--name=bench")
        .arg(format!("--data-dir={}", dir.join("etcd").display()))
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
        .map_err(|e| BenchError::Server(format!("cannot run {}: {e}", binary.display())))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait()? {
            let e = BenchError::Server(format!("etcd exited with {status}"));
            return Err(with_log(e, &log_path));
        }
        if etcd_healthy(client_port).await {
            return Ok((child, client_url));
        }
        if Instant::now() >= deadline {
            let e = BenchError::Server("etcd did not become healthy in 30s".into());
            return Err(with_log(e, &log_path));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether etcd's plain-HTTP `/health` answers 200.
async fn etcd_healthy(port: u16) -> bool {
    let probe = async {
        let tcp = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await.ok()?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .ok()?;
        tokio::spawn(conn);
        let request = Request::get("/health")
            .header(http::header::HOST, format!("127.0.0.1:{port}"))
            .body(Empty::<Bytes>::new())
            .ok()?;
        let response = sender.send_request(request).await.ok()?;
        Some(response.status() == StatusCode::OK)
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), probe).await,
        Ok(Some(true))
    )
}

/// A loopback port that was free a moment ago.
fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
