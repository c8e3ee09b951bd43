//! [`EtcdCluster`]: several real etcd members forming one cluster on free
//! loopback ports, for tests of what several API servers and etcd faults
//! do: a member can be killed (SIGKILL) and started again on its data,
//! paused (SIGSTOP) and resumed (SIGCONT), and the leader found.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use etcd_client::Client;
use storage::Kv;
use tempfile::TempDir;
use tokio::time::Instant;

use super::{
    die_with_parent, free_port, scratch_dir, HarnessError, LAUNCH_ATTEMPTS, STARTUP_TIMEOUT,
};
use crate::{EtcdConfig, EtcdKv};

/// etcd's default raft timers: a lost leader is replaced in 1–2 s.
const HEARTBEAT_MS: u32 = 100;
const ELECTION_MS: u32 = 1000;

struct Member {
    name: String,
    client_url: String,
    peer_url: String,
    data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// A running cluster; every member is killed on drop.
pub struct EtcdCluster {
    members: Vec<Member>,
    initial_cluster: String,
    // Last: removed after the processes are gone.
    _dir: TempDir,
}

impl EtcdCluster {
    /// Starts `size` members and waits until each answers. A member that
    /// exits at once (a port picked as free was taken before it bound it)
    /// makes the whole cluster start again on other ports.
    pub async fn start(size: usize) -> Result<EtcdCluster, HarnessError> {
        let mut last_error = None;
        for _ in 0..LAUNCH_ATTEMPTS {
            match Self::start_once(size).await {
                Ok(cluster) => return Ok(cluster),
                Err(e @ HarnessError::Exited { .. }) => last_error = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or(HarnessError::NotReady { log: String::new() }))
    }

    async fn start_once(size: usize) -> Result<EtcdCluster, HarnessError> {
        let dir = scratch_dir()?;
        let mut members = Vec::with_capacity(size);
        for i in 0..size {
            let name = format!("member{i}");
            members.push(Member {
                client_url: format!("http://127.0.0.1:{}", free_port()?),
                peer_url: format!("http://127.0.0.1:{}", free_port()?),
                data: dir.path().join(&name),
                log: dir.path().join(format!("{name}.log")),
                name,
                child: None,
            });
        }
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = EtcdCluster {
            members,
            initial_cluster,
            _dir: dir,
        };
        for i in 0..size {
            cluster.launch(i, "new")?;
        }
        for i in 0..size {
            cluster.wait_ready(i).await?;
        }
        Ok(cluster)
    }

    /// Every member's client URL, for `--etcd-servers`.
    pub fn client_urls(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// A client configuration naming every member.
    pub fn config(&self) -> EtcdConfig {
        EtcdConfig::new(self.client_urls())
    }

    /// The index of the member that leads now, as the running members
    /// report it.
    pub async fn leader(&self) -> Option<usize> {
        let mut ids = Vec::with_capacity(self.members.len());
        let mut leader = None;
        for member in &self.members {
            let status = match member.child {
                Some(_) => status(&member.client_url).await,
                None => None,
            };
            ids.push(status.map(|(id, _)| id));
            leader = leader.or(status.map(|(_, leader)| leader).filter(|l| *l != 0));
        }
        ids.iter().position(|id| id.is_some() && *id == leader)
    }

    /// Kills member `i` (SIGKILL); [`EtcdCluster::restart`] brings it back.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `i` again on its data after [`EtcdCluster::kill`].
    pub async fn restart(&mut self, i: usize) -> Result<(), HarnessError> {
        self.launch(i, "existing")?;
        self.wait_ready(i).await
    }

    /// Starts every killed member again on its data, all before waiting
    /// for any (none answers until a quorum is back).
    pub async fn restart_all(&mut self) -> Result<(), HarnessError> {
        let killed: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.members[i].child.is_none())
            .collect();
        for &i in &killed {
            self.launch(i, "existing")?;
        }
        for i in killed {
            self.wait_ready(i).await?;
        }
        Ok(())
    }

    /// Stops member `i` without killing it (SIGSTOP): a partitioned member.
    pub fn pause(&self, i: usize) {
        self.signal(i, libc::SIGSTOP);
    }

    /// Resumes a paused member (SIGCONT).
    pub fn resume(&self, i: usize) {
        self.signal(i, libc::SIGCONT);
    }

    fn signal(&self, i: usize, signal: libc::c_int) {
        if let Some(child) = &self.members[i].child {
            let pid = libc::pid_t::try_from(child.id()).unwrap_or(0);
            // SAFETY: sends a signal to our own child process.
            unsafe { libc::kill(pid, signal) };
        }
    }

    fn launch(&mut self, i: usize, state: &str) -> Result<(), HarnessError> {
        let initial_cluster = self.initial_cluster.clone();
        let member = &mut self.members[i];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&member.log)?;
        let mut cmd = Command::new("etcd");
        cmd.arg(format!("--name={}", member.name))
            .arg(format!("--data-dir={}", member.data.display()))
            .arg(format!("--listen-client-urls={}", member.client_url))
            .arg(format!("--advertise-client-urls={}", member.client_url))
            .arg(format!("--listen-peer-urls={}", member.peer_url))
            .arg(format!("--initial-advertise-peer-urls={}", member.peer_url))
            .arg(format!("--initial-cluster={initial_cluster}"))
            .arg(format!("--initial-cluster-state={state}"))
            .arg("--initial-cluster-token=test-cluster")
            .arg(format!("--heartbeat-interval={HEARTBEAT_MS}"))
            .arg(format!("--election-timeout={ELECTION_MS}"))
            .args(["--logger=zap", "--log-level=warn"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        die_with_parent(&mut cmd);
        member.child = Some(cmd.spawn().map_err(HarnessError::Spawn)?);
        Ok(())
    }

    /// Polls member `i` until it answers a read (which needs a leader).
    async fn wait_ready(&mut self, i: usize) -> Result<(), HarnessError> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let mut config = EtcdConfig::new([self.members[i].client_url.clone()]);
        config.dial_timeout = Duration::from_millis(200);
        config.health_timeout = Duration::from_millis(500);
        loop {
            let member = &mut self.members[i];
            if let Some(child) = member.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    member.child = None;
                    let log = std::fs::read_to_string(&member.log).unwrap_or_default();
                    return Err(HarnessError::Exited { status, log });
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
                let log = std::fs::read_to_string(&member.log).unwrap_or_default();
                return Err(HarnessError::NotReady { log });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A member's own id and the leader it knows (0: none).
async fn status(url: &str) -> Option<(u64, u64)> {
    let mut client = Client::connect([url], None).await.ok()?;
    let asked = tokio::time::timeout(Duration::from_secs(2), client.status()).await;
    let status = asked.ok()?.ok()?;
    Some((status.header()?.member_id(), status.leader()))
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            // A paused member must be resumed to die promptly.
            self.resume(i);
            self.kill(i);
        }
    }
}
