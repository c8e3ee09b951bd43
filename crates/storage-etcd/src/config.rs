//! How to reach etcd: the `--etcd-*` flags of upstream's kube-apiserver,
//! turned into etcd client options.

use std::path::{Path, PathBuf};
use std::time::Duration;

use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};

use crate::error::ConnectError;

/// etcd's default `--max-request-bytes`; reported as the limit when etcd
/// refuses a value as too large.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// Connection settings for etcd (upstream's `storagebackend.TransportConfig`
/// plus the health check timeout).
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// `--etcd-servers`: client URLs of the etcd members, e.g.
    /// `https://10.0.0.1:2379`. Requests are balanced across them.
    pub servers: Vec<String>,
    /// `--etcd-cafile`: CA bundle that signs the etcd servers' certificates.
    pub ca_file: Option<PathBuf>,
    /// `--etcd-certfile`: client certificate presented to etcd.
    pub cert_file: Option<PathBuf>,
    /// `--etcd-keyfile`: key of the client certificate.
    pub key_file: Option<PathBuf>,
    /// `--etcd-prefix`: the key prefix of the API objects; the health check
    /// reads `<prefix>/health`.
    pub prefix: String,
    /// How long establishing a connection to one member may take.
    pub dial_timeout: Duration,
    /// Interval of HTTP/2 keepalive pings on an idle connection.
    pub keepalive_time: Duration,
    /// How long to wait for a keepalive ping's answer before the connection
    /// is considered dead.
    pub keepalive_timeout: Duration,
    /// Upper bound of one request to etcd (watches excluded).
    pub request_timeout: Duration,
    /// `--etcd-healthcheck-timeout`: bound of the health check's read.
    pub health_timeout: Duration,
    /// etcd's `--max-request-bytes`, reported when a write is refused as too
    /// large.
    pub max_request_bytes: usize,
}

impl Default for EtcdConfig {
    /// Upstream's defaults (etcd3 client factory and kube-apiserver flags).
    fn default() -> Self {
        EtcdConfig {
            servers: Vec::new(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            prefix: "/registry".to_string(),
            dial_timeout: Duration::from_secs(20),
            keepalive_time: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            health_timeout: Duration::from_secs(2),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

impl EtcdConfig {
    /// A configuration for the given `--etcd-servers` with upstream's defaults.
    pub fn new(servers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        EtcdConfig {
            servers: servers.into_iter().map(Into::into).collect(),
            ..EtcdConfig::default()
        }
    }

    /// Builds the client options, reading the TLS files. TLS is used only
    /// when a server URL is `https://`, as upstream's client does.
    pub(crate) async fn connect_options(&self) -> Result<ConnectOptions, ConnectError> {
        if self.servers.is_empty() {
            return Err(ConnectError::NoServers);
        }
        let mut options = ConnectOptions::new()
            .with_connect_timeout(self.dial_timeout)
            .with_keep_alive(self.keepalive_time, self.keepalive_timeout)
            // Idle pings would make etcd drop the connection ("too many
            // pings"); upstream pings only while streams are open.
            .with_keep_alive_while_idle(false);
        if self.servers.iter().any(|s| s.starts_with("https://")) {
            options = options.with_tls(self.tls_options().await?);
        }
        Ok(options)
    }

    async fn tls_options(&self) -> Result<TlsOptions, ConnectError> {
        let mut tls = TlsOptions::new();
        if let Some(ca) = &self.ca_file {
            tls = tls.ca_certificate(Certificate::from_pem(read(ca).await?));
        }
        match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                tls = tls.identity(Identity::from_pem(read(cert).await?, read(key).await?));
            }
            (None, None) => {}
            _ => return Err(ConnectError::IncompleteClientCert),
        }
        Ok(tls)
    }
}

async fn read(path: &Path) -> Result<Vec<u8>, ConnectError> {
    tokio::fs::read(path)
        .await
        .map_err(|source| ConnectError::ReadFile {
            path: path.to_path_buf(),
            source,
        })
}
