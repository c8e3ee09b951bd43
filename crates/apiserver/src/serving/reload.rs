//! Certificate rotation without a restart (upstream's dynamic serving
//! certificate and client-CA controllers): the TLS configuration is rebuilt
//! whenever the serving certificate, key or client CA file changes, and new
//! connections use the latest good configuration.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::ServerConfig;
use tokio::sync::watch;

use super::tls::{TlsConfigError, TlsOptions};

/// How often the files are checked (upstream resyncs file content every minute).
pub const DEFAULT_RELOAD_INTERVAL: Duration = Duration::from_secs(60);

/// The TLS configuration [`serve`](super::serve) uses for new connections.
#[derive(Debug, Clone)]
pub enum ServerTls {
    /// One configuration for the server's lifetime.
    Fixed(Arc<ServerConfig>),
    /// The latest configuration published by [`TlsOptions::reloading`].
    Reloading(watch::Receiver<Arc<ServerConfig>>),
}

impl ServerTls {
    /// The configuration for a connection accepted now.
    pub fn current(&self) -> Arc<ServerConfig> {
        match self {
            Self::Fixed(config) => config.clone(),
            Self::Reloading(latest) => latest.borrow().clone(),
        }
    }
}

impl From<Arc<ServerConfig>> for ServerTls {
    fn from(config: Arc<ServerConfig>) -> Self {
        Self::Fixed(config)
    }
}

impl From<watch::Receiver<Arc<ServerConfig>>> for ServerTls {
    fn from(latest: watch::Receiver<Arc<ServerConfig>>) -> Self {
        Self::Reloading(latest)
    }
}

/// A build task that died (panicked or was cancelled).
fn join_error(err: tokio::task::JoinError) -> TlsConfigError {
    TlsConfigError::Reload(err.to_string())
}

impl TlsOptions {
    /// Builds the configuration now, then rebuilds it whenever one of its
    /// files changes (checked every `interval`). A change that does not
    /// build (a key written before its certificate, a bad file) keeps the
    /// previous configuration and is retried at the next check. Checking
    /// stops once every receiver is dropped.
    pub async fn reloading(
        self,
        interval: Duration,
    ) -> Result<watch::Receiver<Arc<ServerConfig>>, TlsConfigError> {
        let options = Arc::new(self);
        let files = options.watched_files();
        let initial = snapshot(&files).await;
        let config = {
            let options = options.clone();
            tokio::task::spawn_blocking(move || options.server_config())
                .await
                .map_err(join_error)??
        };
        let (publish, latest) = watch::channel(config);
        tokio::spawn(watch_files(options, files, initial, publish, interval));
        Ok(latest)
    }

    fn watched_files(&self) -> Vec<PathBuf> {
        let sni = self
            .sni_cert_keys
            .iter()
            .flat_map(|sni| [&sni.cert_file, &sni.key_file]);
        [&self.cert_file, &self.key_file]
            .into_iter()
            .chain(self.client_ca_file.as_ref())
            .chain(sni)
            .cloned()
            .collect()
    }
}

/// Contents of the files (`None` where unreadable).
async fn snapshot(files: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    let mut contents = Vec::with_capacity(files.len());
    for file in files {
        contents.push(tokio::fs::read(file).await.ok());
    }
    contents
}

async fn watch_files(
    options: Arc<TlsOptions>,
    files: Vec<PathBuf>,
    mut last: Vec<Option<Vec<u8>>>,
    publish: watch::Sender<Arc<ServerConfig>>,
    interval: Duration,
) {
    loop {
        tokio::select! {
            () = publish.closed() => return,
            () = tokio::time::sleep(interval) => {}
        }
        let current = snapshot(&files).await;
        if current == last {
            continue;
        }
        let rebuilt = {
            let options = options.clone();
            tokio::task::spawn_blocking(move || options.server_config())
                .await
                .map_err(join_error)
        };
        match rebuilt {
            Ok(Ok(config)) => {
                publish.send_replace(config);
                last = current;
                tracing::info!(files = ?files, "reloaded serving certificates");
            }
            Ok(Err(err)) | Err(err) => {
                tracing::error!(error = %err, "changed serving certificates do not load; keeping the previous ones");
            }
        }
    }
}
