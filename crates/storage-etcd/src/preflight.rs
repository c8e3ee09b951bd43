//! Startup preflight: wait for etcd to answer before serving, like upstream's
//! kube-apiserver, which retries its etcd connection check every second
//! until a deadline instead of failing when etcd starts a little later.

use std::time::Duration;

use storage::Kv;
use tokio::time::Instant;

use crate::config::EtcdConfig;
use crate::error::ConnectError;
use crate::kv::EtcdKv;

/// Pause between attempts.
const RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// Connects to etcd and returns once it answers a health check, retrying
/// about every second until `timeout` has passed. Every failed attempt is
/// logged. Configuration errors (unreadable TLS files, malformed URLs) fail
/// at once.
pub async fn wait_for_etcd(config: EtcdConfig, timeout: Duration) -> Result<EtcdKv, ConnectError> {
    let started = Instant::now();
    let deadline = started + timeout;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let attempt_started = Instant::now();
        // A fresh client per attempt: one that failed to connect may hold
        // on to a dead connection for its dial timeout.
        let mut probe = config.clone();
        probe.dial_timeout = probe.dial_timeout.min(RETRY_INTERVAL);
        probe.health_timeout = probe.health_timeout.min(RETRY_INTERVAL);
        let kv = EtcdKv::connect(probe).await?;
        let error = match kv.health().await {
            Ok(()) => {
                tracing::info!(servers = ?config.servers, attempt, "etcd is reachable");
                return EtcdKv::connect(config).await;
            }
            Err(e) => e,
        };
        let next = attempt_started + RETRY_INTERVAL;
        if next >= deadline {
            return Err(ConnectError::Unavailable {
                servers: config.servers,
                waited: started.elapsed(),
                last_error: error,
            });
        }
        tracing::warn!(
            servers = ?config.servers,
            attempt,
            error = %error,
            "etcd is not reachable yet, retrying"
        );
        tokio::time::sleep_until(next).await;
    }
}
