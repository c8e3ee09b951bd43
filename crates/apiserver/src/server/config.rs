//! The generic server's configuration: `Config` holds what the user set;
//! `complete()` derives the rest and returns a `CompletedConfig`, the only
//! thing a server can be built from (upstream's Config → Complete → New).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::discovery::DiscoveryRegistry;
use super::healthz::HealthCheck;
use crate::audit::Auditor;
use crate::authentication::Authentication;
use crate::filters::authorization::{Authorization, AuthorizationMode};
use crate::filters::cors::{AllowedOrigins, CorsError};
use crate::filters::hsts::{Hsts, HstsError};
use crate::flowcontrol::FlowControl;
use crate::metrics::Metrics;

#[derive(Clone)]
pub struct Config {
    /// `--request-timeout`.
    pub request_timeout: Duration,
    /// `--min-request-timeout`.
    pub min_request_timeout: Duration,
    /// `--max-requests-inflight`.
    pub max_requests_inflight: usize,
    /// `--max-mutating-requests-inflight`.
    pub max_mutating_requests_inflight: usize,
    /// `--enable-priority-and-fairness`: API Priority and Fairness limits
    /// concurrency instead of the two max-in-flight budgets.
    pub enable_priority_and_fairness: bool,
    /// `--livez-grace-period`.
    pub livez_grace_period: Duration,
    /// `--shutdown-delay-duration`.
    pub shutdown_delay: Duration,
    /// `--shutdown-send-retry-after`: once the delay passed, keep listening
    /// and answer new requests 429 until in-flight requests drained.
    pub shutdown_send_retry_after: bool,
    /// host:port clients should use, published by `/api`.
    pub external_address: String,
    /// Checks for /healthz, /livez and /readyz beyond ping (e.g. etcd).
    pub health_checks: Vec<Arc<dyn HealthCheck>>,
    /// The authenticator chain (`--anonymous-auth`, client certificates,
    /// token authenticators).
    pub authentication: Arc<Authentication>,
    /// `--authorization-mode`.
    pub authorization_modes: Vec<AuthorizationMode>,
    /// `--audit-policy-file` and the audit backends; None audits nothing.
    pub audit: Option<Arc<Auditor>>,
    /// The `/version` document.
    pub version: Value,
    /// Discovery shared by every server of the chain.
    pub discovery: DiscoveryRegistry,
    /// `--cors-allowed-origins` (regular expressions).
    pub cors_allowed_origins: Vec<String>,
    /// `--strict-transport-security-directives`.
    pub hsts_directives: Vec<String>,
    /// The WatchList feature gate: watches may be streaming lists
    /// (`sendInitialEvents`).
    pub watch_list: bool,
    /// The APIResponseCompression feature gate: responses over 128 KiB are
    /// gzipped for clients that accept it.
    pub response_compression: bool,
    /// `--profiling`: serve `/debug/pprof/` (behind authorization).
    pub enable_profiling: bool,
    /// `--debug-socket-path`: also serve the profiling endpoints on this
    /// unix socket, unprotected.
    pub debug_socket_path: Option<PathBuf>,
}

/// A setting that cannot be turned into a working server.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Cors(#[from] CorsError),
    #[error(transparent)]
    Hsts(#[from] HstsError),
}

impl Config {
    pub fn complete(self) -> Result<CompletedConfig, ConfigError> {
        let metrics = Arc::new(Metrics::new());
        metrics.register_extra(self.discovery.metrics());
        Ok(CompletedConfig(Arc::new(Completed {
            cors: Arc::new(AllowedOrigins::compile(&self.cors_allowed_origins)?),
            hsts: Arc::new(Hsts::new(&self.hsts_directives)?),
            authentication: self.authentication.clone(),
            authorization: Arc::new(Authorization {
                modes: self.authorization_modes.clone(),
            }),
            flow_control: self.enable_priority_and_fairness.then(|| {
                let limit = self.max_requests_inflight + self.max_mutating_requests_inflight;
                FlowControl::new(limit, self.request_timeout, metrics.clone())
            }),
            metrics,
            config: self,
        })))
    }
}

pub struct Completed {
    pub config: Config,
    pub authentication: Arc<Authentication>,
    pub authorization: Arc<Authorization>,
    /// The metrics every server of the chain records into.
    pub metrics: Arc<Metrics>,
    /// API Priority and Fairness, when enabled.
    pub flow_control: Option<Arc<FlowControl>>,
    /// The compiled `cors_allowed_origins`.
    pub cors: Arc<AllowedOrigins>,
    /// The `Strict-Transport-Security` value built from `hsts_directives`.
    pub hsts: Arc<Hsts>,
}

/// A configuration with every derived value filled in; cheap to clone and
/// shared by the servers of the chain.
#[derive(Clone)]
pub struct CompletedConfig(Arc<Completed>);

impl std::ops::Deref for CompletedConfig {
    type Target = Completed;
    fn deref(&self) -> &Completed {
        &self.0
    }
}

impl std::ops::Deref for Completed {
    type Target = Config;
    fn deref(&self) -> &Config {
        &self.config
    }
}
