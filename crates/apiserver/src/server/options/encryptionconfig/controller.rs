//! Automatic reload of the encryption configuration (upstream's
//! `encryptionconfig/controller`): the file is re-read when its content
//! changes and put in force once its KMS plugins are healthy.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use storage::value::TransformingKv;

use super::health::{start_kms, wait_healthy, KmsProviders};
use super::rules::rules;
use super::{load, EncryptionError, LoadSettings, Loaded};

/// How often an automatically reloaded configuration file is checked.
const RELOAD_INTERVAL: Duration = Duration::from_secs(5);

fn digest(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok().map(|d| Sha256::digest(d).to_vec())
}

/// Re-reads the configuration file whenever its content changes.
pub(super) struct Reloader {
    pub(super) path: PathBuf,
    pub(super) kv: Arc<TransformingKv>,
    pub(super) catalogue: Vec<(String, String, String)>,
    pub(super) prefix: String,
    pub(super) settings: LoadSettings,
    pub(super) providers: Arc<KmsProviders>,
}

impl Reloader {
    async fn read(&self) -> Option<(Option<Vec<u8>>, Result<Loaded, EncryptionError>)> {
        let (path, settings) = (self.path.clone(), self.settings);
        tokio::task::spawn_blocking(move || (digest(&path), load(&path, settings)))
            .await
            .ok()
    }

    pub(super) async fn run(self) {
        let mut current = self.read().await.and_then(|(hash, _)| hash);
        let mut tick = tokio::time::interval(RELOAD_INTERVAL);
        loop {
            tick.tick().await;
            let Some((hash, loaded)) = self.read().await else {
                continue;
            };
            if hash.is_none() || hash == current {
                continue;
            }
            match self.apply(loaded).await {
                Ok(()) => {
                    current = hash;
                    tracing::info!(path = %self.path.display(), "encryption configuration reloaded");
                }
                Err(e) => {
                    tracing::error!(path = %self.path.display(), error = %e, "reloading the encryption configuration failed; keeping the previous one")
                }
            }
        }
    }

    /// Puts a loaded configuration in force once its KMS plugins are
    /// healthy; the old providers stop polling once no request uses them.
    async fn apply(&self, loaded: Result<Loaded, EncryptionError>) -> Result<(), String> {
        let loaded = loaded.map_err(|e| e.to_string())?;
        let timeouts = loaded.kms.iter().map(|p| p.timeout()).sum();
        wait_healthy(&loaded.kms, timeouts).await?;
        start_kms(&loaded.kms).await;
        self.kv
            .set_rules(rules(&loaded.configured, &self.catalogue, &self.prefix));
        self.providers.set(loaded.kms);
        Ok(())
    }
}
